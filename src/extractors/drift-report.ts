import type { Logger } from '../core/logger.js';
import { recordDrift } from '../state/drift.js';
import { newUnitId } from '../loaders/applied-units.js';
import type { SyncContext } from './context.js';
import type { DriftTally } from './stream-tally.js';

/**
 * A stream's unknown fields at its end: upserted into `_svcsync_drift` (one statement per
 * field), and a warning for each field not yet warned about in this run. The warning names
 * the field and its JSON type, never a value.
 */
export async function reportDrift(
  ctx: SyncContext,
  at: { organizationId: string; stream: string; seenAt: string },
  drift: DriftTally,
  log: Logger,
): Promise<void> {
  if (drift.size === 0) return;
  const fields = drift.entries();
  const sighting = {
    connection: ctx.connection.name,
    organizationId: at.organizationId,
    stream: at.stream,
    runId: ctx.runId,
    seenAt: at.seenAt,
  };
  // One unit: the occurrences add up, so a retry after a lost reply must not add them twice.
  await ctx.warehouse.transaction((trx) => recordDrift(trx, sighting, fields).then(() => null), undefined, newUnitId());
  const warned = ctx.driftWarned ?? new Set<string>();
  for (const f of fields) {
    const key = `${at.stream}\u0000${f.field}`;
    if (warned.has(key)) continue;
    warned.add(key);
    log.warn(
      { stream: at.stream, field: f.field, type: f.type, occurrences: f.occurrences, drift: true },
      `the API sent field ${f.field} (${f.type}) on stream ${at.stream} that the catalog does not know; ` +
        'it is kept in _raw; see svcsync schema --drift',
    );
  }
}

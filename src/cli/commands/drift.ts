import { migrateToLatest } from '../../loaders/migrate.js';
import type { Warehouse } from '../../loaders/warehouse.js';
import { listDrift } from '../../state/drift.js';
import type { DriftRow } from '../../state/tables.js';

/** One unknown field as `svcsync schema --drift` shows it: where and how often, never a value. */
export interface DriftField {
  connection: string;
  organizationId: string;
  stream: string;
  field: string;
  type: string;
  firstSeen: string;
  lastSeen: string;
  occurrences: number;
}

/** Every field in `_svcsync_drift`, read from the warehouse alone (no API calls). */
export async function collectDrift(warehouse: Warehouse): Promise<DriftField[]> {
  await migrateToLatest(warehouse);
  return (await listDrift(warehouse.db)).map(driftField);
}

function driftField(r: DriftRow): DriftField {
  return {
    connection: r.connection,
    organizationId: r.organization_id,
    stream: r.stream,
    field: r.field,
    type: r.sample_type,
    firstSeen: r.first_seen,
    lastSeen: r.last_seen,
    occurrences: Number(r.occurrences),
  };
}

export function renderDrift(fields: readonly DriftField[]): string {
  if (fields.length === 0) return 'No drift: every field the API sent is one the catalog knows.\n';
  const lines = [
    `${fields.length} field${fields.length === 1 ? '' : 's'} the API sent that the catalog does not know ` +
      '(kept in _raw / _raw_detail; table _svcsync_drift):',
  ];
  let group = '';
  for (const f of fields) {
    const at = `${f.connection} / ${f.organizationId} / ${f.stream}`;
    if (at !== group) {
      lines.push(at);
      group = at;
    }
    lines.push(
      `  ${f.field.padEnd(40)} ${f.type.padEnd(7)} ${String(f.occurrences).padStart(8)} times  ` +
        `first seen ${f.firstSeen}  last seen ${f.lastSeen}`,
    );
  }
  return lines.join('\n') + '\n';
}

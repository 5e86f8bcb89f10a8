import { childStreamsOf } from '../../catalog/index.js';
import { qualifiedName, tableName, type StreamSpec } from '../../catalog/types.js';
import { childrenCycleDays } from '../../config/cycles.js';
import type { Config } from '../../config/schema.js';
import { noteOf, type ShortcutId, type ShortcutNote } from '../../extractors/shortcuts.js';
import type { Warehouse } from '../../loaders/warehouse.js';
import { allVerdicts } from '../../state/shortcut-verdicts.js';
import type { ShortcutRow } from '../../state/tables.js';
import { CompiledQuery } from 'kysely';

/**
 * What a refuted shortcut costs an organization from now on, in requests a day: the long way it
 * reads instead (docs/assumptions.md, "Shortcuts that check themselves"). Pure; the figures come
 * from the warehouse (`refutedShortcuts`).
 */
export interface ShortcutFacts {
  /** Live records of the parent stream. */
  parents: number;
  /** Parent records written a day, over the last week's runs. */
  changedPerDay: number;
  /** The reconcile's children cycle (`sync.reconcile_children_every_days`); 0 or less: every reconcile reads every parent's. */
  cycleDays: number;
  /** Child lists per parent the shortcut concerns. */
  lists: number;
}

export function extraRequestsPerDay(id: ShortcutId, f: ShortcutFacts): number {
  const share = f.cycleDays > 0 ? f.parents / f.cycleDays : f.parents;
  switch (id) {
    // Each changed credit's lists besides its record; the cycle's share reads its lists, not its record.
    case 'embedded_children':
      return Math.round(f.lists * f.changedPerDay + (f.lists - 1) * share);
    // The cycle's share of credits, each by its own list rather than by the list of all refunds.
    case 'all_children_list':
      return Math.round(share);
    // Every parent's list on every (daily) reconcile, not the cycle's share.
    case 'child_changes_touch_parent':
      return Math.round(f.lists * Math.max(0, f.parents - share));
  }
}

/** A refuted shortcut of one organization, with what it now costs. */
export interface RefutedShortcut extends ShortcutNote {
  connection: string;
  organizationId: string;
  extraRequestsPerDay: number;
}

/** Every refuted shortcut the warehouse records, with its cost (for `svcsync status`, the status page and `svcsync plan`). */
export async function refutedShortcuts(config: Config, warehouse: Warehouse, catalog: readonly StreamSpec[]): Promise<RefutedShortcut[]> {
  const rows = (await allVerdicts(warehouse.db)).filter((r) => r.state === 'refuted');
  const out: RefutedShortcut[] = [];
  for (const row of rows) {
    const connection = config.connections.find((c) => c.name === row.connection);
    if (!connection || config.sync.shortcuts[row.shortcut as ShortcutId] !== 'verify') continue;
    const facts = await factsOf(warehouse, catalog, row, childrenCycleDays(config, connection.plan));
    out.push({
      ...noteOf(row),
      connection: row.connection,
      organizationId: row.organization_id,
      extraRequestsPerDay: facts ? extraRequestsPerDay(row.shortcut as ShortcutId, facts) : 0,
    });
  }
  return out;
}

async function factsOf(
  warehouse: Warehouse,
  catalog: readonly StreamSpec[],
  row: ShortcutRow,
  cycleDays: number,
): Promise<ShortcutFacts | null> {
  const named = catalog.find((s) => qualifiedName(s) === row.stream);
  if (!named) return null;
  const parent = named.parent ? catalog.find((p) => p.family === named.family && p.name === named.parent!.stream) : named;
  if (!parent) return null;
  const lists = row.shortcut === 'embedded_children' ? childStreamsOf(parent, catalog).length : 1;
  const p = warehouse.sql.param;
  const count = await warehouse.db
    .executeQuery<{ n: number | string }>(
      CompiledQuery.raw(`SELECT COUNT(*) AS n FROM "${tableName(parent)}" WHERE "organization_id" = ${p(1)} AND "_deleted_at" IS NULL`, [
        row.organization_id,
      ]),
    )
    .catch(() => ({ rows: [{ n: 0 }] }));
  return {
    parents: Number(count.rows[0]?.n ?? 0),
    changedPerDay: await changedPerDay(warehouse, row, qualifiedName(parent)),
    cycleDays,
    lists,
  };
}

/** Records of the stream written a day over the last week, its first run (a first sync writes every record) left out. */
async function changedPerDay(warehouse: Warehouse, row: ShortcutRow, stream: string): Promise<number> {
  const p = warehouse.sql.param;
  const runs = await warehouse.db.executeQuery<{ written: number | string | null; started_at: string }>(
    CompiledQuery.raw(
      `SELECT "written", "started_at" FROM "_svcsync_run_streams" WHERE "connection" = ${p(1)} AND "organization_id" = ${p(2)} ` +
        `AND "stream" = ${p(3)} ORDER BY "started_at"`,
      [row.connection, row.organization_id, stream],
    ),
  );
  const since = Date.parse(row.updated_at) - 7 * 86_400_000;
  const week = runs.rows.slice(1).filter((r) => Date.parse(String(r.started_at)) >= since);
  return week.reduce((a, r) => a + Number(r.written ?? 0), 0) / 7;
}

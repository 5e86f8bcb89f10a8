import { createHash } from 'node:crypto';
import { tableDefinitions, type ColumnDef, type TableDef } from './tables.js';
import { isOrganizationList, qualifiedName, type StreamSpec } from './types.js';

/**
 * History tables as a BI user reads them: `{table}_history` holds every version svcsync has seen
 * of the rows of a table whose stream keeps history (`history:` in the configuration). Their
 * names, their columns and what those mean, derived from the table definitions; the statements
 * that make and write them are in src/loaders/derived/history-tables.ts and history-writer.ts.
 */

/** Postgres keeps 63 bytes of a name; a longer one is cut, with a digest so that two never meet. */
export function pgName(name: string): string {
  if (name.length <= 63) return name;
  return `${name.slice(0, 54)}_${createHash('sha1').update(name).digest('hex').slice(0, 8)}`;
}

export function historyTableName(table: string): string {
  return `${table}_history`;
}

/** The Postgres function giving the table as it stood at an instant. */
export function asOfFunctionName(table: string): string {
  return pgName(`svcsync_as_of_${table}`);
}

/** A history table: its table's definition turned into versions. */
export interface HistoryTableDef extends TableDef {
  /** The table whose rows' versions it holds. */
  table: string;
  /** The record's change field its versions begin at; null for a child table (its record's) and a stream without one. */
  changeColumn: string | null;
}

/** The change field a stream's versions begin at: its cursor, when that is a timestamp column of its table. */
export function changeField(stream: StreamSpec, top: TableDef): string | null {
  const field = stream.cursor?.field;
  return top.columns.find((c) => c.name === field && c.type === 'timestamp')?.name ?? null;
}

function validFrom(change: string | null, child: boolean): string {
  let begins =
    change === null ? 'the instant svcsync wrote it (this stream has no change field)' : `the record’s ${change}, its change time`;
  if (child) begins = 'when the version of its record began (a child row’s versions open and close with its record’s)';
  return `When this version began: ${begins}. A deletion begins at _deleted_at, the instant svcsync found the record gone.`;
}

/**
 * The columns a history table adds to its table's, described for it; without arguments, described
 * for every history table at once.
 */
export function addedHistoryColumns(change?: string | null, child = false): ColumnDef[] {
  const from =
    change === undefined
      ? 'When this version began: the record’s change time where its stream has one, else the instant svcsync wrote it; ' +
        'a child row’s with its record’s. A deletion begins at _deleted_at, the instant svcsync found the record gone.'
      : validFrom(change, child);
  return [
    { name: '_valid_from', type: 'timestamp', nullable: false, source: '(svcsync)', description: from },
    {
      name: '_valid_to',
      type: 'timestamp',
      nullable: true,
      source: '(svcsync)',
      description: 'When the next version began; null while this version is current.',
    },
    {
      name: '_change',
      type: 'text',
      nullable: false,
      source: '(svcsync)',
      description:
        'What began this version: created (first seen), updated, deleted (the row as it was last, from its deletion on; ' +
        'left out of the table as it stood) or restored (seen again after a deletion).',
    },
  ];
}

/** A column of the table as its history holds it: the value in that version; only the key is never null. */
function versionColumn(c: ColumnDef, key: ReadonlySet<string>): ColumnDef {
  const column: ColumnDef = { ...c, nullable: c.nullable && !key.has(c.name) };
  if (c.name === '_run_id') column.description = 'The run that wrote this version (joins _svcsync_runs.run_id).';
  return column;
}

function historyDef(def: TableDef, change: string | null): HistoryTableDef {
  const key = new Set(def.primaryKey);
  const child = def.parentTable !== undefined;
  const primaryKey = [...def.primaryKey, '_valid_from'];
  return {
    name: historyTableName(def.name),
    table: def.name,
    stream: def.stream,
    ...(child ? { parentTable: historyTableName(def.parentTable!) } : {}),
    primaryKey,
    changeColumn: child ? null : change,
    columns: [...def.columns.map((c) => versionColumn(c, key)), ...addedHistoryColumns(change, child)],
    description:
      `Every version svcsync has seen of the rows of ${def.name}, kept while history is on for ${def.stream} ` +
      '(history: in the configuration): one row per version, the row as it was from _valid_from until _valid_to ' +
      '(null while current), _change saying what began it. The table as it stood at an instant t: _valid_from <= t ' +
      `AND (_valid_to IS NULL OR _valid_to > t) AND _change <> 'deleted'; on Postgres ${asOfFunctionName(def.name)}(t). ` +
      `Keyed by ${primaryKey.join(', ')}. The rows of ${def.name}: ${def.description}`,
  };
}

/**
 * The history table of every table that may keep history (all but the organization lists'), in
 * table order. Each exists in a warehouse only once history has been on for its stream.
 */
export function historyTableDefinitions(
  catalog: readonly StreamSpec[],
  defs: readonly TableDef[] = tableDefinitions(catalog),
): HistoryTableDef[] {
  const out: HistoryTableDef[] = [];
  for (const stream of catalog) {
    if (isOrganizationList(stream)) continue;
    const mine = defs.filter((d) => d.stream === qualifiedName(stream));
    const top = mine.find((d) => d.parentTable === undefined);
    if (!top) continue;
    const change = changeField(stream, top);
    for (const d of mine) out.push(historyDef(d, change));
  }
  return out;
}

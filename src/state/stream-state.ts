import { stateDb, type StreamStateRow } from './tables.js';
import { CompiledQuery } from 'kysely';
import type { AnyDb } from '../loaders/db.js';

/** Which stream of which organization, reached through which connection. */
export interface StreamKey {
  connection: string;
  organizationId: string;
  /** Qualified stream name, `family.name`. */
  stream: string;
}

/**
 * A pass is one walk through a stream's pages. It is saved after every page, in the same
 * transaction as the page's rows, so a run killed anywhere resumes it (re-reading at most
 * the page that was in flight).
 */
export type PassKind = 'incremental' | 'backfill' | 'reconcile' | 'full';

export interface PassState {
  kind: PassKind;
  startedAt: string;
  nextPage: number;
  /** Records changed before this instant end an incremental or `--since` pass on a sorted list. */
  floor: string | null;
  /** The newest change seen so far in this pass. */
  maxChanged: string | null;
  /** The server did not keep the order it was asked for; this pass reads every page. */
  unsorted: boolean;
  records: number;
  /** Every parent's child lists are queued, not only the changed parents' (see `planPage`). */
  children: boolean;
}

export interface StreamState {
  cursor: string | null;
  pass: PassState | null;
  row: StreamStateRow | null;
}

export async function loadStreamState(db: AnyDb, key: StreamKey): Promise<StreamState> {
  const row = await stateDb(db)
    .selectFrom('_svcsync_streams')
    .selectAll()
    .where('connection', '=', key.connection)
    .where('organization_id', '=', key.organizationId)
    .where('stream', '=', key.stream)
    .executeTakeFirst();
  if (!row) return { cursor: null, pass: null, row: null };
  const pass: PassState | null =
    row.pass_kind && row.pass_started_at
      ? {
          kind: row.pass_kind as PassKind,
          startedAt: row.pass_started_at,
          nextPage: Number(row.pass_next_page ?? 1),
          floor: row.pass_floor,
          maxChanged: row.pass_max_changed,
          unsorted: Number(row.pass_unsorted ?? 0) === 1,
          records: Number(row.pass_records ?? 0),
          // A pass saved before the column existed queued every parent's children unless incremental.
          children: row.pass_children === null ? row.pass_kind !== 'incremental' : Number(row.pass_children) === 1,
        }
      : null;
  return { cursor: row.cursor, pass, row };
}

/** Upserts the given columns of a stream's state row. */
export async function saveStreamState(
  db: AnyDb,
  key: StreamKey,
  values: Partial<Omit<StreamStateRow, 'connection' | 'organization_id' | 'stream'>>,
  now: string,
): Promise<void> {
  await db.executeQuery(saveStreamStateQuery(db, key, values, now));
}

/**
 * The text of the state upsert by dialect and set of columns. Every page of every pass saves its
 * position, and building the statement through kysely cost about as much as running it; the
 * text depends only on the columns, so it is built once and only the parameters each time.
 */
const upsertTexts = new WeakMap<object, Map<string, string | null>>();

type StateValues = Partial<Omit<StreamStateRow, 'connection' | 'organization_id' | 'stream'>>;

function compileUpsert(db: AnyDb, key: StreamKey, row: StateValues): CompiledQuery {
  return stateDb(db)
    .insertInto('_svcsync_streams')
    .values({ connection: key.connection, organization_id: key.organizationId, stream: key.stream, ...row })
    .onConflict((oc) => oc.columns(['connection', 'organization_id', 'stream']).doUpdateSet(row))
    .compile();
}

/**
 * The upsert's text when its parameters are the key, the row's values, then the row's values
 * again, as kysely orders them today; null when not (then every statement is compiled).
 * Checked once per dialect and columns by compiling a row of distinct markers.
 */
function upsertText(db: AnyDb, columns: readonly string[]): string | null {
  const markers = columns.map((c) => `\u0000${c}`);
  const markedRow = Object.fromEntries(columns.map((c, i) => [c, markers[i]])) as StateValues;
  const probe = compileUpsert(db, { connection: '\u0000c', organizationId: '\u0000o', stream: '\u0000s' }, markedRow);
  const expected = ['\u0000c', '\u0000o', '\u0000s', ...markers, ...markers];
  const same = probe.parameters.length === expected.length && probe.parameters.every((v, i) => v === expected[i]);
  return same ? probe.sql : null;
}

/** The statement of `saveStreamState`, compiled for `db`'s dialect, to run in a batch. */
export function saveStreamStateQuery(db: AnyDb, key: StreamKey, values: StateValues, now: string): CompiledQuery {
  const row: StateValues = { ...values, updated_at: now };
  const rowValues: unknown[] = Object.values(row);
  // kysely leaves out a column whose value is undefined: the text would not be the columns'.
  if (rowValues.includes(undefined)) return compileUpsert(db, key, row);
  const adapter = db.getExecutor().adapter;
  let texts = upsertTexts.get(adapter);
  if (!texts) upsertTexts.set(adapter, (texts = new Map<string, string | null>()));
  const columns = Object.keys(row);
  const columnsKey = columns.join(',');
  let text = texts.get(columnsKey);
  if (text === undefined) texts.set(columnsKey, (text = upsertText(db, columns)));
  if (text === null) return compileUpsert(db, key, row);
  return CompiledQuery.raw(text, [key.connection, key.organizationId, key.stream, ...rowValues, ...rowValues]);
}

export function passColumns(pass: PassState | null): Partial<StreamStateRow> {
  if (!pass) {
    return {
      pass_kind: null,
      pass_started_at: null,
      pass_next_page: null,
      pass_floor: null,
      pass_max_changed: null,
      pass_unsorted: null,
      pass_records: null,
      pass_children: null,
    };
  }
  return {
    pass_kind: pass.kind,
    pass_started_at: pass.startedAt,
    pass_next_page: pass.nextPage,
    pass_floor: pass.floor,
    pass_max_changed: pass.maxChanged,
    pass_unsorted: pass.unsorted ? 1 : 0,
    pass_records: pass.records,
    pass_children: pass.children ? 1 : 0,
  };
}

export async function listStreamStates(db: AnyDb, connection?: string): Promise<StreamStateRow[]> {
  let q = stateDb(db).selectFrom('_svcsync_streams').selectAll();
  if (connection) q = q.where('connection', '=', connection);
  return q.orderBy('connection').orderBy('organization_id').orderBy('stream').execute();
}

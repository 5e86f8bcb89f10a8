/**
 * Issue 14's yardstick: the leanest loader a user could write by hand for list streams, run
 * against the same sandbox process and records as svcsync's `list-*` scenarios. Per stream and
 * organization: pages 10 at a time, `JSON.parse`, and per page one transaction that upserts
 * the page's rows. Pages come through svcsync's own HTTP client (`httpGet`, node:http with a
 * keep-alive agent), so svcsync ÷ bare compares loaders, not HTTP clients (the token, once, by
 * `fetch`, as svcsync asks for it too). Two shapes (BareSpec.shape):
 * - narrow: per record its id, three scalar columns and the raw JSON, in `bare_<family>_<stream>`.
 * - same-rows: the tables and rows svcsync writes, so svcsync ÷ bare measures svcsync's overhead
 *   and not the extra data: every catalog column (JSON text for objects, arrays and json columns),
 *   the raw JSON, and a table per child array (`..__<field>`, grandchildren `..__<field>__<field>`)
 *   keyed by the parent's id and the element's position. Nothing converted beyond what a driver
 *   needs to bind the value.
 * A third shape, read-only, fetches and parses the same pages and writes nothing (the floor of a
 * re-sync that reads every page); its row counts are the records it received.
 * SQLite: one prepared `INSERT ... ON CONFLICT` per row (better-sqlite3). Postgres: one
 * multi-row upsert per table per page, pages committed side by side over a pool of 4 connections
 * (svcsync writes over a pool too); every column text, raw text or jsonb (BareSpec.rawType).
 * No tricks svcsync could not use; none of svcsync's work (exact ids, instants, hashes, state,
 * retries, limits) either. Usage: node dist/bench/bare-child.js '<BareSpec JSON>'
 */
import { setMaxListeners } from 'node:events';
import Database from 'better-sqlite3';
import pg from 'pg';
import { CATALOG } from '../src/catalog/index.js';
import { qualifiedName, type ChildSpec, type ColumnSpec, type StreamSpec } from '../src/catalog/types.js';
import { buildFamilyRequest } from '../src/api/families.js';
import { httpGet } from '../src/api/http-get.js';
import type { BareResult, BareSpec } from './protocol.js';

const PAGES_AT_ONCE = 10;
/** An integer of 16 or more digits as a JSON value (after a colon or in an array). */
const BIG_INTEGER = /([:[,]\s*)(-?\d{16,})(?=\s*[,}\]])/g;
/** Bind parameters Postgres allows in one statement. */
const PG_MAX_PARAMETERS = 65_535;
/** What `Response.text()` does with a body: UTF-8, a byte-order mark dropped, bad bytes replaced. */
const utf8 = new TextDecoder();

type Dialect = BareSpec['dialect'];
type Json = Record<string, unknown>;

interface Table {
  name: string;
  columns: string[];
  key: string[];
  /** Postgres type of a column named raw (every other column is text). */
  rawType?: 'text' | 'jsonb';
}

interface Writer {
  prepare(table: Table): void;
  /** One transaction: upsert every row of every batch (values in the table's column order). */
  page(batches: ReadonlyArray<{ table: Table; rows: unknown[][] }>): Promise<void>;
  count(table: string): Promise<number>;
  close(): Promise<void>;
}

function upsertTail(table: Table): string {
  const updates = table.columns
    .filter((c) => !table.key.includes(c))
    .map((c) => `"${c}" = excluded."${c}"`)
    .join(', ');
  return `ON CONFLICT (${table.key.join(', ')}) DO UPDATE SET ${updates}`;
}

function sqliteWriter(path: string): Writer {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  const statements = new Map<string, Database.Statement>();
  return {
    prepare(table) {
      const names = table.columns.map((c) => `"${c}"`).join(', ');
      db.exec(`CREATE TABLE IF NOT EXISTS "${table.name}" (${names}, PRIMARY KEY (${table.key.join(', ')}))`);
      const marks = table.columns.map(() => '?').join(', ');
      statements.set(table.name, db.prepare(`INSERT INTO "${table.name}" (${names}) VALUES (${marks}) ${upsertTail(table)}`));
    },
    page(batches) {
      db.transaction(() => {
        for (const b of batches) {
          const insert = statements.get(b.table.name)!;
          for (const r of b.rows) insert.run(r);
        }
      })();
      return Promise.resolve();
    },
    count: (table) => Promise.resolve(Number((db.prepare(`SELECT count(*) AS n FROM "${table}"`).get() as { n: number }).n)),
    close: () => Promise.resolve(void db.close()),
  };
}

/** Connections the Postgres loader writes over: pages commit side by side, as svcsync's pool lets it. */
const PG_POOL_SIZE = 4;

function postgresWriter(url: string): Writer {
  const pool = new pg.Pool({ connectionString: url, max: PG_POOL_SIZE });
  const created: string[] = [];
  // The tables exist before the first page writes, whichever connection takes it.
  let tablesReady: Promise<void> | null = null;
  const createTables = async (): Promise<void> => {
    for (const c of created.splice(0)) await pool.query(c);
  };
  const writePage = async (batches: ReadonlyArray<{ table: Table; rows: unknown[][] }>): Promise<void> => {
    await (tablesReady ??= createTables());
    // One connection per page: its BEGIN and COMMIT must not interleave with another page's statements.
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      for (const { table, rows } of batches) {
        const width = table.columns.length;
        const names = table.columns.map((c) => `"${c}"`).join(', ');
        const perStatement = Math.floor(PG_MAX_PARAMETERS / width);
        for (let at = 0; at < rows.length; at += perStatement) {
          const chunk = rows.slice(at, at + perStatement);
          const tuples = chunk.map((_, i) => `(${table.columns.map((__, j) => `$${i * width + j + 1}`).join(', ')})`).join(', ');
          await client.query(`INSERT INTO "${table.name}" (${names}) VALUES ${tuples} ${upsertTail(table)}`, chunk.flat());
        }
      }
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  };
  return {
    prepare(table) {
      const columns = table.columns.map((c) => `"${c}" ${c === 'raw' ? (table.rawType ?? 'text') : 'text'}`).join(', ');
      created.push(`CREATE TABLE IF NOT EXISTS "${table.name}" (${columns}, PRIMARY KEY (${table.key.join(', ')}))`);
    },
    page: (batches) => writePage(batches),
    async count(table) {
      await (tablesReady ??= createTables());
      const r = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM "${table}"`);
      return Number(r.rows[0]?.n ?? 0);
    },
    close: () => pool.end(),
  };
}

// ---------------------------------------------------------------- narrow

/** A scalar field as text (what a hand-written loader binds), null when absent. */
function scalar(v: unknown): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/** The first three scalar top-level fields the catalog names for the stream, after its id. */
function columnsOf(spec: StreamSpec): string[] {
  const scalar = spec.columns.filter(
    (c) => !c.path && c.name !== spec.primaryKey && ['text', 'integer', 'number', 'timestamp', 'date'].includes(c.type),
  );
  return ['organization_id', 'id', ...scalar.slice(0, 3).map((c) => c.name), 'raw'];
}

// ---------------------------------------------------------------- same rows

interface ChildTable extends Table {
  fields: string[];
  values: ColumnSpec[];
  children: ChildTable[];
}

/** What the stream writes: its table, a record's row of it, and its child tables. */
interface StreamPlan {
  table: Table;
  row(org: string, record: Json): unknown[];
  children: ChildTable[];
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Catalog columns not already among the table's own columns, each name once. */
function valueColumns(specs: readonly ColumnSpec[], own: string[]): ColumnSpec[] {
  const taken = new Set(own);
  const out: ColumnSpec[] = [];
  for (const c of specs) {
    if (taken.has(c.name)) continue;
    taken.add(c.name);
    out.push(c);
  }
  return out;
}

function valueAt(holder: Json, column: ColumnSpec): unknown {
  let v: unknown = holder;
  for (const step of column.path ?? [column.name]) v = isObject(v) ? v[step] : undefined;
  return v;
}

/** What the driver must be handed: better-sqlite3 binds no booleans, and Postgres columns are text. */
function bindable(v: unknown, column: ColumnSpec, dialect: Dialect): unknown {
  if (v === undefined || v === null) return null;
  if (column.type === 'json' || (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean')) return JSON.stringify(v);
  if (typeof v === 'string') return v;
  if (dialect === 'postgres') return String(v);
  return typeof v === 'boolean' ? Number(v) : v;
}

function childTables(children: readonly ChildSpec[], parent: string, depth: number): ChildTable[] {
  // Keys carry the record's id and each ancestor element's position; one ancestor is all the catalog has.
  if (depth > 2 && children.length) throw new Error(`${parent}: child arrays nested deeper than grandchildren`);
  const key = ['organization_id', 'parent_id', ...(depth === 2 ? ['parent_position'] : []), '_position'];
  return children.map((c) => {
    const values = valueColumns(c.columns, key);
    const name = `${parent}__${c.field}`;
    return {
      name,
      columns: [...key, ...values.map((v) => v.name)],
      key,
      fields: [c.field, ...(c.aliases ?? [])],
      values,
      children: childTables(c.children ?? [], name, depth + 1),
    };
  });
}

/** The array a child table reads; a lone object is a one-element array, as svcsync reads it. */
function elementsOf(holder: Json, fields: string[]): unknown[] {
  const values = fields.map((f) => holder[f]);
  const array = values.find(Array.isArray);
  if (array) return array;
  const lone = values.find(isObject);
  return lone ? [lone] : [];
}

/** Appends the rows of `holder`'s child arrays (and theirs) to `out`; `key` is the parent's part of their key. */
function childRows(tables: ChildTable[], holder: Json, key: unknown[], dialect: Dialect, out: Map<Table, unknown[][]>): void {
  for (const t of tables) {
    elementsOf(holder, t.fields).forEach((element, i) => {
      if (!isObject(element)) return;
      let rows = out.get(t);
      if (!rows) out.set(t, (rows = []));
      rows.push([...key, i, ...t.values.map((c) => bindable(valueAt(element, c), c, dialect))]);
      childRows(t.children, element, [...key, i], dialect, out);
    });
  }
}

function planOf(s: StreamSpec, spec: BareSpec): StreamPlan {
  const name = `bare_${s.family}_${s.name}`;
  const rawType = spec.rawType ?? 'text';
  if (spec.shape === 'narrow') {
    const columns = columnsOf(s);
    return {
      table: { name, columns, key: ['organization_id', 'id'], rawType },
      row: (org, r) => [org, String(r[s.primaryKey]), ...columns.slice(2, -1).map((c) => scalar(r[c])), JSON.stringify(r)],
      children: [],
    };
  }
  const values = valueColumns(s.columns, ['organization_id', 'id', s.primaryKey, 'raw']);
  return {
    table: { name, columns: ['organization_id', 'id', ...values.map((c) => c.name), 'raw'], key: ['organization_id', 'id'], rawType },
    row: (org, r) => [org, String(r[s.primaryKey]), ...values.map((c) => bindable(valueAt(r, c), c, spec.dialect)), JSON.stringify(r)],
    children: childTables(s.children, name, 1),
  };
}

function allTables(plan: StreamPlan): Table[] {
  const walk = (ts: ChildTable[]): Table[] => ts.flatMap((t) => [t, ...walk(t.children)]);
  return [plan.table, ...walk(plan.children)];
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '{}') as BareSpec;
  let peakRss = process.memoryUsage.rss();
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 50);
  const form = new URLSearchParams({ grant_type: 'refresh_token', ...spec.credentials });
  const tokenAnswer = await fetch(`${spec.sandboxUrl}/oauth/v2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form.toString(),
  });
  const token = (await tokenAnswer.json()) as { access_token: string; api_domain?: string };
  const apiBase = token.api_domain ?? spec.sandboxUrl;
  const readOnly = spec.shape === 'read-only';
  const writeTo = spec.dialect === 'sqlite' ? sqliteWriter : postgresWriter;
  const writer = readOnly ? null : writeTo(spec.warehouse);
  const streams = spec.streams.map((q) => CATALOG.find((s) => qualifiedName(s) === q)!);
  const plans = new Map(streams.map((s) => [s, planOf(s, spec)]));
  if (writer) for (const plan of plans.values()) allTables(plan).forEach((t) => writer.prepare(t));
  // httpGet wants a signal; nothing aborts this one (the driver bounds the process), and every
  // request in flight listens on it, more than EventTarget's default of 10 before it warns.
  const run = new AbortController();
  setMaxListeners(0, run.signal);
  const received = new Map<StreamSpec, number>();
  let requests = 0;
  let records = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const getPage = async (s: StreamSpec, org: string, page: number): Promise<{ rows: Json[]; more: boolean }> => {
    const built = buildFamilyRequest(apiBase, {
      family: s.family,
      organizationId: org,
      path: s.path,
      query: { ...s.query, page, per_page: spec.perPage },
    });
    requests++;
    const headers = { ...built.headers, Authorization: `Svc-oauthtoken ${token.access_token}` };
    const res = await httpGet(built.url, { method: 'GET', headers, signal: run.signal });
    if (res.status !== 200) throw new Error(`${built.display}: HTTP ${res.status}`);
    // Ids past 2^53 come as bare JSON numbers for some organizations: quoted first, or
    // JSON.parse would collapse them (even the leanest loader must keep ids).
    const text = utf8.decode(await res.arrayBuffer());
    const body = JSON.parse(text.replace(BIG_INTEGER, '$1"$2"')) as Record<string, unknown>;
    const key = s.recordsKey.find((k) => Array.isArray(body[k])) ?? s.recordsKey[0]!;
    const rows = (body[key] as Json[] | undefined) ?? [];
    const more = (body['page_context'] as { has_more_page?: boolean } | undefined)?.has_more_page === true;
    return { rows, more };
  };
  // Organizations load side by side, as svcsync's organization_concurrency does.
  await Promise.all(
    spec.organizations.map(async (org) => {
      for (const s of streams) {
        const plan = plans.get(s)!;
        for (let first = 1; ; first += PAGES_AT_ONCE) {
          const pages = await Promise.all(Array.from({ length: PAGES_AT_ONCE }, (_, i) => getPage(s, org, first + i)));
          let more = true;
          for (const p of pages) {
            records += p.rows.length;
            if (!writer) received.set(s, (received.get(s) ?? 0) + p.rows.length);
            else if (p.rows.length > 0) {
              const batches = new Map<Table, unknown[][]>([[plan.table, p.rows.map((r) => plan.row(org, r))]]);
              for (const r of p.rows) childRows(plan.children, r, [org, String(r[s.primaryKey])], spec.dialect, batches);
              await writer.page([...batches].map(([table, rows]) => ({ table, rows })));
            }
            if (!p.more) {
              more = false;
              break;
            }
          }
          if (!more) break;
        }
      }
    }),
  );
  const elapsedMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const tableRows: Record<string, number> = {};
  for (const s of streams)
    tableRows[`${s.family}_${s.name}`] = writer ? await writer.count(`bare_${s.family}_${s.name}`) : (received.get(s) ?? 0);
  await writer?.close();
  clearInterval(sampler);
  const result: BareResult = {
    type: 'bare',
    elapsedMs,
    records,
    requests,
    cpuUserMs: cpu.user / 1000,
    cpuSystemMs: cpu.system / 1000,
    peakRssMb: peakRss / 1024 / 1024,
    tableRows,
  };
  process.send?.(result);
}

main().catch((err: unknown) => {
  process.send?.({ type: 'bare', error: err instanceof Error ? err.message : String(err) });
  process.exitCode = 1;
});

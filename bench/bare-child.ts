/**
 * Issue 14's yardstick: the leanest loader a user could write by hand for list streams, run
 * against the same sandbox process and records as svcsync's `list-*` scenarios. Per stream and
 * organization: pages 10 at a time, `JSON.parse`, and per page one transaction that upserts
 * every record: its id, three scalar columns and the raw JSON. SQLite: one prepared
 * `INSERT ... ON CONFLICT` per record (better-sqlite3). Postgres: one multi-row upsert per page.
 * No tricks svcsync could not use; none of svcsync's work (exact ids, instants, hashes, state,
 * retries, limits) either. Usage: node dist/bench/bare-child.js '<BareSpec JSON>'
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { CATALOG } from '../src/catalog/index.js';
import { qualifiedName, type StreamSpec } from '../src/catalog/types.js';
import { buildFamilyRequest } from '../src/api/families.js';
import type { BareResult, BareSpec } from './protocol.js';

const PAGES_AT_ONCE = 10;
/** An integer of 16 or more digits as a JSON value (after a colon or in an array). */
const BIG_INTEGER = /([:[,]\s*)(-?\d{16,})(?=\s*[,}\]])/g;

interface Writer {
  prepare(table: string, columns: string[]): void;
  /** One transaction: upsert every row (values in `columns` order). */
  page(table: string, columns: string[], rows: unknown[][]): Promise<void>;
  count(table: string): Promise<number>;
  close(): Promise<void>;
}

function sqliteWriter(path: string): Writer {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  const statements = new Map<string, Database.Statement>();
  return {
    prepare(table, columns) {
      db.exec(`CREATE TABLE IF NOT EXISTS "${table}" (${columns.map((c) => `"${c}"`).join(', ')}, PRIMARY KEY (organization_id, id))`);
      const names = columns.map((c) => `"${c}"`).join(', ');
      const updates = columns
        .slice(2)
        .map((c) => `"${c}" = excluded."${c}"`)
        .join(', ');
      statements.set(
        table,
        db.prepare(
          `INSERT INTO "${table}" (${names}) VALUES (${columns.map(() => '?').join(', ')}) ` +
            `ON CONFLICT (organization_id, id) DO UPDATE SET ${updates}`,
        ),
      );
    },
    page(table, _columns, rows) {
      const insert = statements.get(table)!;
      db.transaction(() => {
        for (const r of rows) insert.run(r);
      })();
      return Promise.resolve();
    },
    count: (table) => Promise.resolve(Number((db.prepare(`SELECT count(*) AS n FROM "${table}"`).get() as { n: number }).n)),
    close: () => Promise.resolve(void db.close()),
  };
}

async function postgresWriter(url: string): Promise<Writer> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const created: string[] = [];
  return {
    prepare(table, columns) {
      created.push(
        `CREATE TABLE IF NOT EXISTS "${table}" (${columns.map((c) => `"${c}" text`).join(', ')}, PRIMARY KEY (organization_id, id))`,
      );
    },
    async page(table, columns, rows) {
      for (const c of created.splice(0)) await client.query(c);
      const names = columns.map((c) => `"${c}"`).join(', ');
      const updates = columns
        .slice(2)
        .map((c) => `"${c}" = excluded."${c}"`)
        .join(', ');
      const tuples = rows.map((_, i) => `(${columns.map((__, j) => `$${i * columns.length + j + 1}`).join(', ')})`).join(', ');
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO "${table}" (${names}) VALUES ${tuples} ON CONFLICT (organization_id, id) DO UPDATE SET ${updates}`,
        rows.flat(),
      );
      await client.query('COMMIT');
    },
    async count(table) {
      const r = await client.query<{ n: string }>(`SELECT count(*) AS n FROM "${table}"`);
      return Number(r.rows[0]?.n ?? 0);
    },
    close: () => client.end(),
  };
}

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
  const writer = spec.dialect === 'sqlite' ? sqliteWriter(spec.warehouse) : await postgresWriter(spec.warehouse);
  const streams = spec.streams.map((q) => CATALOG.find((s) => qualifiedName(s) === q)!);
  for (const s of streams) writer.prepare(`bare_${s.family}_${s.name}`, columnsOf(s));
  let requests = 0;
  let records = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const getPage = async (s: StreamSpec, org: string, page: number): Promise<{ rows: Array<Record<string, unknown>>; more: boolean }> => {
    const built = buildFamilyRequest(apiBase, {
      family: s.family,
      organizationId: org,
      path: s.path,
      query: { ...s.query, page, per_page: spec.perPage },
    });
    requests++;
    const res = await fetch(built.url, { headers: { ...built.headers, Authorization: `Svc-oauthtoken ${token.access_token}` } });
    if (res.status !== 200) throw new Error(`${built.display}: HTTP ${res.status}`);
    // Ids past 2^53 come as bare JSON numbers for some organizations: quoted first, or
    // JSON.parse would collapse them (even the leanest loader must keep ids).
    const body = JSON.parse((await res.text()).replace(BIG_INTEGER, '$1"$2"')) as Record<string, unknown>;
    const key = s.recordsKey.find((k) => Array.isArray(body[k])) ?? s.recordsKey[0]!;
    const rows = (body[key] as Array<Record<string, unknown>> | undefined) ?? [];
    const more = (body['page_context'] as { has_more_page?: boolean } | undefined)?.has_more_page === true;
    return { rows, more };
  };
  // Organizations load side by side, as svcsync's organization_concurrency does.
  await Promise.all(
    spec.organizations.map(async (org) => {
      for (const s of streams) {
        const table = `bare_${s.family}_${s.name}`;
        const columns = columnsOf(s);
        for (let first = 1; ; first += PAGES_AT_ONCE) {
          const pages = await Promise.all(Array.from({ length: PAGES_AT_ONCE }, (_, i) => getPage(s, org, first + i)));
          let more = true;
          for (const p of pages) {
            if (p.rows.length > 0) {
              const rows = p.rows.map((r) => [
                org,
                String(r[s.primaryKey]),
                ...columns.slice(2, -1).map((c) => scalar(r[c])),
                JSON.stringify(r),
              ]);
              await writer.page(table, columns, rows);
              records += rows.length;
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
  for (const s of streams) tableRows[`${s.family}_${s.name}`] = await writer.count(`bare_${s.family}_${s.name}`);
  await writer.close();
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

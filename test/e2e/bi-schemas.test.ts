import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { historyTableDefinitions } from '../../src/catalog/history.js';
import { CATALOG, tableDefinitions } from '../../src/catalog/index.js';
import { main } from '../../src/cli/main.js';
import { asOfFunctionName, historyPlan, historyTables } from '../../src/loaders/derived/history-tables.js';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import { DIALECTS, PG_BASE_URL, warehouseInSchemas } from '../helpers/dialects.js';
import { expectExit, startE2E, type E2E } from '../helpers/e2e.js';

/**
 * A Postgres warehouse as docs/bi.md sets one up for BI tools: the tables in a schema of their own
 * (`warehouse.schema`), the views in another (`warehouse.views_schema`), `history: all`, and the
 * read-only role of `svcsync migrate --create-readonly-role`, made before the first sync. A BI
 * login's search_path holds neither schema: everything it is shown must work from there.
 */

/** Runs the CLI in this process; returns the exit code and what it wrote. */
async function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => ((stdout += String(chunk)), true));
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((stderr += String(chunk)), true));
  try {
    const code = await main(['node', 'svcsync', '--log-level', 'silent', ...args]);
    return { code, stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

const HISTORY_TABLES = historyTables(historyPlan(CATALOG, 'all')).map((t) => t.table);

describe('schema and views_schema apart, history: all, read from a session whose search_path holds neither (Postgres)', () => {
  const tw = warehouseInSchemas();
  const { tables, views } = tw.schemas;
  const role = `svcsync_ro_${randomBytes(5).toString('hex')}`;
  let e: E2E;
  let client: pg.Client;
  let dir: string;
  let config: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svcsync-bi-'));
    config = join(dir, 'svcsync.yaml');
    writeFileSync(
      config,
      [
        'warehouse:',
        `  url: ${JSON.stringify(PG_BASE_URL)}`,
        `  schema: ${tables}`,
        `  views_schema: ${views}`,
        'history: all',
        'connections:',
        '  - name: acme',
        '    client_id: x',
        '    client_secret: y',
        '    refresh_token: z',
      ].join('\n') + '\n',
    );
    const made = await runCli(['-c', config, 'migrate', '--create-readonly-role', role]);
    expect(made.code, made.stderr).toBe(0);
    e = await startE2E('postgres', { scale: 6, organizations: 1 }, { connection: { history: 'all' } }, { target: tw });
    expectExit(await e.sync('reconcile'), 0);
    e.sandbox.advanceClock(10 * 60_000);
    e.sandbox.mutate({ modify: 2, create: 1, delete: 1, streams: ['inventory.sales_orders', 'invoice.projects', 'billing.plans'] });
    e.sandbox.advanceClock(10 * 60_000);
    expectExit(await e.sync('reconcile'), 0);
    client = new pg.Client({ connectionString: PG_BASE_URL });
    await client.connect();
    await client.query('SET search_path = public');
  }, 300_000);

  afterAll(async () => {
    if (client) {
      await client.query('RESET ROLE').catch(() => undefined);
      await client.query(`DROP OWNED BY "${role}"`).catch(() => undefined);
      await client.query(`DROP ROLE IF EXISTS "${role}"`).catch(() => undefined);
      await client.end();
    }
    await e?.close();
  });

  /** `text` as the warehouse's owner, or as the read-only role; rolled back either way. */
  async function read(as: 'owner' | 'role', text: string): Promise<Array<Record<string, unknown>>> {
    await client.query('BEGIN');
    try {
      if (as === 'role') await client.query(`SET LOCAL ROLE "${role}"`);
      return (await client.query<Record<string, unknown>>(text)).rows;
    } finally {
      await client.query('ROLLBACK');
    }
  }

  it('the session sees neither schema on its search_path', async () => {
    const [row] = await read('role', 'SELECT current_schemas(false) AS path');
    expect(row!['path']).not.toContain(tables);
    expect(row!['path']).not.toContain(views);
  });

  it('every table that keeps history has its as-of function in the tables\u2019 schema', async () => {
    const r = await client.query<{ name: string }>(
      `SELECT proname AS name FROM pg_proc WHERE pronamespace = $1::regnamespace AND proname LIKE 'svcsync\\_as\\_of\\_%' ORDER BY 1`,
      [tables],
    );
    expect(r.rows.map((x) => x.name)).toEqual(HISTORY_TABLES.map(asOfFunctionName).sort());
  });

  it.each(['owner', 'role'] as const)(
    'as the %s, each as-of function gives the live rows of its table now, and none before the first sync',
    async (as) => {
      let rows = 0;
      for (const table of HISTORY_TABLES) {
        const fn = `"${tables}"."${asOfFunctionName(table)}"`;
        const [now] = await read(as, `SELECT COUNT(*) AS n FROM ${fn}('infinity')`);
        const [live] = await read(as, `SELECT COUNT(*) AS n FROM "${tables}"."${table}" WHERE "_deleted_at" IS NULL`);
        expect(Number(now!['n']), `${fn}('infinity') against ${table}`).toBe(Number(live!['n']));
        const [before] = await read(as, `SELECT COUNT(*) AS n FROM ${fn}('2000-01-01T00:00:00Z')`);
        expect(Number(before!['n']), `${fn} in 2000`).toBe(0);
        rows += Number(now!['n']);
      }
      expect(rows).toBeGreaterThan(100);
    },
  );

  it('a function an older svcsync made, naming its history table without the schema, is replaced at the next run start', async () => {
    const fn = asOfFunctionName('billing_plans');
    const [found] = await e.query<{ body: string }>(
      `SELECT prosrc AS body FROM pg_proc WHERE pronamespace = '"${tables}"'::regnamespace AND proname = '${fn}'`,
    );
    const old = found!.body.replaceAll(`"${tables}".`, '');
    expect(old).toContain('FROM "billing_plans_history" AS h');
    // svcsync's own session: its search_path is the tables' schema.
    await e.query(`CREATE OR REPLACE FUNCTION "${fn}"(at timestamptz) RETURNS SETOF "billing_plans" LANGUAGE sql STABLE AS $f$${old}$f$`);
    await expect(read('role', `SELECT COUNT(*) FROM "${tables}"."${fn}"('infinity')`)).rejects.toThrow(
      /billing_plans_history.*does not exist/,
    );
    expectExit(await e.sync(), 0);
    const [plans] = await read('role', `SELECT COUNT(*) AS n FROM "${tables}"."${fn}"('infinity')`);
    expect(Number(plans!['n'])).toBeGreaterThan(0);
  });

  it('the data dictionary lists every history table, and comments describe them, their columns and their as-of functions', async () => {
    const listed = await read('role', `SELECT table_name FROM "${tables}"."_svcsync_tables" WHERE kind = 'history' ORDER BY table_name`);
    expect(listed.map((r) => r['table_name'])).toEqual(HISTORY_TABLES.map((t) => `${t}_history`).sort());
    const orders = historyTableDefinitions(CATALOG).find((d) => d.table === 'inventory_sales_orders')!;
    const history = `"${tables}"."inventory_sales_orders_history"`;
    const [t] = await read('role', `SELECT obj_description('${history}'::regclass, 'pg_class') AS c`);
    expect(t!['c']).toBe(orders.description);
    const [c] = await read(
      'role',
      `SELECT col_description('${history}'::regclass, a.attnum) AS c FROM pg_attribute a
       WHERE a.attrelid = '${history}'::regclass AND a.attname = '_change'`,
    );
    expect(c!['c']).toMatch(/^What began this version/);
    const described = await read(
      'role',
      `SELECT proname AS name, obj_description(oid, 'pg_proc') AS c FROM pg_proc WHERE pronamespace = '"${tables}"'::regnamespace
       AND proname LIKE 'svcsync\\_as\\_of\\_%'`,
    );
    expect(described).toHaveLength(HISTORY_TABLES.length);
    for (const f of described) expect(f['c'], String(f['name'])).toMatch(/^The rows of \w+ as they stood at the instant given/);
  });

  it('svcsync schema --dbt lists the history tables it holds, and each freshness query runs as the role from there', async () => {
    const file = join(dir, 'sources.yml');
    const r = await runCli(['-c', config, 'schema', '--dbt', file]);
    expect(r.code, r.stderr).toBe(0);
    const doc = parse(readFileSync(file, 'utf8')) as {
      sources: Array<{ name: string; schema: string; tables: Array<{ name: string; config: { loaded_at_query: string } }> }>;
    };
    const [own, shown] = doc.sources;
    expect([own!.schema, shown!.schema]).toEqual([tables, views]);
    const history = own!.tables.filter((t) => t.name.endsWith('_history')).map((t) => t.name);
    expect(history).toEqual(HISTORY_TABLES.map((t) => `${t}_history`));
    for (const t of [...own!.tables, ...shown!.tables]) {
      const [row] = await read('role', `with source_query as (${t.config.loaded_at_query}) select (select * from source_query) as at`);
      expect(row!['at'], t.name).toBeInstanceOf(Date);
    }
  });

  it('as the role, the views read the tables across the schemas, and writing is refused', async () => {
    const [orders] = await read('role', `SELECT COUNT(*) AS n FROM "${views}"."inventory_sales_orders_live"`);
    expect(Number(orders!['n'])).toBeGreaterThan(0);
    await expect(read('role', `DELETE FROM "${tables}"."inventory_sales_orders_history"`)).rejects.toThrow(/permission denied/);
  });
});

interface DictionaryRow {
  table_name: string;
  kind: string;
  stream: string;
  parent_table: string | null;
  description: string;
}

describe.each(DIALECTS)('history tables in the data dictionary on %s', (dialect) => {
  let e: E2E;
  const named = historyTableDefinitions(CATALOG).filter((d) => d.stream === 'inventory.sales_orders');

  async function dictionary(): Promise<DictionaryRow[]> {
    return e.query<DictionaryRow>(
      `SELECT table_name, kind, stream, parent_table, description FROM _svcsync_tables WHERE kind = 'history' ORDER BY table_name`,
    );
  }

  beforeAll(async () => {
    e = await startE2E(dialect, { scale: 4, organizations: 1 }, { connection: { history: ['inventory.sales_orders'] } });
  }, 120_000);
  afterAll(async () => e?.close());

  it('lists none before history made its tables; after the first run with it on, exactly those, described', async () => {
    await migrateToLatest(e.warehouse);
    expect(await dictionary()).toEqual([]);
    expectExit(await e.sync(), 0);
    expect(named.map((d) => d.name)).toEqual(['inventory_sales_orders_history', ...named.slice(1).map((d) => d.name)]);
    expect(named.length).toBeGreaterThan(3);
    expect(await dictionary()).toEqual(
      named
        .map((d) => ({
          table_name: d.name,
          kind: 'history',
          stream: d.stream,
          parent_table: d.parentTable ?? null,
          description: d.description,
        }))
        .sort((a, b) => a.table_name.localeCompare(b.table_name)),
    );
    const [orders] = await dictionary();
    expect(orders!.description).toContain('_valid_from <= t AND (_valid_to IS NULL OR _valid_to > t)');
    expect((await migrateToLatest(e.warehouse)).derived).toBe('current');
  });

  it('lists each history table’s columns: its table’s, pointing where they do, then _valid_from, _valid_to and _change', async () => {
    const rows = await e.query<{ column_name: string; description: string | null; references_table: string | null; nullable: number }>(
      `SELECT column_name, description, references_table, nullable FROM _svcsync_columns
       WHERE table_name = 'inventory_sales_orders_history' ORDER BY position`,
    );
    const table = tableDefinitions(CATALOG).find((d) => d.name === 'inventory_sales_orders')!;
    expect(rows.map((r) => r.column_name)).toEqual([...table.columns.map((c) => c.name), '_valid_from', '_valid_to', '_change']);
    const by = new Map(rows.map((r) => [r.column_name, r]));
    expect(by.get('customer_id')!.references_table).toBe('inventory_contacts');
    expect(by.get('_valid_from')!.description).toContain('last_modified_time');
    expect(by.get('_valid_to')!.description).toMatch(/null while this version is current/);
    expect(by.get('_change')!.description).toMatch(/created.*updated.*deleted.*restored/);
    expect(by.get('_run_id')!.description).toMatch(/wrote this version/);
    expect(Number(by.get('_valid_to')!.nullable)).toBe(1);
    expect(Number(by.get('_change')!.nullable)).toBe(0);
  });
});

import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CATALOG } from '../../src/catalog/index.js';
import { main } from '../../src/cli/main.js';
import { asOfFunctionName, historyPlan, historyTables } from '../../src/loaders/derived/history-tables.js';
import { PG_BASE_URL, warehouseInSchemas } from '../helpers/dialects.js';
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

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcsync-bi-'));
    const config = join(dir, 'svcsync.yaml');
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
    e = await startE2E('postgres', { scale: 6, organizations: 1 }, { connection: { history: 'all' } }, tw);
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

  it('as the role, the views read the tables across the schemas, and writing is refused', async () => {
    const [orders] = await read('role', `SELECT COUNT(*) AS n FROM "${views}"."inventory_sales_orders_live"`);
    expect(Number(orders!['n'])).toBeGreaterThan(0);
    await expect(read('role', `DELETE FROM "${tables}"."inventory_sales_orders_history"`)).rejects.toThrow(/permission denied/);
  });
});

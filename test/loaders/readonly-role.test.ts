import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompiledQuery } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { ConfigError } from '../../src/core/errors.js';
import { CATALOG } from '../../src/catalog/index.js';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import { quoteIdent, readonlyRoleStatements, validateRoleName } from '../../src/loaders/readonly-role.js';
import type { Warehouse } from '../../src/loaders/warehouse.js';
import { migratedWarehouse, type TestWarehouse } from '../helpers/dialects.js';

describe('readonlyRoleStatements', () => {
  it.each([
    {
      name: 'a new role',
      plan: { role: 'bi_reader', schema: 'public', owner: 'svcsync', exists: false },
      expected: [
        'CREATE ROLE "bi_reader" NOLOGIN',
        'GRANT USAGE ON SCHEMA "public" TO "bi_reader"',
        'GRANT SELECT ON ALL TABLES IN SCHEMA "public" TO "bi_reader"',
        'ALTER DEFAULT PRIVILEGES FOR ROLE "svcsync" IN SCHEMA "public" GRANT SELECT ON TABLES TO "bi_reader"',
      ],
    },
    {
      name: 'an existing role: grants only',
      plan: { role: 'bi_reader', schema: 'warehouse', owner: 'svcsync', exists: true },
      expected: [
        'GRANT USAGE ON SCHEMA "warehouse" TO "bi_reader"',
        'GRANT SELECT ON ALL TABLES IN SCHEMA "warehouse" TO "bi_reader"',
        'ALTER DEFAULT PRIVILEGES FOR ROLE "svcsync" IN SCHEMA "warehouse" GRANT SELECT ON TABLES TO "bi_reader"',
      ],
    },
    {
      name: 'schema and owner names from the server are quoted whatever they hold',
      plan: { role: '_r1', schema: 'My "BI" Schema', owner: 'Svc-User', exists: false },
      expected: [
        'CREATE ROLE "_r1" NOLOGIN',
        'GRANT USAGE ON SCHEMA "My ""BI"" Schema" TO "_r1"',
        'GRANT SELECT ON ALL TABLES IN SCHEMA "My ""BI"" Schema" TO "_r1"',
        'ALTER DEFAULT PRIVILEGES FOR ROLE "Svc-User" IN SCHEMA "My ""BI"" Schema" GRANT SELECT ON TABLES TO "_r1"',
      ],
    },
  ])('$name', ({ plan, expected }) => {
    expect(readonlyRoleStatements(plan)).toEqual(expected);
  });

  it.each(['reader', '_x', 'a'.repeat(63), 'metabase_ro_2'])('accepts %j', (name) => {
    expect(validateRoleName(name)).toBe(name);
  });

  it.each([
    '',
    'Reader',
    '1reader',
    'a'.repeat(64),
    'bi-reader',
    'bi reader',
    'x"; DROP TABLE t; --',
    'public',
    'pg_monitor',
    'current_user',
  ])('refuses %j with a ConfigError naming the flag', (name) => {
    expect(() => validateRoleName(name)).toThrow(ConfigError);
    expect(() => validateRoleName(name)).toThrow(/--create-readonly-role/);
    expect(() => readonlyRoleStatements({ role: name, schema: 's', owner: 'o', exists: false })).toThrow(ConfigError);
  });

  it('quoteIdent doubles quotes', () => {
    expect(quoteIdent('a"b')).toBe('"a""b"');
  });
});

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

function configFile(warehouse: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'svcsync-role-'));
  const path = join(dir, 'svcsync.yaml');
  writeFileSync(
    path,
    [
      `warehouse: ${JSON.stringify(warehouse)}`,
      'connections:',
      '  - name: acme',
      '    client_id: x',
      '    client_secret: y',
      '    refresh_token: z',
      '    plan: free',
    ].join('\n') + '\n',
  );
  return path;
}

describe('svcsync migrate --create-readonly-role', () => {
  it('on SQLite: a configuration error that says how to open the file read-only', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcsync-role-'));
    const r = await runCli(['-c', configFile(`sqlite:${join(dir, 'w.db')}`), 'migrate', '--create-readonly-role', 'bi_reader']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('SQLite, which has no roles');
    expect(r.stderr).toContain('?mode=ro');
    expect(r.stderr).toContain('sqlite3 -readonly');
  });

  it('an invalid name: a configuration error naming the flag, before anything is opened', async () => {
    const r = await runCli(['-c', configFile('postgres://nobody@127.0.0.1:1/none'), 'migrate', '--create-readonly-role', 'Bad-Name']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--create-readonly-role "Bad-Name" is not a valid role name');
  });
});

describe('the read-only role on Postgres', () => {
  // Roles are cluster-wide: a name of this run's own, dropped at the end.
  const role = `svcsync_ro_${randomBytes(5).toString('hex')}`;
  let tw: TestWarehouse;
  let wh: Warehouse;
  let client: pg.Client;
  let schema: string;

  beforeAll(async () => {
    tw = await migratedWarehouse('postgres');
    wh = await tw.open();
    await migrateToLatest(wh);
    schema = decodeURIComponent(tw.url).replace(/^.*search_path=/, '');
    client = new pg.Client({ connectionString: tw.url });
    await client.connect();
  }, 60_000);

  afterAll(async () => {
    if (client) {
      await client.query('RESET ROLE').catch(() => undefined);
      await client.query(`DROP OWNED BY "${role}"`).catch(() => undefined);
      await client.query(`DROP ROLE IF EXISTS "${role}"`).catch(() => undefined);
      await client.end();
    }
    await wh?.close();
    await tw?.drop();
  });

  /** Runs `text` as the role, in a transaction rolled back afterwards; the error's message, or null. */
  async function asRole(text: string): Promise<{ error: string | null; rows: unknown[] }> {
    await client.query('BEGIN');
    try {
      await client.query(`SET LOCAL ROLE "${role}"`);
      const result = await client.query(text);
      return { error: null, rows: result.rows };
    } catch (error) {
      return { error: (error as Error).message, rows: [] };
    } finally {
      await client.query('ROLLBACK');
    }
  }

  it('creates a NOLOGIN role through the CLI, prints its grants and the CREATE USER hint; a second run re-applies them', async () => {
    const config = configFile(tw.url);
    const first = await runCli(['-c', config, 'migrate', '--create-readonly-role', role]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain(`read-only role ${role} (created) on schema ${schema}`);
    expect(first.stdout).toContain(`GRANT SELECT ON ALL TABLES IN SCHEMA "${schema}" TO "${role}"`);
    expect(first.stdout).toContain(`CREATE USER metabase LOGIN PASSWORD '...' IN ROLE ${role}`);
    const { rows } = await client.query<{ rolcanlogin: boolean; rolsuper: boolean; rolcreaterole: boolean }>(
      'SELECT rolcanlogin, rolsuper, rolcreaterole FROM pg_roles WHERE rolname = $1',
      [role],
    );
    expect(rows).toEqual([{ rolcanlogin: false, rolsuper: false, rolcreaterole: false }]);
    const again = await runCli(['-c', config, 'migrate', '--create-readonly-role', role]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(`read-only role ${role} (exists; grants re-applied)`);
    expect(again.stdout).not.toContain('CREATE ROLE');
  });

  it('may read tables, views and svcsync’s own tables', async () => {
    for (const text of [
      'SELECT COUNT(*) FROM inventory_sales_orders',
      'SELECT COUNT(*) FROM report_sales_order_lines',
      'SELECT COUNT(*) FROM inventory_contacts_live',
      'SELECT COUNT(*) FROM _svcsync_columns',
      'SELECT COUNT(*) FROM _svcsync_runs',
    ]) {
      const r = await asRole(text);
      expect(r.error, text).toBeNull();
      expect(r.rows, text).toHaveLength(1);
    }
  });

  it.each([
    `INSERT INTO _svcsync_usage (organization_id, day, count, updated_at) VALUES ('1', '2026-11-22', 1, '2026-11-22T00:00:00Z')`,
    `UPDATE inventory_sales_orders SET status = 'void'`,
    'DELETE FROM inventory_contacts',
    'TRUNCATE invoice_tasks',
    'CREATE TABLE mine (x int)',
    'CREATE VIEW mine AS SELECT 1 AS x',
    'DROP VIEW report_unbilled_hours',
    'ALTER TABLE billing_plans ADD COLUMN x int',
  ])('may not: %s', async (text) => {
    const r = await asRole(text);
    expect(r.error).toMatch(/permission denied|must be (the )?owner/);
  });

  it('reads what a later migration creates (default privileges), without running the command again', async () => {
    await wh.db.executeQuery(CompiledQuery.raw('CREATE TABLE later_table (id text PRIMARY KEY)'));
    await wh.db.executeQuery(CompiledQuery.raw(`INSERT INTO later_table VALUES ('a')`));
    await wh.db.executeQuery(CompiledQuery.raw('CREATE VIEW later_view AS SELECT id FROM later_table'));
    expect((await asRole('SELECT id FROM later_table')).rows).toEqual([{ id: 'a' }]);
    expect((await asRole('SELECT id FROM later_view')).rows).toEqual([{ id: 'a' }]);
    expect((await asRole(`INSERT INTO later_table VALUES ('b')`)).error).toMatch(/permission denied/);
  });

  it('reads svcsync’s views after an upgrade creates them again', async () => {
    const described = CATALOG.map((s) => ({ ...s, description: `${s.description} (described anew)` }));
    expect((await migrateToLatest(wh, { catalog: described })).derived).toBe('applied');
    for (const view of ['report_sales_order_lines', 'inventory_contacts_live']) {
      const read = await asRole(`SELECT COUNT(*) AS n FROM ${view}`);
      expect(read.error, view).toBeNull();
      expect(read.rows, view).toHaveLength(1);
    }
    expect((await asRole('SELECT description FROM _svcsync_tables WHERE table_name = $$billing_plans$$')).rows).toEqual([
      { description: expect.stringContaining('(described anew)') as unknown },
    ]);
  });
});

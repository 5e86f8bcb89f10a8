import { existsSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import { stateDb } from '../../src/state/tables.js';
import { DIALECTS, freshWarehouse, migratedWarehouse, PG_BASE_URL } from '../helpers/dialects.js';

const dir = mkdtempSync(join(tmpdir(), 'svcsync-plan-'));

/** Runs the command line in this process: its exit code, stdout and stderr. */
async function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  });
  try {
    const code = await main(['node', 'svcsync', '--log-level', 'silent', ...args]);
    return { code, stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

let files = 0;
/** A configuration file: the warehouse (a URL, or the lines of its object) and one connection. */
function config(warehouse: string | string[], connection: string[] = []): string {
  const path = join(dir, `svcsync-${files++}.yaml`);
  const lines = typeof warehouse === 'string' ? [`warehouse: "${warehouse}"`] : ['warehouse:', ...warehouse.map((l) => `  ${l}`)];
  const conn = ['  - name: acme', '    client_id: x', '    client_secret: y', '    refresh_token: z', '    plan: free', ...connection];
  writeFileSync(path, [...lines, 'connections:', ...conn, ''].join('\n'));
  return path;
}

/** A Postgres schema of this run that nothing has made (the run's teardown drops what a test made by mistake). */
const unmadeSchema = (tag: string): string => `t_${process.env['SVCSYNC_TEST_RUN'] ?? 'x'}_${process.pid}_${tag}_${Date.now()}`;

async function pgQuery<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<R[]> {
  const c = new pg.Client({ connectionString: PG_BASE_URL });
  await c.connect();
  try {
    return (await c.query<R>(text, values)).rows;
  } finally {
    await c.end();
  }
}

const relationsIn = async (schema: string): Promise<number> =>
  Number(
    (
      await pgQuery<{ n: string }>(
        'SELECT COUNT(*) AS n FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = $1',
        [schema],
      )
    )[0]!.n,
  );

describe('svcsync plan reads the warehouse and changes nothing in it', () => {
  it('SQLite: a path with no file (nor folder) yet is planned for, and neither is created', async () => {
    const folder = join(dir, 'not-yet');
    const path = config(`sqlite:${join(folder, 'warehouse.db')}`);
    for (const args of [['plan'], ['plan', '--fit'], ['plan', '--json']]) {
      const r = await run([...args, '--config', path]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/reference organization|"reference": true/);
    }
    expect(existsSync(folder)).toBe(false);
  });

  it('SQLite: an empty file stays empty (no tables, no write-ahead log)', async () => {
    const file = join(dir, 'empty.db');
    writeFileSync(file, '');
    const r = await run(['plan', '--config', config(`sqlite:${file}`)]);
    expect(r.code, r.stderr).toBe(0);
    expect(statSync(file).size).toBe(0);
    expect(existsSync(`${file}-wal`)).toBe(false);
  });

  it('Postgres: a schema that does not exist yet is planned for, and not made', async () => {
    const schema = unmadeSchema('plan');
    const r = await run(['plan', '--config', config([`url: ${PG_BASE_URL}`, `schema: ${schema}`, `views_schema: ${schema}_views`])]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/reference organization/);
    const made = await pgQuery('SELECT nspname FROM pg_namespace WHERE nspname IN ($1, $2)', [schema, `${schema}_views`]);
    expect(made).toEqual([]);
  });

  it('Postgres: an empty schema stays empty', async () => {
    const tw = await freshWarehouse('postgres');
    const schema = /search_path=([^&\s]+)/.exec(decodeURIComponent(tw.url))![1]!;
    const r = await run(['plan', '--config', config(tw.url)]);
    expect(r.code, r.stderr).toBe(0);
    expect(await relationsIn(schema)).toBe(0);
  });

  describe.each(DIALECTS)('on %s', (dialect) => {
    it('a synced warehouse is read: its organizations are planned, not a reference one', async () => {
      const tw = await migratedWarehouse(dialect);
      const w = await tw.open();
      try {
        await migrateToLatest(w);
        await stateDb(w.db)
          .insertInto('_svcsync_organizations')
          .values({
            connection: 'acme',
            family: 'books',
            organization_id: '777001',
            name: 'Acme',
            is_active: 1,
            time_zone: null,
            discovered_at: '2026-11-20T08:00:00.000Z',
          })
          .execute();
      } finally {
        await w.close();
      }
      const r = await run(['plan', '--config', config(tw.url)]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('acme / 777001 — busiest quota day');
      expect(r.stdout).not.toContain('reference organization');
    });

    it('a warehouse an older svcsync wrote is not migrated: exit 2, saying to run svcsync migrate', async () => {
      const tw = await migratedWarehouse(dialect);
      const w = await tw.open();
      let last: string;
      try {
        await migrateToLatest(w);
        const names = await w.db.selectFrom('_svcsync_migrations').select('name').orderBy('name', 'desc').execute();
        last = String(names[0]!['name']);
        await w.db.deleteFrom('_svcsync_migrations').where('name', '=', last).execute();
      } finally {
        await w.close();
      }
      const r = await run(['plan', '--config', config(tw.url)]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('written by an older svcsync');
      expect(r.stderr).toContain('`svcsync migrate`');
      const again = await tw.open();
      try {
        const names = await again.db.selectFrom('_svcsync_migrations').select('name').where('name', '=', last).execute();
        expect(names).toEqual([]);
      } finally {
        await again.close();
      }
    });
  });
});

describe('svcsync plan for an unlimited daily quota and organizations not synced yet', () => {
  const unlimited = (): string =>
    config(`sqlite:${join(dir, 'unlimited', 'w.db')}`, [
      '    limits: { per_minute: 1000000, per_day: 1000000000, concurrency: 64 }',
      "    organizations: ['613597055', '624140304', '633235862']",
    ]);

  it('says unlimited, never the budget figure nor the plan it does not keep to', async () => {
    const plan = await run(['plan', '--config', unlimited()]);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('requests planned; the daily quota is unlimited');
    expect(plan.stdout).not.toMatch(/900000000|899\d{6}/);
    const fit = await run(['plan', '--fit', '--config', unlimited()]);
    expect(fit.code, fit.stderr).toBe(0);
    expect(fit.stdout).toContain('acme (unlimited daily quota: limits.per_day 1000000000):');
    expect(fit.stdout).not.toContain('(free plan)');
    expect(fit.stdout).not.toMatch(/900000000|899\d{6}/);
  });

  it('prints the organizations planned alike once, naming each; no line twice', async () => {
    const lines = (text: string): string[] => text.split('\n').filter((l) => l.trim() && !l.startsWith('#'));
    const plan = await run(['plan', '--config', unlimited()]);
    expect(plan.stdout).toMatch(/^acme \/ 613597055, 624140304, 633235862 \(not synced yet\) — busiest quota day /);
    expect(new Set(lines(plan.stdout)).size).toBe(lines(plan.stdout).length);
    const fit = await run(['plan', '--fit', '--config', unlimited()]);
    const named = lines(fit.stdout).filter((l) => l.includes('not synced yet') || l.includes('reference organization'));
    expect(named).toEqual([
      expect.stringMatching(/^ {2}organizations 613597055, 624140304, 633235862 \(not synced yet, 50 records a list\): \d+ requests/),
    ]);
    expect(new Set(lines(fit.stdout)).size).toBe(lines(fit.stdout).length);
  });
});

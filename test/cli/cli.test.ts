import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { PG_BASE_URL } from '../helpers/dialects.js';

const BIN = fileURLToPath(new URL('../../bin/svcsync.js', import.meta.url));

function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, SVCSYNC_LOG_LEVEL: 'warn', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('the command line', () => {
  let sandbox: Sandbox;
  let dir: string;
  const write = (name: string, lines: string[]): string => {
    const path = join(dir, name);
    writeFileSync(path, lines.join('\n') + '\n');
    return path;
  };
  const connection = (secret: string): string[] => [
    `warehouse: sqlite:${join(dir, 'w.db')}`,
    'connections:',
    '  - name: acme',
    `    accounts_url: ${sandbox.url}`,
    `    client_id: ${sandbox.credentials.client_id}`,
    `    client_secret: ${secret}`,
    '    refresh_token: ${SVC_REFRESH_TOKEN}',
    '    plan: enterprise',
    '    limits: { per_minute: 100000, per_day: 1000000 }',
  ];
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 3, scale: 4, organizations: 1, unlimited: true });
    dir = mkdtempSync(join(tmpdir(), 'svcsync-cli-'));
  });
  afterAll(async () => sandbox?.stop());

  it('--help lists the commands, each with a line of description', async () => {
    const r = await cli(['--help']);
    expect(r.code).toBe(0);
    for (const c of ['demo', 'sync', 'backfill', 'verify', 'status', 'check', 'auth', 'schema', 'migrate', 'daemon', 'plan', 'sandbox'])
      expect(r.stdout).toMatch(new RegExp(`\\n  ${c}\\b[^\\n]* {2,}\\S`));
  });

  it('a reader that closes the pipe early (`schema | head`) ends the command quietly', async () => {
    const r = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [BIN, 'schema', '--dialect', 'postgres', '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += String(d)));
      // Like head: take the first chunk, then close the pipe.
      child.stdout.once('data', () => child.stdout.destroy());
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stderr }));
    });
    expect(r.stderr).not.toMatch(/EPIPE|Error/);
    expect(r.code).toBe(0);
  });

  it('a bad configuration file exits 2, names the key, and never echoes the secret', async () => {
    const path = write(
      'bad.yaml',
      [...connection('sekret-must-not-show'), '    plan: gold'].filter((l) => !l.includes('plan: enterprise')),
    );
    const r = await cli(['sync', '--config', path], { SVC_REFRESH_TOKEN: sandbox.credentials.refresh_token });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('connections[0].plan: expected one of free, standard');
    expect(r.stderr + r.stdout).not.toContain('sekret-must-not-show');
  });

  it('an unknown --stream is a configuration error naming it', async () => {
    const path = write('ok.yaml', connection(sandbox.credentials.client_secret));
    const r = await cli(['sync', '--config', path, '--stream', 'inventory.salesorderz'], {
      SVC_REFRESH_TOKEN: sandbox.credentials.refresh_token,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('"inventory.salesorderz"');
  });

  it('a wrong client secret exits 3 with what to check, and no secret in the output', async () => {
    const path = write('wrong.yaml', connection('wrong-secret-value-123'));
    const r = await cli(['sync', '--config', path], { SVC_REFRESH_TOKEN: sandbox.credentials.refresh_token });
    expect(r.code).toBe(3);
    expect(r.stdout + r.stderr).toMatch(/invalid_client_secret/);
    expect(r.stdout + r.stderr).toMatch(/whitespace|data center/);
    expect(r.stdout + r.stderr).not.toContain('wrong-secret-value-123');
    expect(r.stdout + r.stderr).not.toContain(sandbox.credentials.refresh_token);
  });

  it('check against an authorization server nobody answers names no scope: the failure is not about scopes', async () => {
    // A port just freed: nothing listens there.
    const closed = await startSandbox({ seed: 3, scale: 1, organizations: 1 });
    const deadUrl = closed.url;
    await closed.stop();
    const path = write('dead.yaml', [
      ...connection(sandbox.credentials.client_secret).map((l) => (l.includes('accounts_url') ? `    accounts_url: ${deadUrl}` : l)),
      'sync: { max_retries: 0 }',
    ]);
    const r = await cli(['check', '--config', path, '--no-streams'], { SVC_REFRESH_TOKEN: sandbox.credentials.refresh_token });
    expect(r.code).not.toBe(0);
    expect(r.stdout).toContain('✗ could not log in: token refresh: POST /oauth/v2/token failed');
    expect(r.stdout).not.toMatch(/scope|login refused/);
  });

  it('auth exchange turns a grant code into a refresh token that works; the used code is refused (exit 3)', async () => {
    const code = sandbox.issueGrantCode();
    const env = { SVC_CLIENT_ID: sandbox.credentials.client_id, SVC_CLIENT_SECRET: sandbox.credentials.client_secret };
    const redirect = ['--redirect-uri', sandbox.credentials.redirect_uri];
    const r = await cli(
      ['auth', 'exchange', '--code', code, '--accounts-url', sandbox.url, ...redirect, '--config', join(dir, 'none.yaml')],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const token = /export SVC_REFRESH_TOKEN='([^']+)'/.exec(r.stdout)?.[1];
    expect(token).toBeTruthy();
    expect(r.stdout).toContain('refresh_token: ${SVC_REFRESH_TOKEN}');
    const again = await cli(
      ['auth', 'exchange', '--code', code, '--accounts-url', sandbox.url, ...redirect, '--config', join(dir, 'none.yaml')],
      env,
    );
    expect(again.code).toBe(3);
    expect(again.stderr).toMatch(/invalid_code/);
    expect(again.stderr).not.toContain(code);
    // The new refresh token is one the service accepts.
    const path = write('exchanged.yaml', connection(sandbox.credentials.client_secret));
    const check = await cli(['check', '--config', path, '--no-streams'], { SVC_REFRESH_TOKEN: token! });
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toContain(sandbox.organizations()[0]!.organization_id);
  });

  it('check: a family without an organization list (404) is read for the others\u2019 organizations; its streams are checked', async () => {
    const own = await startSandbox({ seed: 3, scale: 4, organizations: 1, unlimited: true, variants: { noOrganizationList: ['billing'] } });
    try {
      const lines = connection(own.credentials.client_secret).map((l) => l.replace(sandbox.url, own.url));
      const path = write('unlisted.yaml', lines);
      const check = await cli(['check', '--config', path], { SVC_REFRESH_TOKEN: own.credentials.refresh_token });
      expect(check.code, check.stdout + check.stderr).toBe(0);
      const orgId = own.organizations()[0]!.organization_id;
      expect(check.stdout).toContain(
        'billing: no organization list (GET /organizations answered 404); sync reads it for 1 organization(s)',
      );
      expect(check.stdout).toContain(`      ${orgId}`);
      expect(check.stdout).toMatch(/✓ billing\.plans \(SvcSubscriptions\.plans\.READ\)/);
      expect(check.stdout).not.toContain('✗');
    } finally {
      await own.stop();
    }
  });

  it('auth scopes prints the scopes the README lists, per family on request, and names a bad family (exit 2)', async () => {
    const all = await cli(['auth', 'scopes']);
    expect(all.code, all.stderr).toBe(0);
    const listed = all.stdout.trim();
    const readme = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');
    expect(readme).toContain(`\`${listed}\``);
    for (const family of ['books', 'inventory', 'invoice', 'billing'])
      expect(listed, family).toContain(
        `${{ books: 'SvcBooks', inventory: 'SvcInventory', invoice: 'SvcInvoice', billing: 'SvcSubscriptions' }[family]}.settings.READ`,
      );
    const billing = await cli(['auth', 'scopes', '--family', 'billing']);
    expect(billing.stdout.trim().split(',')).toEqual(listed.split(',').filter((x) => x.startsWith('SvcSubscriptions.')));
    const bad = await cli(['auth', 'scopes', '--family', 'books,payroll']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('payroll is not a family');
  });

  it('check, sync, status, schema and plan work together on one config', async () => {
    const path = write('all.yaml', connection(sandbox.credentials.client_secret));
    const env = { SVC_REFRESH_TOKEN: sandbox.credentials.refresh_token };
    const check = await cli(['check', '--config', path], env);
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toMatch(/✓ inventory\.sales_orders \(SvcInventory\.salesorders\.READ\)/);
    const sync = await cli(['sync', '--config', path], env);
    expect(sync.code, sync.stderr).toBe(0);
    expect(sync.stdout).toContain('Result: success (exit 0)');
    const status = await cli(['status', '--config', path, '--json'], env);
    expect(status.code).toBe(0);
    const doc = JSON.parse(status.stdout) as {
      generatedAt: string;
      queue: unknown;
      organizations: Array<{ organizationId: string; streams: Array<{ stream: string; rows: number }> }>;
    };
    // SQLite: no worker queue.
    expect(doc.queue).toBeNull();
    expect(Number.isNaN(Date.parse(doc.generatedAt))).toBe(false);
    const orgs = doc.organizations;
    const orgId = sandbox.organizations()[0]!.organization_id;
    const so = orgs.find((o) => o.organizationId === orgId)!.streams.find((s) => s.stream === 'inventory.sales_orders')!;
    expect(so.rows).toBe(sandbox.count(orgId, 'inventory', 'sales_orders'));
    // Over 250 KB through a pipe: all of it must arrive before the process exits.
    const schema = await cli(['schema', '--json']);
    expect(schema.code).toBe(0);
    const text = schema.stdout;
    expect(text.length).toBeGreaterThan(250_000);
    expect(text).toContain('inventory_sales_orders__line_items');
    expect((): unknown => JSON.parse(text)).not.toThrow();
    const plan = await cli(['plan', '--config', path], env);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain(orgId);
  }, 60_000);

  it('a hand-run sync records its verdict on the connection: status shows one that cannot log in as failing, then ok again', async () => {
    type Doc = { connections: Array<{ connection: string; state: string; authorization: { result: string; hint: string | null } | null }> };
    const env = { SVC_REFRESH_TOKEN: sandbox.credentials.refresh_token };
    const good = write('auth-good.yaml', connection(sandbox.credentials.client_secret));
    const bad = write('auth-bad.yaml', connection('not-the-client-secret'));
    const refused = await cli(['sync', '--config', bad], env);
    expect(refused.code, refused.stderr).toBe(3);
    const failing = JSON.parse((await cli(['status', '--config', bad, '--json'], env)).stdout) as Doc;
    const acme = failing.connections.find((c) => c.connection === 'acme')!;
    expect(acme.state).toBe('failing');
    expect(acme.authorization?.result).toBe('refused');
    expect(acme.authorization?.hint).toBeTruthy();
    expect((await cli(['status', '--config', bad], env)).stdout).toMatch(/connection acme: .*cannot authorize/);
    const again = await cli(['sync', '--config', good], env);
    expect(again.code, again.stderr).toBe(0);
    const ok = JSON.parse((await cli(['status', '--config', good, '--json'], env)).stdout) as Doc;
    expect(ok.connections.find((c) => c.connection === 'acme')).toMatchObject({ state: 'ok', authorization: { result: 'ok' } });
  }, 60_000);

  it('schema --dbt writes dbt sources for the configured warehouse: SQLite, and Postgres with schema and views_schema', async () => {
    const rest = connection('secret').slice(1);
    const sqlite = write('dbt-sqlite.yaml', [`warehouse: sqlite:${join(dir, 'dbt.db')}`, ...rest]);
    const out = await cli(['schema', '--dbt', '--config', sqlite], { SVC_REFRESH_TOKEN: 'r' });
    expect(out.code, out.stderr).toBe(0);
    type Sources = { sources: Array<{ name: string; database?: string; schema: string; tables: Array<{ name: string }> }> };
    const lite = parse(out.stdout) as Sources;
    expect(lite.sources.map((s) => [s.name, s.schema, s.database])).toEqual([
      ['svcsync', 'main', undefined],
      ['svcsync_views', 'main', undefined],
    ]);
    expect(lite.sources[1]!.tables.map((t) => t.name)).toContain('report_sales_order_lines');

    // Named as the run's schemas are, so the run's teardown drops them (test/global-setup.ts).
    const suffix = `${process.env['SVCSYNC_TEST_RUN'] ?? 'x'}_${process.pid}_${Date.now()}`;
    const postgres = write('dbt-postgres.yaml', [
      'warehouse:',
      `  url: ${PG_BASE_URL}`,
      `  schema: t_${suffix}_raw`,
      `  views_schema: t_${suffix}_views`,
      ...rest,
    ]);
    const file = join(dir, 'sources.yml');
    const pgOut = await cli(['schema', '--dbt', file, '--config', postgres], { SVC_REFRESH_TOKEN: 'r' });
    expect(pgOut.code, pgOut.stderr).toBe(0);
    expect(pgOut.stderr).toContain(`wrote ${file}`);
    const pgSources = parse(readFileSync(file, 'utf8')) as Sources;
    const database = new URL(PG_BASE_URL).pathname.slice(1);
    expect(pgSources.sources.map((s) => [s.name, s.schema, s.database])).toEqual([
      ['svcsync', `t_${suffix}_raw`, database],
      ['svcsync_views', `t_${suffix}_views`, database],
    ]);
  }, 60_000);
});

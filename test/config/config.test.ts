import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.js';
import { SecretRegistry } from '../../src/core/secrets.js';
import { loadConfig, parseConfig } from '../../src/config/load.js';

const SECRET = 'sekret-value-9f8e7d';
const REFRESH = '1000.refresh.abcdef123456';
const base = { name: 'acme', client_id: '1000.CLIENTID', client_secret: SECRET, refresh_token: REFRESH };

function problemsOf(document: unknown, env: Record<string, string> = {}): string[] {
  try {
    parseConfig(document, { env });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    const e = error as ConfigError;
    // A bad file never echoes a secret.
    expect(e.message).not.toContain(SECRET);
    expect(e.message).not.toContain(REFRESH);
    return e.problems;
  }
  throw new Error('expected a ConfigError');
}

describe('parseConfig', () => {
  it('fills defaults from the plan and region', () => {
    const config = parseConfig({ connections: [base] }, { env: {} });
    expect(config.warehouse).toEqual({ url: 'sqlite:./warehouse.db', retry_s: 60, busy_timeout_s: 10, pragmas: [] });
    expect(config.connections[0]).toMatchObject({
      region: 'us',
      plan: 'free',
      families: ['books', 'inventory', 'invoice', 'billing'],
      quota_reset_time_zone: 'UTC',
    });
    expect(config.sync).toMatchObject({ per_page: 200, lookback_seconds: 300 });
  });

  it('names a stream the catalog does not know, in streams and in per-stream schedules; known names pass', () => {
    const problems = problemsOf({
      connections: [
        {
          ...base,
          streams: ['inventory.sales_orders', 'inventory.salesorders', 'contacts'],
          schedules: { streams: { 'books.vendorcredits': { incremental: '*/5 * * * *' } } },
        },
      ],
    });
    expect(problems).toEqual([
      expect.stringMatching(/^connections\[0\]\.streams\[1\]: unknown stream "inventory\.salesorders" .*svcsync schema/),
      expect.stringMatching(/^connections\[0\]\.schedules\.streams\.books\.vendorcredits: unknown stream/),
    ]);
    const ok = parseConfig({ connections: [{ ...base, streams: ['inventory.sales_orders', 'contacts'] }] }, { env: {} });
    expect(ok.connections[0]!.streams).toEqual(['inventory.sales_orders', 'contacts']);
  });

  it('freshness: durations in minutes, hours or days, off, checked per key and stream; the connection’s over the daemon’s', async () => {
    const { freshnessTarget } = await import('../../src/config/freshness.js');
    const config = parseConfig(
      {
        connections: [{ ...base, freshness: { transaction: '15m', streams: { 'inventory.sales_orders': 5 } } }],
        daemon: { freshness: { settings: '2h', families: { billing: '1d' }, streams: { 'billing.events': 'off' } } },
      },
      { env: {} },
    );
    const f = config.daemon.freshness;
    expect(f).toMatchObject({ enabled: true, settings: 120, quiet: 720, min_interval: 5, families: { billing: 1440 } });
    const c = config.connections[0]!.freshness;
    const of = (family: string, name: string, kind: 'transaction' | 'settings') => freshnessTarget(f, c, { family, name, kind });
    expect(of('inventory', 'sales_orders', 'transaction')).toBe(5);
    expect(of('inventory', 'contacts', 'transaction')).toBe(15);
    expect(of('billing', 'events', 'transaction')).toBe('off');
    // The more specific key wins: the daemon's family entry over the connection's kind default.
    expect(of('billing', 'recurring_expenses', 'transaction')).toBe(1440);
    expect(of('inventory', 'currencies', 'settings')).toBe(120);
    // The defaults: 30 minutes for transaction streams, a day for settings.
    const plain = parseConfig({ connections: [base] }, { env: {} }).daemon.freshness;
    expect(freshnessTarget(plain, undefined, { family: 'inventory', name: 'contacts', kind: 'transaction' })).toBe(30);
    expect(freshnessTarget(plain, undefined, { family: 'books', name: 'users', kind: 'settings' })).toBe(1440);
    const problems = problemsOf({
      connections: [{ ...base, freshness: { transaction: 'often', streams: { sales_orders: '5m' } } }],
      daemon: { freshness: { streams: { 'inventory.salesorders': '1h' } } },
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^connections\[0\]\.freshness\.transaction: "often" is not a duration; expected e\.g\. 15m, 2h, 1d/),
      ]),
    );
    const streams = problemsOf({
      connections: [{ ...base, freshness: { streams: { sales_orders: '5m' } } }],
      daemon: { freshness: { streams: { 'inventory.salesorders': '1h' } } },
    });
    expect(streams).toEqual([
      expect.stringMatching(/^daemon\.freshness\.streams\.inventory\.salesorders: unknown stream; write family\.stream/),
      expect.stringMatching(/^connections\[0\]\.freshness\.streams\.sales_orders: unknown stream/),
    ]);
  });

  it('history: off by default, all, or a list of streams checked against the catalog; a connection overrides it', () => {
    expect(parseConfig({ connections: [base] }, { env: {} }).history).toBe('off');
    const problems = problemsOf({
      history: ['inventory.sales_orders', 'inventory.salesorder'],
      connections: [{ ...base, history: ['plans', 'billing.plan'] }],
    });
    expect(problems).toEqual([
      expect.stringMatching(/^history\[1\]: unknown stream "inventory\.salesorder" .*svcsync schema/),
      expect.stringMatching(/^connections\[0\]\.history\[1\]: unknown stream "billing\.plan"/),
    ]);
    expect(problemsOf({ history: 'some', connections: [base] }).join('\n')).toMatch(/history/);
    const ok = parseConfig(
      {
        history: 'all',
        connections: [
          { ...base, history: ['billing.plans'] },
          { ...base, name: 'b' },
        ],
      },
      { env: {} },
    );
    expect([ok.history, ok.connections[0]!.history, ok.connections[1]!.history]).toEqual(['all', ['billing.plans'], undefined]);
  });

  it('interpolates ${VAR} and ${VAR:-default} and registers the secrets it loaded', () => {
    const secrets = new SecretRegistry();
    const config = parseConfig(
      { warehouse: '${WH:-sqlite:./x.db}', connections: [{ ...base, client_secret: '${S}', refresh_token: 'rt-${R}' }] },
      { env: { S: SECRET, R: 'abcdef12' }, secrets },
    );
    expect(config.warehouse.url).toBe('sqlite:./x.db');
    expect(config.connections[0]!.client_secret).toBe(SECRET);
    expect(config.connections[0]!.refresh_token).toBe('rt-abcdef12');
    expect(secrets.scrub(`token ${SECRET} and rt-abcdef12`)).toBe('token [REDACTED] and [REDACTED]');
  });

  it('takes the warehouse as a URL or as an object with its fault settings', () => {
    const config = parseConfig(
      { warehouse: { url: 'postgres://svc@db/w', retry_s: 5, busy_timeout_s: 1 }, connections: [base] },
      { env: {} },
    );
    expect(config.warehouse).toEqual({ url: 'postgres://svc@db/w', retry_s: 5, busy_timeout_s: 1, pragmas: [] });
    const bad = problemsOf({ warehouse: { url: 'sqlite:./w.db', pragmas: ['cache_size = 1; DROP TABLE x'] }, connections: [base] });
    expect(bad.join('\n')).toMatch(/warehouse\.pragmas\[0\]: expected NAME = VALUE/);
    expect(parseConfig({ warehouse: { url: 'sqlite:./w.db' }, connections: [base] }, { env: {} }).warehouse.retry_s).toBe(60);
    expect(problemsOf({ warehouse: { url: 'sqlite:./w.db', retry: 5 }, connections: [base] }).join('\n')).toMatch(/warehouse/);
  });

  it('keeps numeric organization ids as text', () => {
    const config = parseConfig({ connections: [{ ...base, organizations: [10234695, '460000000012345'] }] }, { env: {} });
    expect(config.connections[0]!.organizations).toEqual(['10234695', '460000000012345']);
  });

  const table: Array<[string, unknown, string[], Record<string, string>?]> = [
    [
      'unknown plan',
      { connections: [{ ...base, plan: 'gold' }] },
      ['connections[0].plan: expected one of free, standard, professional, premium, elite, ultimate, enterprise'],
    ],
    [
      'unknown region',
      { connections: [{ ...base, region: 'mars' }] },
      ['connections[0].region: expected one of us, eu, in, au, jp, ca, cn, sa'],
    ],
    ['no connections', { connections: [] }, ['connections: expected at least one connection']],
    ['connections missing', {}, ['connections: is required (expected array)']],
    [
      'secret missing',
      { connections: [{ ...base, client_secret: undefined }] },
      ['connections[0].client_secret: is required (expected string)'],
    ],
    ['secret of the wrong type', { connections: [{ ...base, client_secret: 42 }] }, ['connections[0].client_secret: expected string']],
    [
      'bad limits',
      { connections: [{ ...base, limits: { per_minute: -1, burst: 3 } }] },
      [
        'connections[0].limits.per_minute: expected a number > 0',
        'connections[0].limits: unknown key "burst" (see config/svcsync.example.yaml for the keys)',
      ],
    ],
    ['duplicate names', { connections: [base, base] }, ['connections[1].name: "acme" is used by another connection; names must be unique']],
    [
      'unsupported warehouse',
      { warehouse: 'mysql://x', connections: [base] },
      ['warehouse: expected sqlite:PATH or postgres://USER@HOST:PORT/DB'],
    ],
    [
      'bad url and family',
      { connections: [{ ...base, accounts_url: 'not a url', families: ['books', 'crm'] }] },
      [
        'connections[0].accounts_url: expected a URL such as https://accounts.example.com',
        'connections[0].families[1]: expected one of books, inventory, invoice, billing',
      ],
    ],
    [
      'an api_url that is not http or https',
      { connections: [{ ...base, api_url: 'ftp://proxy.example.com' }] },
      ['connections[0].api_url: expected a URL such as https://accounts.example.com'],
    ],
    [
      'missing env var',
      { connections: [{ ...base, client_secret: '${NOPE_SECRET}' }] },
      ['connections[0].client_secret: environment variable NOPE_SECRET is not set (export it, or put the value in the file)'],
    ],
    [
      'bad name',
      { connections: [{ ...base, name: 'bad name!' }] },
      ['connections[0].name: expected a label of letters, digits, ".", "_" or "-"'],
    ],
    [
      'reserve out of range',
      { connections: [{ ...base, limits: { reserve: 2 } }] },
      ['connections[0].limits.reserve: expected a number <= 0.95'],
    ],
    [
      'unknown top-level key',
      { connection: [], connections: [base] },
      ['(top level): unknown key "connection" (see config/svcsync.example.yaml for the keys)'],
    ],
  ];
  it.each(table)('%s', (_name, document, expected, env) => {
    expect(problemsOf(document, env)).toEqual(expected);
  });
});

describe('loadConfig', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcsync-config-'));

  it('reads YAML', () => {
    const path = join(dir, 'a.yaml');
    writeFileSync(
      path,
      [
        'warehouse: sqlite:./w.db',
        'connections:',
        '  - name: acme',
        '    client_id: id',
        '    client_secret: ${S}',
        '    refresh_token: rt-token-1',
        '    plan: standard',
        '',
      ].join('\n'),
    );
    const config = loadConfig(path, { env: { S: SECRET } });
    expect(config.connections[0]).toMatchObject({ plan: 'standard', client_secret: SECRET });
  });

  it('reads JSON', () => {
    const path = join(dir, 'a.json');
    writeFileSync(path, JSON.stringify({ connections: [{ ...base, plan: 'premium' }] }));
    expect(loadConfig(path, { env: {} }).connections[0]!.plan).toBe('premium');
  });

  it('names a missing file and what to do', () => {
    expect(() => loadConfig(join(dir, 'missing.yaml'))).toThrowError(/No configuration file at .*missing\.yaml/);
    try {
      loadConfig(join(dir, 'missing.yaml'));
    } catch (e) {
      expect((e as ConfigError).hint).toMatch(/svcsync\.example\.yaml/);
    }
  });

  it('reports a YAML syntax error by line without echoing the line', () => {
    const path = join(dir, 'broken.yaml');
    writeFileSync(path, `connections:\n  - name: acme\n    client_secret: "${SECRET}\n`);
    let message = '';
    try {
      loadConfig(path);
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/could not be parsed/);
    expect(message).toMatch(/line \d+/);
    expect(message).not.toContain(SECRET);
  });
});

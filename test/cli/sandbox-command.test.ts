import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { configSnippet, sandboxCommand } from '../../src/cli/sandbox-command.js';
import { STACK_FRAME, runCli } from '../helpers/cli-process.js';
import { ID_FIELDS, type Family } from '../helpers/stream-ids.js';

async function parseError(args: string[]): Promise<string> {
  const cmd = sandboxCommand()
    .exitOverride()
    .configureOutput({ writeErr: () => {}, writeOut: () => {} });
  try {
    await cmd.parseAsync(args, { from: 'user' });
  } catch (e) {
    return String((e as Error).message);
  }
  return 'no error';
}

describe('svcsync sandbox command', () => {
  it('names the invalid option', async () => {
    expect(await parseError(['--scale', '-3'])).toContain('--scale');
    expect(await parseError(['--scale', '2000000'])).toContain('--scale');
    expect(await parseError(['--port', '70000'])).toContain('--port');
    expect(await parseError(['--time-scale', '0'])).toContain('--time-scale');
    expect(await parseError(['--fault-5xx', '1.2'])).toContain('--fault-5xx');
    expect(await parseError(['--plan', 'gold'])).toContain('free');
  });

  it('prints a config snippet with limits scaled by the time scale', () => {
    const text = configSnippet(
      'http://127.0.0.1:4010',
      { client_id: 'id', client_secret: 'sec', refresh_token: 'rt', redirect_uri: 'http://x/cb' },
      { plan: 'standard', timeScale: 60, unlimited: false },
      [{ organization_id: '123', name: 'Org "One"' }],
    );
    expect(text).toContain('accounts_url: "http://127.0.0.1:4010"');
    expect(text).toContain('window_ms: 1000');
    expect(text).toContain('per_day: 2000');
    expect(text).toContain('concurrency: 10');
    expect(text).toContain('organizations: ["123"]');
  });
});

/** The fields a mutation changes, per stream, as the warehouse's columns name them. */
const CHANGED_FIELDS: Record<string, readonly string[]> = {
  'books.users': ['status'],
  'books.vendor_credits': ['status', 'reference_number', 'last_modified_time'],
  'books.vendor_credit_refunds': ['description', 'reference_number'],
  'books.webhooks': ['description'],
  'inventory.currencies': ['exchange_rate'],
  'inventory.contacts': ['last_modified_time', 'payment_terms'],
  'inventory.contact_persons': ['phone', 'designation'],
  'inventory.contact_comments': ['description'],
  'inventory.sales_orders': ['status', 'reference_number', 'last_modified_time'],
  'inventory.vendor_credits': ['status', 'reference_number', 'last_modified_time'],
  'inventory.vendor_credit_refunds': ['description', 'reference_number'],
  'invoice.projects': ['status', 'description'],
  // Task lists carry no status (the single task does); svcsync keeps what the list carries.
  'invoice.tasks': ['billed_hours'],
  'billing.plans': ['recurring_price', 'updated_time'],
  'billing.recurring_expenses': ['status', 'last_modified_time'],
};

/** A value as the warehouse holds it and as the API sent it, made comparable: instants as epoch ms. */
function comparable(value: unknown): unknown {
  if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/.test(value)) {
    return Date.parse(value.replace(/([+-]\d\d)(\d\d)$/, '$1:$2'));
  }
  // Hours: `h:mm` text from the API, decimal hours in the warehouse.
  const hours = typeof value === 'string' ? /^(\d+):(\d{2})$/.exec(value) : null;
  if (hours) value = Number(hours[1]) + Number(hours[2]) / 60;
  if (typeof value === 'number') return value.toFixed(4);
  // The warehouse keeps an empty text (`exchange_rate: ""`) as null.
  if (value === null || value === undefined || value === '') return null;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

describe('svcsync sandbox mutate, against a running sandbox', () => {
  let sandbox: Sandbox;
  let dir: string;
  let config: string;
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 9, scale: 10, organizations: 2, unlimited: true });
    dir = mkdtempSync(join(tmpdir(), 'svcsync-sandbox-mutate-'));
    config = join(dir, 'svcsync.yaml');
    writeFileSync(
      config,
      [
        `warehouse: sqlite:${join(dir, 'w.db')}`,
        'connections:',
        '  - name: sandbox',
        `    accounts_url: ${sandbox.url}`,
        `    client_id: ${sandbox.credentials.client_id}`,
        `    client_secret: ${sandbox.credentials.client_secret}`,
        `    refresh_token: ${sandbox.credentials.refresh_token}`,
        '    plan: enterprise',
        '    limits: { per_minute: 1000000, per_day: 100000000 }',
        '',
      ].join('\n'),
    );
  });
  afterAll(async () => sandbox?.stop());

  /** Live ids per stream and organization, in the warehouse and in the sandbox's truth. */
  function liveIds(): { warehouse: Map<string, string[]>; truth: Map<string, string[]> } {
    const db = new Database(join(dir, 'w.db'), { readonly: true });
    const warehouse = new Map<string, string[]>();
    const truth = new Map<string, string[]>();
    try {
      for (const org of sandbox.organizations()) {
        for (const [family, streams] of Object.entries(ID_FIELDS) as Array<[Family, Record<string, string>]>) {
          for (const [stream, idField] of Object.entries(streams)) {
            if (stream === 'organizations') continue;
            const key = `${family}.${stream} of ${org.organization_id}`;
            const rows = db
              .prepare(`SELECT "${idField}" AS id FROM "${family}_${stream}" WHERE organization_id = ? AND _deleted_at IS NULL`)
              .all(org.ids[family]) as Array<{ id: unknown }>;
            warehouse.set(key, rows.map((r) => String(r.id)).sort());
            truth.set(
              key,
              sandbox
                .truth(org.ids[family], family, stream)
                .map((r) => String(r[idField]))
                .sort(),
            );
          }
        }
      }
    } finally {
      db.close();
    }
    return { warehouse, truth };
  }

  /** The fields mutations change, in the warehouse's live rows and in the truth, per stream. */
  function changedFields(): { warehouse: unknown[]; truth: unknown[] } {
    const db = new Database(join(dir, 'w.db'), { readonly: true });
    const warehouse: unknown[] = [];
    const truth: unknown[] = [];
    try {
      for (const org of sandbox.organizations()) {
        for (const [name, fields] of Object.entries(CHANGED_FIELDS)) {
          const [family, stream] = name.split('.') as [Family, string];
          const idField = ID_FIELDS[family][stream]!;
          const rows = db
            .prepare(
              `SELECT "${idField}" AS id, ${fields.map((f) => `"${f}"`).join(', ')} FROM "${family}_${stream}" ` +
                'WHERE organization_id = ? AND _deleted_at IS NULL',
            )
            .all(org.ids[family]) as Array<Record<string, unknown>>;
          const pick = (r: Record<string, unknown>, id: unknown) => [name, String(id), ...fields.map((f) => comparable(r[f]))];
          warehouse.push(...rows.map((r) => pick(r, r['id'])));
          truth.push(...sandbox.truth(org.ids[family], family, stream).map((r) => pick(r, r[idField])));
        }
      }
    } finally {
      db.close();
    }
    const order = (a: unknown, b: unknown) => JSON.stringify(a).localeCompare(JSON.stringify(b));
    return { warehouse: warehouse.sort(order), truth: truth.sort(order) };
  }

  it('changes the running sandbox from another process; a sync then picks it up and a reconcile equals its truth', async () => {
    const first = await runCli(['sync', '--config', config], { env: { SVCSYNC_LOG_LEVEL: 'warn' } });
    expect(first.code, first.stderr).toBe(0);
    const synced = liveIds();
    expect(synced.warehouse).toEqual(synced.truth);
    const before = changedFields().truth;

    const mutate = await runCli(['sandbox', 'mutate', '--url', sandbox.url, '--modify', '50%', '--delete', '10%']);
    expect(mutate.code, mutate.stderr).toBe(0);
    // 50% of 10 sales orders is 5 in each of 2 organizations; 10% is 1.
    expect(mutate.stdout).toMatch(/^\s+inventory\.sales_orders\s+10\s+0\s+2\s+0$/m);
    expect(mutate.stdout).toContain(`Changed the sandbox at ${sandbox.url}`);
    expect(mutate.stdout).toContain('svcsync sync --reconcile');
    const after = changedFields().truth;
    expect(after).not.toEqual(before);

    const incremental = await runCli(['sync', '--config', config], { env: { SVCSYNC_LOG_LEVEL: 'warn' } });
    expect(incremental.code, incremental.stderr).toBe(0);
    // Every record the sandbox holds is there as it is now; the deleted ones are still live (the API reports no deletes).
    const seen = liveIds();
    let stillLive = 0;
    for (const [key, ids] of seen.truth) {
      const rows = seen.warehouse.get(key)!;
      expect(
        ids.filter((id) => !rows.includes(id)),
        `${key}: missing`,
      ).toEqual([]);
      const extra = rows.filter((id) => !ids.includes(id));
      expect(
        extra.filter((id) => !synced.warehouse.get(key)!.includes(id)),
        `${key}: rows the sandbox never had`,
      ).toEqual([]);
      stillLive += extra.length;
    }
    expect(stillLive).toBeGreaterThan(0);
    const fields = changedFields();
    const rows = new Set(fields.warehouse.map((w) => JSON.stringify(w)));
    expect(
      fields.truth.filter((t) => !rows.has(JSON.stringify(t))),
      'records not as the sandbox holds them',
    ).toEqual([]);

    const reconcile = await runCli(['sync', '--reconcile', '--config', config], { env: { SVCSYNC_LOG_LEVEL: 'warn' } });
    expect(reconcile.code, reconcile.stderr).toBe(0);
    const healed = liveIds();
    expect(healed.warehouse).toEqual(healed.truth);
    const final = changedFields();
    expect(final.warehouse).toEqual(final.truth);
  }, 120_000);

  it('says clearly when no sandbox answers at --url, and names a wrong option', async () => {
    const closed = await startSandbox({ organizations: 1, scale: 1 });
    const url = closed.url;
    await closed.stop();
    const none = await runCli(['sandbox', 'mutate', '--url', url, '--modify', '5%']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain(`--url: no sandbox answers at ${url} (connection refused)`);
    expect(none.stderr).toContain('start one with `svcsync sandbox`');
    expect(none.stderr).not.toMatch(STACK_FRAME);

    const typo = await runCli(['sandbox', 'mutate', '--url', sandbox.url, '--modify', '1', '--stream', 'inventory.salesorders']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('no stream "inventory.salesorders"');
    const share = await runCli(['sandbox', 'mutate', '--url', sandbox.url, '--delete', '150%']);
    expect(share.code).toBe(2);
    expect(share.stderr).toContain('--delete takes a number of records');
    const nothing = await runCli(['sandbox', 'mutate', '--url', sandbox.url]);
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toContain('nothing to change');
  }, 60_000);
});

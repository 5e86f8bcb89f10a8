import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS } from '../helpers/dialects.js';
import type { SyncSummary } from '../../src/extractors/sync-run.js';
import { ID_FIELDS, expectExit, instant, startE2E, stored, truthIds, type E2E, type Family } from '../helpers/e2e.js';

const ph = (dialect: string, n: number): string => (dialect === 'postgres' ? `$${n}` : '?');

describe.each(DIALECTS)('a full sync on %s', (dialect) => {
  let e: E2E;
  let summary: SyncSummary;
  beforeAll(async () => {
    e = await startE2E(dialect);
    summary = await e.sync();
  }, 120_000);
  afterAll(async () => e?.close());

  it('ends with exit code 0 and no secret in any log line', () => {
    expectExit(summary, 0);
    expect(e.log.lines.length).toBeGreaterThan(0);
    for (const s of [e.sandbox.credentials.client_secret, e.sandbox.credentials.refresh_token]) expect(e.log.text).not.toContain(s);
  });

  it('stores no receiver credential of a webhook: URL query values and headers under a sensitive name read [redacted]', async () => {
    const credentials: string[] = [];
    for (const org of e.sandbox.organizations())
      for (const hook of e.sandbox.truth(org.organization_id, 'books', 'webhooks')) {
        credentials.push(/token=([^&]+)/.exec(String(hook['url']))![1]!);
        for (const h of hook['headers'] as Array<{ param_name: string; param_value: string }>)
          if (h.param_name === 'Authorization') credentials.push(h.param_value);
        if (typeof hook['secret'] === 'string' && hook['secret'] !== '') credentials.push(hook['secret']);
      }
    expect(credentials.length).toBeGreaterThan(4);
    const tables = ['books_webhooks', 'books_webhooks__headers', 'books_webhooks__query_parameters', 'books_webhooks__entity_parameters'];
    let text = '';
    for (const table of tables) text += JSON.stringify(await e.query(`SELECT * FROM "${table}"`));
    for (const credential of credentials) expect(text).not.toContain(credential);
    const urls = await e.query<{ url: string }>('SELECT url FROM books_webhooks');
    expect(urls.length).toBeGreaterThan(0);
    for (const { url } of urls) expect(url).toMatch(/\?token=\[redacted\]&entity=\w+$/);
    const headers = await e.query<{ param_name: string; param_value: string }>(
      'SELECT param_name, param_value FROM books_webhooks__headers',
    );
    expect(headers.filter((h) => h.param_name === 'Authorization').map((h) => h.param_value)).toContain('[redacted]');
    expect(headers.filter((h) => h.param_name === 'X-Source').every((h) => h.param_value === 'svc')).toBe(true);
  });

  it('holds exactly the ids of every stream of every organization, none twice', async () => {
    const seen = new Map<string, number>();
    for (const org of e.sandbox.organizations()) {
      for (const family of Object.keys(ID_FIELDS) as Family[]) {
        for (const stream of Object.keys(ID_FIELDS[family])) {
          if (stream === 'organizations') continue;
          const expected = truthIds(e.sandbox, org.organization_id, family, stream);
          const actual = await e.liveIds(org.organization_id, family, stream);
          expect(actual, `${family}.${stream} of ${org.organization_id}`).toEqual(expected);
          seen.set(`${family}.${stream}`, (seen.get(`${family}.${stream}`) ?? 0) + actual.length);
          const dupes = await e.query<{ n: number | string }>(
            `SELECT COUNT(*) - COUNT(DISTINCT "${ID_FIELDS[family][stream]}") AS n ` +
              `FROM "${family}_${stream}" WHERE organization_id = ${ph(dialect, 1)}`,
            [org.organization_id],
          );
          expect(Number(dupes[0]!.n)).toBe(0);
        }
      }
    }
    // Every stream has data somewhere, so no comparison above passed by being empty.
    for (const [stream, n] of seen) expect(n, stream).toBeGreaterThan(0);
    expect(seen.size).toBe(17);
  });

  it("counts records, not reads: each stream's records equal its rows, every one written; its detail reads count apart", async () => {
    let detailed = 0;
    for (const org of e.sandbox.organizations()) {
      const outcome = summary.organizations.find((o) => o.organizationId === org.organization_id)!;
      for (const s of outcome.streams) {
        const [family, stream] = s.stream.split('.') as [Family, string];
        const rows = await e.query<{ n: number | string }>(
          `SELECT COUNT(*) AS n FROM "${family}_${stream}" WHERE organization_id = ${ph(dialect, 1)}`,
          [org.organization_id],
        );
        const key = `${s.stream} of ${org.organization_id}`;
        expect(s.records, key).toBe(Number(rows[0]!.n));
        expect(s.written, key).toBe(s.records);
        // A record read again from its single-record endpoint is one record and two reads.
        if (s.stream === 'inventory.sales_orders') {
          expect(s.reads, key).toBe(2 * s.records);
          detailed += s.records;
        } else if (s.reads !== s.records) expect(s.reads, key).toBeGreaterThan(s.records);
      }
      expect(outcome.streams.find((s) => s.stream === 'inventory.sales_orders')?.records).toBe(
        e.sandbox.count(org.organization_id, 'inventory', 'sales_orders'),
      );
    }
    expect(detailed).toBeGreaterThan(0);
    // What the run recorded per stream carries the same counts.
    const recorded = await e.query<{ records: number | string; reads: number | string; written: number | string }>(
      `SELECT records, reads, written FROM _svcsync_run_streams WHERE stream = 'inventory.sales_orders'`,
    );
    const orders = summary.organizations.flatMap((o) => o.streams).filter((s) => s.stream === 'inventory.sales_orders');
    expect(recorded.map((r) => [Number(r.records), Number(r.reads), Number(r.written)]).sort()).toEqual(
      orders.map((s) => [s.records, s.reads, s.written]).sort(),
    );
  });

  it('lists every organization in each family', async () => {
    const ids = e.sandbox
      .organizations()
      .map((o) => o.organization_id)
      .sort();
    for (const family of Object.keys(ID_FIELDS) as Family[]) {
      const rows = await e.query<{ id: string }>(`SELECT organization_id AS id FROM "${family}_organizations" ORDER BY organization_id`);
      expect(rows.map((r) => r.id).sort()).toEqual(ids);
    }
  });

  it('keeps ids sent as JSON numbers larger than a double exactly', async () => {
    const numeric = e.sandbox.organizations().find((o) => o.idStyle === 'number');
    expect(numeric).toBeDefined();
    const truth = truthIds(e.sandbox, numeric!.organization_id, 'inventory', 'sales_orders');
    expect(truth.some((id) => !Number.isSafeInteger(Number(id)))).toBe(true);
    expect(await e.liveIds(numeric!.organization_id, 'inventory', 'sales_orders')).toEqual(truth);
  });

  it('stores amounts and UTC instants of sales orders as the API gave them', async () => {
    for (const org of e.sandbox.organizations()) {
      const truth = e.sandbox.truth(org.organization_id, 'inventory', 'sales_orders');
      const rows = await e.query<{ id: string; total: unknown; last_modified_time: unknown; created_time: unknown }>(
        'SELECT salesorder_id AS id, total, last_modified_time, created_time ' +
          `FROM inventory_sales_orders WHERE organization_id = ${ph(dialect, 1)}`,
        [org.organization_id],
      );
      const byId = new Map(rows.map((r) => [String(r.id), r]));
      for (const t of truth) {
        const row = byId.get(String(t['salesorder_id']))!;
        expect(Number(row.total)).toBeCloseTo(Number(t['total']), 6);
        expect(stored(row.last_modified_time)).toBe(instant(t['last_modified_time']));
        expect(stored(row.created_time)).toBe(instant(t['created_time']));
        if (dialect === 'sqlite') expect(String(row.last_modified_time)).toMatch(/Z$/);
      }
    }
  });

  it('has every line item of every sales order and vendor credit, with their amounts', async () => {
    for (const org of e.sandbox.organizations()) {
      for (const [family, stream, key] of [
        ['inventory', 'sales_orders', 'salesorder_id'],
        ['inventory', 'vendor_credits', 'vendor_credit_id'],
        ['books', 'vendor_credits', 'vendor_credit_id'],
      ] as const) {
        const truth = e.sandbox.truth(org.organization_id, family, stream);
        const rows = await e.query<{ id: string; n: number | string; total: unknown }>(
          `SELECT "${key}" AS id, COUNT(*) AS n, SUM(item_total) AS total FROM "${family}_${stream}__line_items" ` +
            `WHERE organization_id = ${ph(dialect, 1)} AND _deleted_at IS NULL GROUP BY "${key}"`,
          [org.organization_id],
        );
        const byId = new Map(rows.map((r) => [String(r.id), r]));
        for (const t of truth) {
          const items = (t['line_items'] as Array<Record<string, unknown>>) ?? [];
          const row = byId.get(String(t[key]));
          expect(Number(row?.n ?? 0), `${family}.${stream} ${String(t[key])}`).toBe(items.length);
          const sum = items.reduce((a, i) => a + Number(i['item_total']), 0);
          if (items.length) expect(Number(row!.total)).toBeCloseTo(sum, 6);
        }
      }
    }
  });

  it('turns "hh:mm" task hours into numbers', async () => {
    const org = e.sandbox.organizations()[0]!.organization_id;
    const truth = e.sandbox.truth(org, 'invoice', 'tasks');
    const rows = await e.query<{ id: string; log_time: unknown }>(
      `SELECT task_id AS id, log_time FROM invoice_tasks WHERE organization_id = ${ph(dialect, 1)}`,
      [org],
    );
    const byId = new Map(rows.map((r) => [String(r.id), r]));
    let checked = 0;
    for (const t of truth) {
      const text = String(t['log_time']);
      const m = /^(\d+):(\d\d)$/.exec(text);
      if (!m) continue;
      expect(Number(byId.get(String(t['task_id']))!.log_time)).toBeCloseTo(Number(m[1]) + Number(m[2]) / 60, 6);
      checked++;
    }
    expect(checked).toBeGreaterThan(0);
  });
});

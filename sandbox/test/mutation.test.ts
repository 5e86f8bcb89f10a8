import { afterEach, describe, expect, it } from 'vitest';
import { harness, instant, type Harness } from './sandbox-client.js';

let hs: Harness[] = [];
afterEach(async () => {
  await Promise.all(hs.map((h) => h.sb.stop()));
  hs = [];
});
async function open(opts: Parameters<typeof harness>[0]): Promise<Harness> {
  const h = await harness(opts);
  hs.push(h);
  return h;
}

describe('mutation', () => {
  it('bumps last_modified_time to sandbox now in truth and in the served list together', async () => {
    const h = await open({ scale: 50, organizations: 1 });
    const org = h.orgs[0]!.organization_id;
    const before = new Map(h.sb.truth(org, 'inventory', 'sales_orders').map((s) => [s['salesorder_id'], s['last_modified_time']]));
    h.sb.advanceClock(3_600_000);
    const now = h.sb.now();
    await h.refresh();
    const summary = h.sb.mutate({ modify: 3, streams: ['sales_orders'], families: ['inventory'] });
    expect(summary.streams['inventory.sales_orders']).toEqual({ modified: 3, created: 0, deleted: 0, restored: 0 });
    const after = h.sb.truth(org, 'inventory', 'sales_orders');
    const changed = after.filter((s) => before.get(s['salesorder_id']) !== s['last_modified_time']);
    expect(changed).toHaveLength(3);
    for (const s of changed) expect(Math.abs(instant(s['last_modified_time']) - now)).toBeLessThan(5_000);
    const { body } = await h.json('inventory', '/salesorders?sort_column=last_modified_time&sort_order=D&per_page=3');
    const top = body['salesorders'] as Array<Record<string, unknown>>;
    expect(new Set(top.map((s) => s['salesorder_id']))).toEqual(new Set(changed.map((s) => s['salesorder_id'])));
    const detail = await h.json('inventory', `/salesorders/${String(changed[0]!['salesorder_id'])}`);
    expect(detail.body['salesorder']).toEqual(changed[0]);
  });

  it('serves the same pages after warm(), and a record modified after warm() in its new form', async () => {
    const h = await open({ scale: 40, organizations: 1 });
    const org = h.orgs[0]!.organization_id;
    const cold = await h.all('billing', '/plans', 'plans', org);
    expect(h.sb.warm(org, 'billing', 'plans')).toBe(h.sb.count(org, 'billing', 'plans'));
    expect(h.sb.warm(org, 'billing', 'events')).toBe(h.sb.count(org, 'billing', 'events'));
    expect(await h.all('billing', '/plans', 'plans', org)).toEqual(cold);
    h.sb.advanceClock(60_000);
    await h.refresh();
    h.sb.mutate({ modify: 2, streams: ['plans'], families: ['billing'] });
    const served = new Map((await h.all('billing', '/plans', 'plans', org)).map((p) => [String(p['plan_code']), p['updated_time']]));
    const truth = h.sb.truth(org, 'billing', 'plans');
    expect(truth.filter((p) => served.get(String(p['plan_code'])) !== p['updated_time'])).toEqual([]);
    expect(truth.filter((p) => cold.find((c) => c['plan_code'] === p['plan_code'])?.['updated_time'] !== p['updated_time'])).toHaveLength(
      2,
    );
  });

  it('warms at most 250,000 list records a stream, and every record when asked for the whole stream', async () => {
    const h = await open({ scale: 250_010, organizations: 1 });
    const org = h.orgs[0]!.organization_id;
    expect(h.sb.warm(org, 'billing', 'events')).toBe(250_000);
    expect(h.sb.warm(org, 'billing', 'events', true)).toBe(250_010);
    const last = await h.json('billing', '/events?per_page=200&page=1251');
    expect((last.body['events'] as unknown[]).length).toBe(10);
  }, 120_000);

  it('keeps every served list equal to truth after creates, modifies and deletes', async () => {
    const h = await open({ scale: 120, organizations: 2 });
    h.sb.advanceClock(60_000);
    const summary = h.sb.mutate({ modify: 10, create: 7, delete: 5 });
    expect(summary.created).toBeGreaterThan(0);
    expect(summary.deleted).toBeGreaterThan(0);
    expect(summary.streams['billing.events']).toMatchObject({ modified: 0, created: 14, deleted: 0 });
    // The string-style organization: JSON numbers beyond 2^53 would not survive response.json().
    const org = h.orgs[0]!.organization_id;
    const cases: Array<[Parameters<Harness['all']>[0], string, string, string, string]> = [
      ['inventory', '/salesorders?sort_column=last_modified_time&sort_order=D', 'salesorders', 'sales_orders', 'salesorder_id'],
      ['inventory', '/contacts', 'contacts', 'contacts', 'contact_id'],
      ['books', '/vendorcredits', 'vendor_credits', 'vendor_credits', 'vendor_credit_id'],
      ['books', '/users', 'users', 'users', 'user_id'],
      ['billing', '/plans', 'plans', 'plans', 'plan_code'],
      ['billing', '/events', 'events', 'events', 'event_id'],
      ['inventory', '/vendorcredits/refunds', 'vendor_credit_refunds', 'vendor_credit_refunds', 'vendor_credit_refund_id'],
    ];
    for (const [family, path, key, stream, idField] of cases) {
      const served = await h.all(family, path, key, org);
      const truth = h.sb.truth(org, family, stream);
      expect(served.length, stream).toBe(truth.length);
      expect(h.sb.count(org, family, stream)).toBe(truth.length);
      expect(new Set(served.map((r) => String(r[idField]))), stream).toEqual(new Set(truth.map((r) => r[idField])));
    }
    const listed = await h.all('inventory', '/salesorders?sort_column=last_modified_time&sort_order=D', 'salesorders', org);
    const byId = new Map(h.sb.truth(org, 'inventory', 'sales_orders').map((s) => [String(s['salesorder_id']), s['last_modified_time']]));
    for (const s of listed) expect(s['last_modified_time']).toBe(byId.get(String(s['salesorder_id'])));
  });

  it('deletes children with their parent and bumps a contact when its persons change', async () => {
    const h = await open({ scale: 30, organizations: 1 });
    const org = h.orgs[0]!.organization_id;
    h.sb.advanceClock(60_000);
    const contactsBefore = new Map(h.sb.truth(org, 'inventory', 'contacts').map((c) => [c['contact_id'], c['last_modified_time']]));
    h.sb.mutate({ create: 2, families: ['inventory'], streams: ['contact_persons'] });
    const bumped = h.sb.truth(org, 'inventory', 'contacts').filter((c) => contactsBefore.get(c['contact_id']) !== c['last_modified_time']);
    expect(bumped.length).toBeGreaterThanOrEqual(1);
    const personsBefore = h.sb.count(org, 'inventory', 'contact_persons');
    const withPersons = h.sb.truth(org, 'inventory', 'contact_persons');
    h.sb.mutate({ delete: 30, families: ['inventory'], streams: ['contacts'] });
    expect(h.sb.count(org, 'inventory', 'contacts')).toBe(0);
    expect(h.sb.count(org, 'inventory', 'contact_persons')).toBe(0);
    expect(personsBefore).toBe(withPersons.length);
    const gone = await h.json('inventory', `/contacts/${String(withPersons[0]!['contact_id'])}/contactpersons`);
    expect(gone.status).toBe(404);
  });

  it('keeps what an earlier change wrote when a later change leaves it as it was', async () => {
    const h = await open({ scale: 8, organizations: 1 });
    const org = h.orgs[0]!.organization_id;
    // Every change marks an order emailed (a list field); generated orders often are not, so a change forgotten shows.
    const listed = () => h.all('inventory', '/salesorders', 'salesorders', org);
    expect((await listed()).some((s) => s['is_emailed'] === false)).toBe(true);
    for (let round = 0; round < 10; round++) {
      h.sb.advanceClock(60_000);
      h.sb.mutate({ modify: 3, families: ['inventory'], streams: ['sales_orders'] });
    }
    const changes = (s: Record<string, unknown>) => h.sb.versions(org, 'inventory', 'sales_orders', String(s['salesorder_id'])).length - 1;
    const served = await listed();
    expect(Math.max(...served.map(changes))).toBeGreaterThanOrEqual(2);
    expect(served.filter((s) => changes(s) > 0 && s['is_emailed'] !== true)).toEqual([]);
  });

  it('is deterministic: the same seed and the same mutations give the same truth', async () => {
    const a = await open({ seed: 3, scale: 40 });
    const b = await open({ seed: 3, scale: 40 });
    const start = a.sb.now();
    for (const h of [a, b]) {
      h.sb.advanceClock(start + 120_000 - h.sb.now());
      h.sb.mutate({ modify: 5, create: 3, delete: 2 });
    }
    const org = a.orgs[0]!.organization_id;
    const strip = (rs: Array<Record<string, unknown>>) =>
      rs.map((r) => ({ ...r, last_modified_time: undefined, updated_time: undefined, created_time: undefined, event_time: undefined }));
    for (const [family, stream] of [
      ['inventory', 'sales_orders'],
      ['books', 'vendor_credit_refunds'],
      ['invoice', 'tasks'],
      ['billing', 'events'],
    ] as const) {
      expect(strip(a.sb.truth(org, family, stream))).toEqual(strip(b.sb.truth(org, family, stream)));
    }
  });
});

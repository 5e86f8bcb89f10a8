import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox, type Family, type Sandbox, type SandboxOptions } from '../index.js';

type Rec = Record<string, unknown>;

let open: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(open.map((sb) => sb.stop()));
  open = [];
});

/** A sandbox whose clock moves only when the test moves it, so every change has a known instant. */
async function frozen(opts: SandboxOptions = {}): Promise<Sandbox> {
  const sb = await startSandbox({ seed: 11, scale: 30, organizations: 1, unlimited: true, timeScale: 1e-9, ...opts });
  open.push(sb);
  return sb;
}

/** Moves the sandbox clock on by `ms` and returns the new instant. */
function tick(sb: Sandbox, ms = 1000): number {
  sb.advanceClock(ms);
  return sb.now();
}

const byId = (records: Rec[], idField: string): Map<string, Rec> => new Map(records.map((r) => [String(r[idField]), r]));

const ALL_STREAMS: ReadonlyArray<[Family, string]> = [
  ['books', 'users'],
  ['books', 'vendor_credits'],
  ['books', 'vendor_credit_refunds'],
  ['books', 'vendor_credit_bills'],
  ['books', 'webhooks'],
  ['inventory', 'currencies'],
  ['inventory', 'contacts'],
  ['inventory', 'contact_persons'],
  ['inventory', 'contact_comments'],
  ['inventory', 'sales_orders'],
  ['inventory', 'vendor_credits'],
  ['inventory', 'vendor_credit_refunds'],
  ['invoice', 'projects'],
  ['invoice', 'tasks'],
  ['billing', 'plans'],
  ['billing', 'recurring_expenses'],
  ['billing', 'events'],
];

describe('sandbox history: truth at an instant', () => {
  it('answers, at each past instant, exactly what truth answered then, for every stream (default and hostile)', async () => {
    for (const preset of ['default', 'hostile'] as const) {
      const sb = await frozen({ preset, variants: { changeWhilePagingEvery: 0 } });
      const org = sb.organizations()[0]!;
      const snapshot = (): Map<string, Rec[]> =>
        new Map(ALL_STREAMS.map(([f, s]) => [`${f}.${s}`, sb.truth(org.ids[f], f, s)] as [string, Rec[]]));
      const seen: Array<[number, Map<string, Rec[]>]> = [[sb.now(), snapshot()]];
      for (let round = 0; round < 4; round++) {
        tick(sb);
        sb.mutate({ modify: 4, create: 2, delete: 2, restore: round === 3 ? '50%' : 0 });
        seen.push([sb.now(), snapshot()]);
      }
      for (const [t, truth] of seen) {
        for (const [f, s] of ALL_STREAMS) {
          expect(sb.truthAt(org.ids[f], f, s, t), `${preset} ${f}.${s} at ${t}`).toEqual(truth.get(`${f}.${s}`));
          // Just before the next change, nothing had changed yet.
          expect(sb.truthAt(org.ids[f], f, s, t + 999), `${preset} ${f}.${s} at ${t}+999`).toEqual(truth.get(`${f}.${s}`));
        }
      }
      // A round changes something in every stream that changes, so the instants differ.
      expect(seen[0]![1].get('inventory.sales_orders')).not.toEqual(seen[4]![1].get('inventory.sales_orders'));
    }
  });

  it('keeps the old version of a modified record until the instant of the change, and then the new one', async () => {
    const sb = await frozen();
    const org = sb.organizations()[0]!.organization_id;
    const before = byId(sb.truth(org, 'inventory', 'sales_orders'), 'salesorder_id');
    const t = tick(sb);
    sb.mutate({ modify: 3, families: ['inventory'], streams: ['sales_orders'] });
    const after = byId(sb.truth(org, 'inventory', 'sales_orders'), 'salesorder_id');
    const changed = [...after.keys()].filter((id) => after.get(id)!['last_modified_time'] !== before.get(id)!['last_modified_time']);
    expect(changed).toHaveLength(3);
    const at = (ms: number): Map<string, Rec> => byId(sb.truthAt(org, 'inventory', 'sales_orders', ms), 'salesorder_id');
    for (const id of changed) {
      expect(at(t - 1).get(id)).toEqual(before.get(id));
      expect(at(t).get(id)).toEqual(after.get(id));
      // Line items are part of the version: the change left them as they were.
      expect(at(t).get(id)!['line_items']).toEqual(before.get(id)!['line_items']);
      const versions = sb.versions(org, 'inventory', 'sales_orders', id);
      expect(versions.map((v) => [v.change, v.to])).toEqual([
        ['created', t],
        ['updated', null],
      ]);
      expect(versions[0]!.from).toBeLessThan(t);
      expect(versions[0]!.record).toEqual(before.get(id));
      expect(versions[1]).toMatchObject({ from: t, record: after.get(id) });
    }
  });

  it('shows a created record from its creation on, and a deleted one until its deletion, with a deleted version', async () => {
    const sb = await frozen();
    const org = sb.organizations()[0]!.organization_id;
    const before = byId(sb.truth(org, 'billing', 'plans'), 'plan_code');
    const tc = tick(sb);
    sb.mutate({ create: 2, families: ['billing'], streams: ['plans'] });
    const created = sb.truth(org, 'billing', 'plans').filter((p) => !before.has(String(p['plan_code'])));
    expect(created).toHaveLength(2);
    const td = tick(sb);
    sb.mutate({ delete: 3, families: ['billing'], streams: ['plans'] });
    const live = byId(sb.truth(org, 'billing', 'plans'), 'plan_code');
    const gone = [...byId(sb.truthAt(org, 'billing', 'plans', td - 1), 'plan_code').entries()].filter(([code]) => !live.has(code));
    expect(gone).toHaveLength(3);

    const codesAt = (ms: number): string[] => sb.truthAt(org, 'billing', 'plans', ms).map((p) => String(p['plan_code']));
    for (const p of created) {
      const code = String(p['plan_code']);
      expect(codesAt(tc - 1)).not.toContain(code);
      expect(codesAt(tc)).toContain(code);
      expect(sb.versions(org, 'billing', 'plans', code)[0]).toMatchObject({ from: tc, change: 'created' });
    }
    for (const [code, last] of gone) {
      expect(codesAt(td - 1)).toContain(code);
      expect(codesAt(td)).not.toContain(code);
      const versions = sb.versions(org, 'billing', 'plans', code);
      expect(versions.at(-1)).toEqual({ from: td, to: null, change: 'deleted', record: last });
      expect(versions.at(-2)!.to).toBe(td);
    }
    expect(sb.versions(org, 'billing', 'plans', 'PLAN-9999')).toEqual([]);
  });

  it('brings a deleted record back (restored) with its line items and its children', async () => {
    const sb = await frozen();
    const org = sb.organizations()[0]!.organization_id;
    const td = tick(sb);
    sb.mutate({ delete: 2, families: ['books'], streams: ['vendor_credits'] });
    const deleted = sb
      .truthAt(org, 'books', 'vendor_credits', td - 1)
      .filter((v) => !sb.truth(org, 'books', 'vendor_credits').some((w) => w['vendor_credit_id'] === v['vendor_credit_id']));
    expect(deleted).toHaveLength(2);
    const refundsBefore = sb.truthAt(org, 'books', 'vendor_credit_refunds', td - 1);
    const tr = tick(sb);
    const summary = sb.mutate({ restore: '100%', families: ['books'], streams: ['vendor_credits'] });
    expect(summary.streams['books.vendor_credits']).toEqual({ modified: 0, created: 0, deleted: 0, restored: 2 });
    const now = byId(sb.truth(org, 'books', 'vendor_credits'), 'vendor_credit_id');
    for (const old of deleted) {
      const id = String(old['vendor_credit_id']);
      const back = now.get(id);
      expect(back).toEqual({ ...old, last_modified_time: back!['last_modified_time'] });
      expect(back!['last_modified_time']).not.toBe(old['last_modified_time']);
      expect(sb.versions(org, 'books', 'vendor_credits', id).map((v) => [v.change, v.from, v.to])).toEqual([
        ['created', expect.any(Number), td],
        ['deleted', td, tr],
        ['restored', tr, null],
      ]);
      // Their refunds were gone while they were, and came back with them.
      const mine = (rs: Rec[]) => rs.filter((r) => r['vendor_credit_id'] === id);
      expect(mine(sb.truthAt(org, 'books', 'vendor_credit_refunds', td))).toEqual([]);
      expect(mine(sb.truth(org, 'books', 'vendor_credit_refunds'))).toEqual(mine(refundsBefore));
      for (const refund of mine(refundsBefore)) {
        const versions = sb.versions(org, 'books', 'vendor_credit_refunds', String(refund['vendor_credit_refund_id']));
        expect(versions.map((v) => [v.change, v.from, v.to])).toEqual([
          ['created', expect.any(Number), td],
          ['deleted', td, tr],
          ['restored', tr, null],
        ]);
      }
    }
    // Nothing left to restore.
    expect(sb.mutate({ restore: 5, families: ['books'], streams: ['vendor_credits'] }).restored).toBe(0);
  });

  it('keeps child arrays with the version of their record: refunds of a vendor credit follow it', async () => {
    const sb = await frozen({ scale: 12 });
    const org = sb.organizations()[0]!.organization_id;
    const t0 = sb.now();
    const parents0 = byId(sb.truth(org, 'books', 'vendor_credits'), 'vendor_credit_id');
    const refunds0 = sb.truth(org, 'books', 'vendor_credit_refunds');
    const t1 = tick(sb);
    sb.mutate({ modify: 3, create: 3, delete: 2, families: ['books'], streams: ['vendor_credit_refunds'] });
    const parents1 = byId(sb.truth(org, 'books', 'vendor_credits'), 'vendor_credit_id');
    const touched = [...parents1.keys()].filter(
      (id) => parents1.get(id)!['last_modified_time'] !== parents0.get(id)!['last_modified_time'],
    );
    expect(touched.length).toBeGreaterThan(0);
    for (const id of touched) {
      const then = byId(sb.truthAt(org, 'books', 'vendor_credits', t1 - 1), 'vendor_credit_id').get(id)!;
      const now = byId(sb.truthAt(org, 'books', 'vendor_credits', t1), 'vendor_credit_id').get(id)!;
      expect(then).toEqual(parents0.get(id));
      expect(now).toEqual(parents1.get(id));
      expect(now['vendor_credit_refunds']).not.toEqual(then['vendor_credit_refunds']);
      // The embedded refunds are the refunds stream's records of then and now.
      const of = (rs: Rec[]) => rs.filter((r) => r['vendor_credit_id'] === id);
      expect(then['vendor_credit_refunds']).toEqual(of(refunds0));
      expect(now['vendor_credit_refunds']).toEqual(of(sb.truth(org, 'books', 'vendor_credit_refunds')));
      const versions = sb.versions(org, 'books', 'vendor_credits', id);
      expect(versions.map((v) => v.change)).toEqual(['created', 'updated']);
      expect(versions[0]!.record['vendor_credit_refunds']).toEqual(then['vendor_credit_refunds']);
    }
    expect(sb.truthAt(org, 'books', 'vendor_credit_refunds', t0)).toEqual(refunds0);
  });

  it('versions child-stream records on their own: contact persons created, changed, deleted, and gone with their contact', async () => {
    const sb = await frozen({ scale: 10 });
    const org = sb.organizations()[0]!.organization_id;
    const persons = () => byId(sb.truth(org, 'inventory', 'contact_persons'), 'contact_person_id');
    const v = (id: string) => sb.versions(org, 'inventory', 'contact_persons', id);
    const only = { families: ['inventory' as const], streams: ['contact_persons'] };
    const p0 = persons();
    const tm = tick(sb);
    sb.mutate({ modify: 2, ...only });
    const p1 = persons();
    const tc = tick(sb);
    sb.mutate({ create: 2, ...only });
    const p2 = persons();
    const td = tick(sb);
    sb.mutate({ delete: 1, ...only });
    const p3 = persons();
    const modified = [...p1.keys()].filter((id) => JSON.stringify(p0.get(id)) !== JSON.stringify(p1.get(id)));
    const created = [...p2.keys()].filter((id) => !p1.has(id));
    const deleted = [...p2.keys()].filter((id) => !p3.has(id));
    expect(modified.length).toBeGreaterThanOrEqual(1);
    expect([created.length, deleted.length]).toEqual([2, 1]);
    for (const id of modified.filter((m) => !deleted.includes(m))) {
      expect(v(id)).toEqual([
        { from: expect.any(Number) as number, to: tm, change: 'created', record: p0.get(id) },
        { from: tm, to: null, change: 'updated', record: p1.get(id) },
      ]);
    }
    for (const id of created.filter((c) => !deleted.includes(c)))
      expect(v(id)).toEqual([{ from: tc, to: null, change: 'created', record: p2.get(id) }]);
    for (const id of deleted) expect(v(id).at(-1)).toEqual({ from: td, to: null, change: 'deleted', record: p2.get(id) });
    for (const [t, expected] of [
      [tm - 1, p0],
      [tm, p1],
      [tc, p2],
      [td - 1, p2],
      [td, p3],
    ] as const) {
      expect(byId(sb.truthAt(org, 'inventory', 'contact_persons', t), 'contact_person_id')).toEqual(expected);
    }

    // A deleted contact takes its persons with it, at the same instant.
    const tx = tick(sb);
    sb.mutate({ delete: 10, families: ['inventory'], streams: ['contacts'] });
    expect(sb.truth(org, 'inventory', 'contact_persons')).toEqual([]);
    expect(byId(sb.truthAt(org, 'inventory', 'contact_persons', tx - 1), 'contact_person_id')).toEqual(p3);
    expect(p3.size).toBeGreaterThan(0);
    for (const [id, last] of p3) {
      expect(v(id).at(-1)).toEqual({ from: tx, to: null, change: 'deleted', record: last });
      expect(v(id).at(-2)!.to).toBe(tx);
    }
  });

  it('answers before the first change, after the last, and refuses what it does not know', async () => {
    const sb = await frozen();
    const org = sb.organizations()[0]!.organization_id;
    tick(sb);
    sb.mutate({ modify: 5, create: 5, delete: 5 });
    expect(sb.truthAt(org, 'inventory', 'contacts', sb.now() + 86_400_000)).toEqual(sb.truth(org, 'inventory', 'contacts'));
    // Long before the sandbox's records were created, there were none; the organization record stands from its creation.
    expect(sb.truthAt(org, 'inventory', 'sales_orders', Date.parse('2000-01-01T00:00:00Z'))).toEqual([]);
    expect(sb.truthAt(org, 'books', 'organizations', Date.parse('2000-01-01T00:00:00Z'))).toEqual([]);
    expect(sb.truthAt(org, 'books', 'organizations', sb.now())).toEqual(sb.truth(org, 'books', 'organizations'));
    expect(() => sb.truthAt('999', 'books', 'users', sb.now())).toThrow(/unknown organization 999/);
    expect(() => sb.truthAt(org, 'books', 'invoices', sb.now())).toThrow(/unknown stream books.invoices/);
    expect(() => sb.mutate({ modify: 1, streams: ['invoices'] })).toThrow(/streams: no stream "invoices"/);
    expect(() => sb.mutate({ modify: '5' as unknown as number })).toThrow(/modify must be a number of records/);
    expect(() => sb.mutate({ delete: '120%' })).toThrow(/delete must be/);
    expect(() => sb.mutate({ modify: 1, families: ['billing'], streams: ['contacts'] })).toThrow(/in none of the families/);
  });

  it('changes a share of each stream: "50%" of 30 records is 15, of each organization', async () => {
    const sb = await frozen({ organizations: 2 });
    tick(sb);
    const summary = sb.mutate({ modify: '50%', delete: '10%', families: ['inventory'], streams: ['inventory.sales_orders', 'contacts'] });
    expect(Object.keys(summary.streams).sort()).toEqual(['inventory.contacts', 'inventory.sales_orders']);
    expect(summary.streams['inventory.sales_orders']).toEqual({ modified: 30, created: 0, deleted: 6, restored: 0 });
    for (const o of sb.organizations()) expect(sb.count(o.organization_id, 'inventory', 'sales_orders')).toBe(27);
  });

  it('is deterministic: the same seed and the same mutations at the same instants give the same versions', async () => {
    const [a, b] = [await frozen({ organizations: 2 }), await frozen({ organizations: 2 })];
    for (const sb of [a, b]) {
      for (let round = 0; round < 3; round++) {
        tick(sb, 5000);
        sb.mutate({ modify: 6, create: 2, delete: 2, restore: round === 2 ? 1 : 0 });
      }
    }
    expect(a.historyStats()).toEqual(b.historyStats());
    expect(a.historyStats().versions).toBeGreaterThan(100);
    for (const o of a.organizations()) {
      for (const [f, s, idField] of [
        ['inventory', 'sales_orders', 'salesorder_id'],
        ['books', 'vendor_credits', 'vendor_credit_id'],
        ['invoice', 'tasks', 'task_id'],
      ] as const) {
        const ids = [...new Set([...a.truthAt(o.ids[f], f, s, a.now() - 6000), ...a.truth(o.ids[f], f, s)].map((r) => String(r[idField])))];
        for (const id of ids) expect(a.versions(o.ids[f], f, s, id), `${f}.${s} ${id}`).toEqual(b.versions(o.ids[f], f, s, id));
      }
    }
  });

  it('keeps at most maxVersions past versions, and refuses an instant before those it kept', async () => {
    const sb = await frozen({ maxVersions: 50 });
    const org = sb.organizations()[0]!.organization_id;
    const t0 = sb.now();
    for (let round = 0; round < 4; round++) {
      tick(sb);
      sb.mutate({ modify: 5, delete: 1 });
    }
    const stats = sb.historyStats();
    expect(stats.versions).toBe(50);
    expect(stats.dropped).toBeGreaterThan(0);
    expect(stats.since).toBeGreaterThan(t0);
    expect(() => sb.truthAt(org, 'inventory', 'sales_orders', t0)).toThrow(/keeps versions from .* \(maxVersions 50\)/);
    expect(sb.truthAt(org, 'inventory', 'sales_orders', sb.now())).toEqual(sb.truth(org, 'inventory', 'sales_orders'));
  });
});

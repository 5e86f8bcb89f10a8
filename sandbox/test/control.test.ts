import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox, type Family, type Sandbox, type SandboxOptions } from '../index.js';
import { tokenFor } from './sandbox-client.js';

let open: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(open.map((sb) => sb.stop()));
  open = [];
});

async function frozen(opts: SandboxOptions = {}): Promise<Sandbox> {
  const sb = await startSandbox({ seed: 4, scale: 20, organizations: 2, timeScale: 1e-9, ...opts });
  open.push(sb);
  return sb;
}

async function get(sb: Sandbox, path: string): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const res = await fetch(`${sb.url}${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
}

async function post(sb: Sandbox, path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${sb.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const truthPath = (org: string, family: Family, stream: string, at?: string): string =>
  `/_sandbox/truth?organization_id=${org}&family=${family}&stream=${stream}${at === undefined ? '' : `&at=${encodeURIComponent(at)}`}`;

describe('sandbox control endpoints', () => {
  it('GET /_sandbox/truth agrees with truthAt at every instant, in every form of instant (hostile data too)', async () => {
    const sb = await frozen({ preset: 'hostile', variants: { changeWhilePagingEvery: 0 } });
    const org = sb.organizations()[1]!;
    const t0 = sb.now();
    sb.advanceClock(90_000);
    sb.mutate({ modify: 5, create: 3, delete: 3 });
    const t1 = sb.now();
    const streams: Array<[Family, string]> = [
      ['inventory', 'sales_orders'],
      ['books', 'vendor_credits'],
      ['inventory', 'contact_persons'],
      ['invoice', 'tasks'],
      ['billing', 'plans'],
      ['books', 'organizations'],
    ];
    for (const [family, stream] of streams) {
      const id = org.ids[family];
      const before = sb.truthAt(id, family, stream, t0);
      for (const at of [new Date(t0).toISOString(), String(t0), new Date(t0 + 5.5 * 3_600_000).toISOString().replace('Z', '+0530')]) {
        const { status, body } = await get(sb, truthPath(id, family, stream, at));
        expect(status, `${family}.${stream} at ${at}`).toBe(200);
        expect(body['records'], `${family}.${stream} at ${at}`).toEqual(before);
        expect(body).toMatchObject({ organization_id: id, family, stream, at: new Date(t0).toISOString(), count: before.length });
      }
      const now = await get(sb, truthPath(id, family, stream));
      expect(now.body['records']).toEqual(sb.truthAt(id, family, stream, t1));
      expect(now.body['records']).toEqual(sb.truth(id, family, stream));
    }
    // The change is visible between the two instants.
    const so = (at: number) => get(sb, truthPath(org.ids.inventory, 'inventory', 'sales_orders', String(at)));
    expect((await so(t0)).body['records']).not.toEqual((await so(t1)).body['records']);
  });

  it('GET /_sandbox/versions gives versions() with ISO instants', async () => {
    const sb = await frozen();
    const org = sb.organizations()[0]!.organization_id;
    sb.advanceClock(1000);
    sb.mutate({ modify: 20, delete: 2, families: ['inventory'], streams: ['sales_orders'] });
    const changed = sb
      .truth(org, 'inventory', 'sales_orders')
      .find((s) => sb.versions(org, 'inventory', 'sales_orders', String(s['salesorder_id'])).length > 1)!;
    const id = String(changed['salesorder_id']);
    const { status, body } = await get(sb, `/_sandbox/versions?organization_id=${org}&family=inventory&stream=sales_orders&id=${id}`);
    expect(status).toBe(200);
    expect(body['versions']).toEqual(
      sb.versions(org, 'inventory', 'sales_orders', id).map((v) => ({
        ...v,
        from: new Date(v.from).toISOString(),
        to: v.to === null ? null : new Date(v.to).toISOString(),
      })),
    );
    expect((body['versions'] as unknown[]).length).toBe(2);
  });

  it('POST /_sandbox/mutate changes the data as mutate() does, by count or share, for one organization or all', async () => {
    const sb = await frozen();
    const [a, b] = sb.organizations().map((o) => o.organization_id) as [string, string];
    const before = sb.count(a, 'inventory', 'contacts');
    const { status, body } = await post(sb, '/_sandbox/mutate', {
      create: '50%',
      delete: 2,
      streams: ['inventory.contacts'],
      organization_id: a,
    });
    expect(status).toBe(200);
    expect(body).toMatchObject({ created: 10, deleted: 2, modified: 0, restored: 0, at: new Date(sb.now()).toISOString() });
    expect(body['streams']).toEqual({ 'inventory.contacts': { modified: 0, created: 10, deleted: 2, restored: 0 } });
    expect(sb.count(a, 'inventory', 'contacts')).toBe(before + 8);
    expect(sb.count(b, 'inventory', 'contacts')).toBe(before);
    const all = await post(sb, '/_sandbox/mutate', { restore: '100%', families: ['inventory'] });
    expect(all.body['restored']).toBe(2);
    expect(sb.count(a, 'inventory', 'contacts')).toBe(before + 10);
  });

  it('answers mistakes with 400/404/405 naming the parameter, and the API paths do not reach it', async () => {
    const sb = await frozen();
    const org = sb.organizations()[0]!.organization_id;
    const cases: Array<[string, number, RegExp]> = [
      [truthPath(org, 'inventory', 'sales_orders', '2026-11-20T08:00:00'), 400, /at: .*with its offset/],
      [truthPath(org, 'inventory', 'sales_orders', 'yesterday'), 400, /at: yesterday/],
      [truthPath('123', 'inventory', 'sales_orders'), 400, /unknown organization 123/],
      [truthPath(org, 'inventory', 'salesorders'), 400, /unknown stream inventory\.salesorders/],
      [truthPath(org, 'ledger' as Family, 'sales_orders'), 400, /family: ledger/],
      [`/_sandbox/truth?family=inventory&stream=contacts`, 400, /organization_id is required/],
      [`/_sandbox/versions?organization_id=${org}&family=inventory&stream=contacts`, 400, /id is required/],
      ['/_sandbox/nothing', 404, /No control endpoint \/_sandbox\/nothing/],
      ['/_sandbox/mutate', 405, /takes POST/],
    ];
    for (const [path, code, message] of cases) {
      const { status, body } = await get(sb, path);
      expect([status, body['message']], path).toEqual([code, expect.stringMatching(message)]);
    }
    for (const [body, message] of [
      ['{not json', /JSON object/],
      [{ modify: '5' }, /modify must be a number of records/],
      [{ modify: 1, streams: ['invoices'] }, /no stream "invoices"/],
      [{ modify: 1, colour: 'red' }, /Unknown field colour/],
      [{ modify: 1, organization_id: 7 }, /organization_id must be/],
    ] as const) {
      const res = await post(sb, '/_sandbox/mutate', body);
      expect([res.status, res.body['message']], JSON.stringify(body)).toEqual([400, expect.stringMatching(message)]);
    }
    // Under a family's root, the same path is an unknown API path (and is counted as one).
    const token = await tokenFor(sb);
    const res = await fetch(`${sb.url}/inventory/v1/_sandbox/truth?organization_id=${org}&family=inventory&stream=contacts`, {
      headers: { authorization: `Svc-oauthtoken ${token}` },
    });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { code: number }).code).toBe(5);
    expect(sb.requestLog().byEndpoint).toEqual({ 'GET (unknown)': 1, 'POST /oauth/v2/token': 1 });
  });

  it('counts toward no limit and stays out of the request log', async () => {
    const sb = await frozen({ limits: { per_minute: 3, per_day: 3 } });
    const org = sb.organizations()[0]!.organization_id;
    for (let i = 0; i < 6; i++) expect((await get(sb, truthPath(org, 'billing', 'plans'))).status).toBe(200);
    expect((await post(sb, '/_sandbox/mutate', { modify: 1 })).status).toBe(200);
    const status = await get(sb, '/_sandbox/status');
    expect(status.body).toMatchObject({ sandbox: 'svcsync', url: sb.url, now: new Date(sb.now()).toISOString() });
    expect(status.body['history']).toMatchObject({ dropped: 0, since: null });
    expect(sb.requestLog()).toMatchObject({ total: 0, byEndpoint: {}, byOrganization: {}, byCaller: {}, tokenByCaller: {} });
    // The API's own limits are untouched: three API requests still pass.
    const token = await tokenFor(sb);
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${sb.url}/billing/v1/plans`, {
        headers: { authorization: `Svc-oauthtoken ${token}`, 'X-com-svc-subscriptions-organizationid': org },
      });
      expect(res.status).toBe(200);
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Family } from '../index.js';
import { harness, ROOT, type Harness } from './sandbox-client.js';

let h: Harness;
beforeAll(async () => {
  h = await harness({ scale: 10 });
});
afterAll(() => h.sb.stop());

const lists: Array<[Family, string, string, string]> = [
  ['books', '/users', 'users', 'organization_id'],
  ['inventory', '/salesorders', 'salesorders', 'organization_id'],
  ['invoice', '/projects', 'projects', 'X-com-svc-invoice-organizationid'],
  ['billing', '/plans', 'plans', 'X-com-svc-subscriptions-organizationid'],
];

describe('organization identification', () => {
  for (const [family, path, key, param] of lists) {
    it(`${family} identifies the organization by ${param}`, async () => {
      const [a, b] = h.orgs;
      const first = await h.json(family, path, a!.organization_id);
      const second = await h.json(family, path, b!.organization_id);
      expect(first.status).toBe(200);
      expect(first.body[key]).toHaveLength(10);
      expect(JSON.stringify(first.body[key])).not.toEqual(JSON.stringify(second.body[key]));
      const missing = await h.get(family, path, null);
      expect(missing.status).toBe(400);
      const body = (await missing.json()) as Record<string, unknown>;
      expect(body['code']).not.toBe(0);
      expect(String(body['message'])).toContain(param);
      const unknown = await h.json(family, path, '999');
      expect(unknown.status).toBe(400);
      expect(String(unknown.body['message'])).toContain(param);
    });
  }

  it('does not take the query parameter in place of the header, nor the header in place of the parameter', async () => {
    const org = h.orgs[0]!.organization_id;
    const res = await fetch(`${h.sb.url}/invoice/v3/projects?organization_id=${org}`, {
      headers: { authorization: `Svc-oauthtoken ${h.token}` },
    });
    expect(res.status).toBe(400);
    const books = await fetch(`${h.sb.url}/books/v3/users`, {
      headers: { authorization: `Svc-oauthtoken ${h.token}`, 'X-com-svc-invoice-organizationid': org },
    });
    expect(books.status).toBe(400);
  });

  it('lists organizations in every family without an organization id, same ids everywhere', async () => {
    const ids: string[][] = [];
    for (const family of Object.keys(ROOT) as Family[]) {
      const res = await h.get(family, '/organizations', null);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { organizations: Array<Record<string, unknown>> };
      ids.push(body.organizations.map((o) => o['organization_id'] as string));
      expect(body.organizations[0]).toMatchObject({
        organization_id: expect.any(String) as unknown,
        currency_code: 'INR',
        time_zone: 'Asia/Kolkata',
        is_org_active: true,
      });
    }
    expect(ids.every((x) => JSON.stringify(x) === JSON.stringify(h.orgs.map((o) => o.organization_id)))).toBe(true);
    expect(new Set(h.orgs.map((o) => o.currency_code)).size).toBe(3);
  });

  it('answers unknown paths 404 code 5, other methods 405, missing records 404 code 1002', async () => {
    const org = h.orgs[0]!.organization_id;
    const unknown = await h.get('books', '/nothing-here', org);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as Record<string, unknown>)['code']).toBe(5);
    const post = await fetch(`${h.sb.url}/books/v3/users?organization_id=${org}`, {
      method: 'POST',
      headers: { authorization: `Svc-oauthtoken ${h.token}` },
    });
    expect(post.status).toBe(405);
    for (const [family, path] of [
      ['inventory', '/salesorders/400000000000000'],
      ['inventory', '/vendorcredits/123/refunds'],
      ['invoice', '/projects/1/tasks'],
      ['billing', '/events/nope'],
    ] as const) {
      const res = await h.json(family, path, org);
      expect(res.status, path).toBe(404);
      expect(res.body['code'], path).toBe(1002);
      expect(String(res.body['message'])).toContain('does not exist');
    }
  });
});

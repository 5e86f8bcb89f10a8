import { afterEach, describe, expect, it } from 'vitest';
import { harness, type Harness } from './sandbox-client.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.sb.stop();
  h = undefined;
});

describe('pagination', () => {
  for (const n of [0, 1, 199, 200, 201]) {
    it(`serves ${n} users in pages of at most 200 with has_more_page exactly when more remain`, async () => {
      h = await harness({ scale: n, organizations: 1 });
      const first = await h.json('books', '/users');
      expect(first.status).toBe(200);
      const users = first.body['users'] as unknown[];
      expect(users).toHaveLength(Math.min(n, 200));
      const ctx = first.body['page_context'] as Record<string, unknown>;
      expect(ctx).toMatchObject({ page: 1, per_page: 200, has_more_page: n > 200, report_name: 'Users' });
      const second = await h.json('books', '/users?page=2');
      expect(second.body['users']).toHaveLength(Math.max(0, n - 200));
      expect((second.body['page_context'] as Record<string, unknown>)['has_more_page']).toBe(false);
      const all = await h.all('books', '/users', 'users');
      expect(all.map((u) => u['user_id'])).toEqual(h.sb.truth(h.orgs[0]!.organization_id, 'books', 'users').map((u) => u['user_id']));
    });
  }

  it('walks a list page by page without gaps or repeats', async () => {
    h = await harness({ scale: 23, organizations: 1 });
    const seen: unknown[] = [];
    for (let page = 1; page <= 5; page++) {
      const { body } = await h.json('inventory', `/salesorders?sort_column=last_modified_time&sort_order=D&per_page=5&page=${page}`);
      seen.push(...(body['salesorders'] as Array<Record<string, unknown>>).map((s) => s['salesorder_id']));
      expect((body['page_context'] as Record<string, unknown>)['has_more_page']).toBe(page < 5);
    }
    expect(seen).toHaveLength(23);
    expect(new Set(seen).size).toBe(23);
  });

  it('refuses per_page and page outside 1..200 or not integers, naming the parameter', async () => {
    h = await harness({ scale: 3, organizations: 1 });
    for (const q of ['per_page=0', 'per_page=201', 'per_page=abc', 'per_page=2.5', 'page=0', 'page=x']) {
      const { status, body } = await h.json('books', `/users?${q}`);
      expect(status, q).toBe(400);
      expect(body['code'], q).toBe(2);
      expect(String(body['message']), q).toContain(q.split('=')[0]);
    }
    expect((await h.json('books', '/users?per_page=200')).status).toBe(200);
  });

  it('pages child lists and the all-refunds list too', async () => {
    h = await harness({ scale: 40, organizations: 1 });
    const org = h.orgs[0]!.organization_id;
    const refunds = await h.all('inventory', '/vendorcredits/refunds', 'vendor_credit_refunds');
    expect(refunds.length).toBe(h.sb.count(org, 'inventory', 'vendor_credit_refunds'));
    const { body } = await h.json('inventory', '/vendorcredits/refunds?per_page=1');
    expect(body['vendor_credit_refunds']).toHaveLength(1);
    expect((body['page_context'] as Record<string, unknown>)['has_more_page']).toBe(refunds.length > 1);
  });
});

import nock from 'nock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Family } from '../../src/catalog/families.js';
import { buildFamilyRequest, scopeFor } from '../../src/api/families.js';
import { ACCOUNTS, API, harness, setupNock, teardownNock, tokenReply } from './helpers.js';

describe('organization identification per family (spec 1)', () => {
  beforeEach(() => {
    setupNock();
    nock(ACCOUNTS).post('/oauth/v2/token').reply(200, tokenReply());
  });
  afterEach(teardownNock);

  const cases: Array<{ family: Family; path: string; root: string; header?: string; query: boolean }> = [
    { family: 'books', path: '/users', root: '/books/v3', query: true },
    { family: 'inventory', path: '/salesorders', root: '/inventory/v1', query: true },
    // A41: invoice names its header for the task endpoints only; both forms go on every invoice request.
    { family: 'invoice', path: '/projects/55/tasks', root: '/invoice/v3', header: 'x-com-svc-invoice-organizationid', query: true },
    { family: 'invoice', path: '/projects', root: '/invoice/v3', header: 'x-com-svc-invoice-organizationid', query: true },
    { family: 'billing', path: '/plans', root: '/billing/v1', header: 'x-com-svc-subscriptions-organizationid', query: false },
  ];

  for (const c of cases) {
    const forms = [c.query ? 'query organization_id' : '', c.header ? `header ${c.header}` : ''].filter(Boolean).join(' and ');
    it(`${c.family} ${c.path}: ${forms}`, async () => {
      const h = harness();
      let seen: { path: string; headers: Record<string, unknown> } | undefined;
      nock(API)
        .get((p) => p.startsWith(`${c.root}${c.path}`))
        .reply(function (uri) {
          seen = { path: uri, headers: this.req.headers };
          return [200, { code: 0, message: 'success' }];
        });
      await h.run(
        h.client.get({ family: c.family, organizationId: '10234695', path: c.path, query: { page: 2, per_page: 200, skip: undefined } }),
      );
      const url = new URL(seen!.path, API);
      expect(url.pathname).toBe(`${c.root}${c.path}`);
      expect(url.searchParams.get('page')).toBe('2');
      expect(url.searchParams.has('skip')).toBe(false);
      expect(seen!.headers['authorization']).toMatch(/^Svc-oauthtoken /);
      // The token never travels as a parameter (spec 5.3).
      expect(url.search).not.toMatch(/token/i);
      expect(url.searchParams.getAll('organization_id')).toEqual(c.query ? ['10234695'] : []);
      expect(Object.keys(seen!.headers).filter((k) => k.includes('organizationid'))).toEqual(c.header ? [c.header] : []);
      if (c.header) expect(seen!.headers[c.header]).toBe('10234695');
    });
  }

  it('logs each request with its own family and organization, whichever came before it', async () => {
    const h = harness();
    nock(API)
      .get((p) => p.startsWith('/books/v3/users') || p.startsWith('/billing/v1/plans'))
      .times(4)
      .reply(200, { code: 0, message: 'success' });
    const calls: Array<{ family: Family; organizationId: string; path: string }> = [
      { family: 'books', organizationId: '1', path: '/users' },
      { family: 'billing', organizationId: '2', path: '/plans' },
      { family: 'books', organizationId: '2', path: '/users' },
      { family: 'books', organizationId: '1', path: '/users' },
    ];
    for (const c of calls) await h.run(h.client.get(c));
    const logged = h.log.records.filter((r) => r['msg'] === 'request').map((r) => [r['family'], r['organization_id'], r['path']]);
    expect(logged).toEqual(calls.map((c): unknown[] => [c.family, c.organizationId, expect.stringContaining(c.path)]));
  });

  it('lists organizations without charging any organization, ids as text', async () => {
    const h = harness();
    nock(API)
      .get('/inventory/v1/organizations')
      .reply(
        200,
        '{"code":0,"message":"success","organizations":[{"organization_id":10234695,"name":"Acme"},{"organization_id":"777","name":"B"}]}',
      );
    const body = await h.run(h.client.get({ family: 'inventory', path: '/organizations' }));
    expect((body['organizations'] as Array<Record<string, unknown>>).map((o) => String(o['organization_id']))).toEqual(['10234695', '777']);
    expect(h.limiters.peek('10234695')).toBeUndefined();
    expect(h.client.stats().requests).toBe(1);
  });
});

describe('buildFamilyRequest and scopeFor', () => {
  it('does not repeat an organization_id the caller also put in the query', () => {
    const r = buildFamilyRequest('https://api.example.test/', {
      family: 'books',
      organizationId: '1',
      path: '/users',
      query: { organization_id: '2' },
    });
    expect(r.url).toBe('https://api.example.test/books/v3/users?organization_id=1');
    expect(r.display).toBe('/books/v3/users?organization_id=1');
  });

  it.each([
    ['inventory', 'GET', '/salesorders', 'SvcInventory.salesorders.READ'],
    ['books', 'GET', '/vendorcredits/1/bills', 'SvcBooks.debitnotes.READ'],
    ['billing', 'GET', '/recurringexpenses', 'SvcSubscriptions.expenses.READ'],
    ['invoice', 'GET', '/projects/1/tasks', 'SvcInvoice.projects.READ'],
    ['books', 'GET', '/organizations', 'SvcBooks.settings.READ'],
    ['books', 'GET', '/somethingelse', undefined],
  ] as const)('%s %s %s needs %s', (family, method, path, scope) => {
    expect(scopeFor(family, method, path)).toBe(scope);
  });
});

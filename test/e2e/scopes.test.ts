import { afterEach, describe, expect, it } from 'vitest';
import { requiredScopes } from '../../src/api/scopes.js';
import { CATALOG } from '../../src/catalog/index.js';
import { renderSummary } from '../../src/cli/summary.js';
import { FAMILIES } from '../../src/catalog/families.js';
import type { Variants } from '../../sandbox/index.js';
import { DIALECTS } from '../helpers/dialects.js';
import { expectEqualsTruth, expectExit, startE2E, type E2E } from '../helpers/e2e.js';

/** A grant of exactly the scopes `svcsync auth scopes` prints (the README's list) reads everything. */
describe.each(DIALECTS)('the scopes svcsync asks for, on %s', (dialect) => {
  let e: E2E | undefined;
  afterEach(async () => {
    await e?.close();
    e = undefined;
  });

  it('a refresh token granted exactly those scopes syncs every family with no warning', async () => {
    const scopes = requiredScopes(CATALOG, FAMILIES);
    e = await startE2E(dialect, { scale: 6, credentials: { scopes } });
    const summary = await e.sync();
    expectExit(summary, 0);
    await expectEqualsTruth(e);
    expect(e.log.records.filter((r) => r['level'] === 'warn').map((r) => r['msg'])).toEqual([]);
    expect(e.sandbox.requestLog().byStatus['401'] ?? 0).toBe(0);
  }, 120_000);

  it('without the billing organization list\u2019s scope, the run says billing was skipped and how to grant it', async () => {
    const scopes = requiredScopes(CATALOG, FAMILIES).filter((s) => s !== 'SvcSubscriptions.settings.READ');
    e = await startE2E(dialect, { scale: 6, credentials: { scopes } });
    const summary = await e.sync();
    // Partial (exit 4), not a quiet success: the other families were synced, billing not at all.
    expectExit(summary, 4);
    await expectEqualsTruth(e, { families: ['books', 'inventory', 'invoice'] });
    expect(summary.organizations.every((o) => o.status === 'ok' && !o.families.includes('billing'))).toBe(true);
    expect(summary.skippedFamilies.map((f) => f.family)).toEqual(['billing']);
    const [skip] = summary.skippedFamilies;
    expect(skip!.error).toContain('SvcSubscriptions.settings.READ');
    expect(skip!.error).toContain('svcsync auth scopes');
    // Judged missing only at the bound: the organization list was asked four times, each with a fresh token.
    expect(skip!.error).toContain('refused 4 times in a row');
    expect(e.sandbox.requestLog().byStatus['401']).toBe(4);
    expect(renderSummary(summary)).toContain('✗ connection e2e: billing skipped, none of its streams read');
    const runs = await e.query<{ status: string; errors: string }>('SELECT status, errors FROM _svcsync_runs');
    expect(runs.map((r) => r.status)).toEqual(['partial']);
    expect(String(runs[0]!.errors)).toContain('billing skipped');
  }, 120_000);

  it.each<[string, Partial<Variants>]>([
    ['', {}],
    [', also where refused tokens are answered 401 code 57 and refused twice in a row', { refusedTokenCode: 57, spurious401Rate: 0.05 }],
  ])(
    'without the sales orders scope, only the streams needing it fail, each naming the scope%s',
    async (_, variants) => {
      const scopes = requiredScopes(CATALOG, FAMILIES).filter((s) => s !== 'SvcInventory.salesorders.READ');
      e = await startE2E(dialect, { scale: 6, credentials: { scopes }, variants });
      const summary = await e.sync();
      expectExit(summary, 4);
      await expectEqualsTruth(e, { families: ['books', 'invoice', 'billing'] });
      let failed = 0;
      for (const org of summary.organizations) {
        const notOk = org.streams.filter((s) => s.status !== 'ok');
        expect(notOk.length, org.organizationId).toBeGreaterThan(0);
        for (const s of notOk) {
          expect(s.stream, org.organizationId).toMatch(/^inventory\.(sales_orders|sales_order_line_items)/);
          expect(s.error, s.stream).toContain('SvcInventory.salesorders.READ');
          // The cost of judging a scope missing: the bound's four refused requests, once per
          // stream that asked; the streams after it that need the scope ask nothing.
          expect(s.requests, `${org.organizationId} ${s.stream}`).toBe(s.status === 'failed' ? 4 : 0);
          if (s.status === 'failed') failed++;
        }
        // Contacts and their children, vendor credits: all read.
        for (const name of ['inventory.contacts', 'inventory.contact_comments', 'inventory.vendor_credits'])
          expect(org.streams.find((s) => s.stream === name)?.status, `${org.organizationId} ${name}`).toBe('ok');
        const contacts = await e.liveIds(org.organizationId, 'inventory', 'contacts');
        expect(contacts.length).toBeGreaterThan(0);
      }
      const log = e.sandbox.requestLog();
      expect(log.byStatus['401']).toBe(4 * failed + log.variants.spurious401);
      if (variants.spurious401Rate) expect(log.variants.spurious401).toBeGreaterThan(0);
    },
    120_000,
  );
});

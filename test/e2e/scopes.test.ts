import { afterEach, describe, expect, it } from 'vitest';
import { requiredScopes } from '../../src/api/scopes.js';
import { CATALOG } from '../../src/catalog/index.js';
import { renderSummary } from '../../src/cli/summary.js';
import { FAMILIES } from '../../src/config/plans.js';
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
    expect(renderSummary(summary)).toContain('✗ connection e2e: billing skipped, none of its streams read');
    const runs = await e.query<{ status: string; errors: string }>('SELECT status, errors FROM _svcsync_runs');
    expect(runs.map((r) => r.status)).toEqual(['partial']);
    expect(String(runs[0]!.errors)).toContain('billing skipped');
  }, 120_000);

  it('without the sales orders scope, only the streams needing it fail, each naming the scope; the rest of inventory is read', async () => {
    const scopes = requiredScopes(CATALOG, FAMILIES).filter((s) => s !== 'SvcInventory.salesorders.READ');
    e = await startE2E(dialect, { scale: 6, credentials: { scopes } });
    const summary = await e.sync();
    expectExit(summary, 4);
    await expectEqualsTruth(e, { families: ['books', 'invoice', 'billing'] });
    for (const org of summary.organizations) {
      const notOk = org.streams.filter((s) => s.status !== 'ok');
      expect(notOk.length, org.organizationId).toBeGreaterThan(0);
      for (const s of notOk) {
        expect(s.stream, org.organizationId).toMatch(/^inventory\.(sales_orders|sales_order_line_items)/);
        expect(s.error, s.stream).toContain('SvcInventory.salesorders.READ');
      }
      // Contacts and their children, vendor credits: all read.
      for (const name of ['inventory.contacts', 'inventory.contact_comments', 'inventory.vendor_credits'])
        expect(org.streams.find((s) => s.stream === name)?.status, `${org.organizationId} ${name}`).toBe('ok');
      const contacts = await e.liveIds(org.organizationId, 'inventory', 'contacts');
      expect(contacts.length).toBeGreaterThan(0);
    }
  }, 120_000);
});

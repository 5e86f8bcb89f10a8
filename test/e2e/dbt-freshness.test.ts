import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { requiredScopes } from '../../src/api/scopes.js';
import { FAMILIES } from '../../src/catalog/families.js';
import { CATALOG, qualifiedName } from '../../src/catalog/index.js';
import { main } from '../../src/cli/main.js';
import { DIALECTS } from '../helpers/dialects.js';
import { expectExit, stored, startE2E, type E2E } from '../helpers/e2e.js';

/**
 * dbt's source freshness as `svcsync schema --dbt` writes it: each table's and view's
 * `loaded_at_query`, run the way dbt runs one (its `collect_freshness_custom_sql` macro) against a
 * synced warehouse, and judged as dbt judges it (warn after 24 hours, error after 48). A table
 * whose records did not change is fresh; a stream that fails, or that svcsync stopped reading, is
 * stale, whatever `_synced_at` says.
 */

const HOUR = 3_600_000;

interface Sources {
  sources: Array<{ name: string; tables: Array<{ name: string; config?: { loaded_at_query?: string } }> }>;
}

/** What dbt says of an age, with the thresholds `svcsync schema --dbt` writes. */
function verdict(ageMs: number): 'pass' | 'warn' | 'error' {
  if (ageMs > 48 * HOUR) return 'error';
  return ageMs > 24 * HOUR ? 'warn' : 'pass';
}

async function dbtFile(e: E2E): Promise<Sources> {
  const dir = mkdtempSync(join(tmpdir(), 'svcsync-dbt-'));
  const config = join(dir, 'svcsync.yaml');
  const out = join(dir, 'sources.yml');
  writeFileSync(
    config,
    [
      `warehouse: ${JSON.stringify(e.config.warehouse.url)}`,
      'connections:',
      '  - name: e2e',
      '    client_id: x',
      '    client_secret: y',
      '    refresh_token: z',
    ].join('\n') + '\n',
  );
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    expect(await main(['node', 'svcsync', '--log-level', 'silent', '-c', config, 'schema', '--dbt', out])).toBe(0);
  } finally {
    err.mockRestore();
  }
  return parse(readFileSync(out, 'utf8')) as Sources;
}

describe.each(DIALECTS)('dbt freshness from svcsync schema --dbt on %s', (dialect) => {
  let e: E2E;
  let queries: Map<string, string>;
  let firstSync: number;

  /** The table's or view's freshness as dbt finds it: its query, wrapped as dbt wraps it; the age at the sandbox's now. */
  async function age(name: string): Promise<number> {
    const query = queries.get(name);
    if (query === undefined) throw new Error(`no loaded_at_query for ${name}`);
    const [row] = await e.query<{ max_loaded_at: unknown }>(
      `with source_query as (\n${query}\n)\nselect (select * from source_query) as max_loaded_at`,
    );
    expect(row!.max_loaded_at, name).not.toBeNull();
    if (dialect === 'postgres') expect(row!.max_loaded_at, `${name}: dbt needs a timestamp`).toBeInstanceOf(Date);
    return e.sandbox.now() - stored(row!.max_loaded_at);
  }

  async function syncedAtAge(table: string): Promise<number> {
    const [row] = await e.query<{ at: unknown }>(`SELECT MAX("_synced_at") AS at FROM "${table}"`);
    return e.sandbox.now() - stored(row!.at);
  }

  beforeAll(async () => {
    // Without the sales orders' scope their stream fails on every run; the rest is read.
    const scopes = requiredScopes(CATALOG, FAMILIES).filter((s) => s !== 'SvcInventory.salesorders.READ');
    e = await startE2E(dialect, { scale: 4, organizations: 1, credentials: { scopes } });
    firstSync = e.sandbox.now();
    expectExit(await e.sync(), 4);
    // Three quiet days; then every stream is read again but the plans, nothing having changed.
    e.sandbox.advanceClock(72 * HOUR);
    const allButPlans = CATALOG.filter((s) => !s.organizationList)
      .map(qualifiedName)
      .filter((s) => s !== 'billing.plans');
    expectExit(await e.sync('incremental', { streams: allButPlans }), 4);
    const file = await dbtFile(e);
    queries = new Map(file.sources.flatMap((s) => s.tables.map((t) => [t.name, t.config?.loaded_at_query ?? ''] as const)));
  }, 300_000);
  afterAll(async () => e?.close());

  it('a table whose records did not change is fresh, though its _synced_at is three days old', async () => {
    // Not the books vendor credits' lines: a new connection's shortcut check (A48) re-reads a few of those credits.
    for (const table of [
      'inventory_currencies',
      'inventory_contacts',
      'billing_recurring_expenses',
      'inventory_vendor_credits__line_items',
    ]) {
      expect(verdict(await syncedAtAge(table)), `${table} by _synced_at`).toBe('error');
      expect(verdict(await age(table)), table).toBe('pass');
      expect(verdict(await age(`${table}_live`)), `${table}_live`).toBe('pass');
    }
    expect(verdict(await age('report_unbilled_hours'))).toBe('pass');
    expect(verdict(await age('inventory_organizations'))).toBe('pass');
  });

  it('a stream that fails is stale, and so are the views that read it', async () => {
    for (const name of [
      'inventory_sales_orders',
      'inventory_sales_orders__line_items',
      'inventory_sales_orders_live',
      'report_sales_order_lines',
    ])
      expect(verdict(await age(name)), name).toBe('error');
  });

  it('a stream svcsync read three days ago and not since is stale, and a view reading it with others', async () => {
    expect(await age('billing_plans')).toBeGreaterThanOrEqual(e.sandbox.now() - firstSync - HOUR);
    expect(verdict(await age('billing_plans'))).toBe('error');
    expect(verdict(await age('report_recurring_by_customer'))).toBe('error');
    expect(verdict(await age('billing_recurring_expenses'))).toBe('pass');
  });
});

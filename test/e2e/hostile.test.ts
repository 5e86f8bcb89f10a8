import { afterEach, describe, expect, it } from 'vitest';
import { enqueuePending } from '../../src/state/pending.js';
import { DIALECTS } from '../helpers/dialects.js';
import { expectEqualsTruth, expectExit, instant, startE2E, stored, truthIds, type E2E } from '../helpers/e2e.js';
import { minimumRequests } from '../helpers/minimum.js';
import { apiRequests, streamFailures } from '../helpers/hostile.js';

/**
 * The end-to-end scenarios against a sandbox that takes the other reading wherever the spec
 * leaves a choice open (docs/sandbox.md, "Variants"), one variant at a time for the rule it
 * exposes (all at once, the hostile preset, in hostile-preset.test.ts). A small scale with a small page keeps every
 * list several pages long.
 */
const PER_PAGE = 10;

function warningLines(e: E2E): Array<Record<string, unknown>> {
  return e.log.records.filter((r) => r['level'] === 'warn');
}

describe.each(DIALECTS)('against a server that reads the spec otherwise, on %s', (dialect) => {
  let e: E2E | undefined;
  afterEach(async () => {
    await e?.close();
    e = undefined;
  });

  it('rule 1: lists without page_context are read to their last, short page, at most one extra request per list', async () => {
    // 30 records per list at 10 a page: exact multiples, the case that needs the extra page.
    e = await startE2E(dialect, { scale: 30, variants: { omitPageContext: true } }, { sync: { per_page: PER_PAGE } });
    const { minimum, exactMultiples } = minimumRequests(e.sandbox, PER_PAGE);
    expectExit(await e.sync(), 0);
    await expectEqualsTruth(e);
    expect(exactMultiples).toBeGreaterThan(0);
    expect(apiRequests(e)).toBe(minimum + exactMultiples);
  }, 120_000);

  it('rule 2: rate-limit headers on every answer never turn a transient error into a long wait', async () => {
    e = await startE2E(
      dialect,
      { scale: 10, variants: { rateLimitHeaders: true, noRetryAfter: true }, faults: { rate5xx: 0.05, rateTruncated: 0.03 } },
      { sync: { per_page: PER_PAGE, max_retries: 8 } },
    );
    expectExit(await e.sync(), 0);
    await expectEqualsTruth(e);
    const waits = e.log.records.filter((r) => r['msg'] === 'request failed; retrying').map((r) => Number(r['wait_ms']));
    expect(waits.length).toBeGreaterThan(0);
    // The jittered backoff is bounded to seconds (30 s cap); X-Rate-Limit-Reset counted to the day's end.
    expect(Math.max(...waits)).toBeLessThanOrEqual(30_000);
  }, 120_000);

  it('rule 5: occasional 401s for valid, short-lived tokens fail no stream', async () => {
    // 30 sandbox seconds are half a real second at timeScale 60: tokens expire several times per
    // sync, yet a loaded machine can still use one before it expires (3 s was 50 ms of real time).
    e = await startE2E(
      dialect,
      { scale: 10, tokenExpiresIn: 30, timeScale: 60, variants: { spurious401Rate: 0.05 } },
      { sync: { per_page: PER_PAGE } },
    );
    const summary = await e.sync();
    expect(streamFailures(summary)).toEqual([]);
    expectExit(summary, 0);
    expect(e.sandbox.requestLog().variants.spurious401).toBeGreaterThan(0);
    await expectEqualsTruth(e);
  }, 120_000);

  it('rule 6: a lone object where an array is usual is kept as one row; string arrays are skipped, the record still written', async () => {
    e = await startE2E(dialect, { scale: 20, organizations: 1, variants: { arrayQuirks: true } }, { sync: { per_page: PER_PAGE } });
    expectExit(await e.sync(), 0);
    await expectEqualsTruth(e);
    const org = e.sandbox.organizations()[0]!;
    for (const [family, stream, table, key] of [
      ['inventory', 'sales_orders', 'inventory_sales_orders__line_items', 'salesorder_id'],
      ['inventory', 'vendor_credits', 'inventory_vendor_credits__line_items', 'vendor_credit_id'],
      ['books', 'vendor_credits', 'books_vendor_credits__line_items', 'vendor_credit_id'],
    ] as const) {
      const truth = e.sandbox.truth(org.ids[family], family, stream);
      const expected = truth.reduce((a, r) => a + (Array.isArray(r['line_items']) ? r['line_items'].length : 0), 0);
      const rows = await e.query<{ n: number | string }>(`SELECT COUNT(*) AS n FROM ${table} WHERE _deleted_at IS NULL`);
      expect(Number(rows[0]!.n), table).toBe(expected);
      const single = truth.filter((r) => Array.isArray(r['line_items']) && r['line_items'].length === 1).map((r) => String(r[key]));
      expect(single.length, `${stream}: some records carry a lone line item`).toBeGreaterThan(0);
    }
  }, 120_000);

  it('rule 7: data-shape warnings: one line per stream, field and kind, with counts in the summary and _svcsync_run_streams', async () => {
    e = await startE2E(
      dialect,
      { scale: 30, organizations: 1, variants: { arrayQuirks: true, sparseFields: 0.2, extraFields: true } },
      { sync: { per_page: PER_PAGE } },
    );
    const summary = await e.sync();
    expectExit(summary, 0);
    const lines = warningLines(e).filter((r) => r['kind'] !== undefined);
    const keys = lines.map((r) => `${String(r['stream'])}|${String(r['table'])}|${String(r['field'])}|${String(r['kind'])}`);
    expect(new Set(keys).size, 'no (stream, field, kind) warned twice in a run').toBe(keys.length);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.every((r) => Number(r['count']) >= 1 && typeof r['example_record'] === 'string')).toBe(true);
    const counted = summary.organizations.flatMap((o) => o.streams.flatMap((s) => s.warnings));
    expect(counted.reduce((a, w) => a + w.count, 0)).toBeGreaterThan(lines.length);
    const stored = await e.query<{ warnings: string | null }>('SELECT warnings FROM _svcsync_run_streams WHERE warnings IS NOT NULL');
    expect(stored.flatMap((r) => JSON.parse(r.warnings!) as unknown[]).length).toBe(counted.length);
  }, 120_000);

  it('A19: a server whose pages hold fewer records than per_page asks still gives everything, through page_context', async () => {
    e = await startE2E(dialect, { scale: 30, variants: { perPageCap: 7 } }, { sync: { per_page: PER_PAGE } });
    const summary = await e.sync();
    expect(streamFailures(summary)).toEqual([]);
    expectExit(summary, 0);
    await expectEqualsTruth(e);
  }, 120_000);

  it("A19: without page_context, sync.per_page set to the server's page size (the documented answer) gives everything", async () => {
    e = await startE2E(dialect, { scale: 30, variants: { perPageCap: 7, omitPageContext: true } }, { sync: { per_page: 7 } });
    expectExit(await e.sync(), 0);
    await expectEqualsTruth(e);
  }, 120_000);

  it.each([
    ['with page_context', true],
    ['without page_context', false],
  ])(
    'A19: a server that ignores per_page and sends more a page gives everything, %s, within a small record budget',
    async (_, context) => {
      e = await startE2E(
        dialect,
        { scale: 60, variants: { fixedPageSize: 25, omitPageContext: !context } },
        { sync: { per_page: PER_PAGE, max_records_in_flight: 40 } },
      );
      const summary = await e.sync();
      expect(streamFailures(summary)).toEqual([]);
      expectExit(summary, 0);
      await expectEqualsTruth(e);
    },
    180_000,
  );

  it('A38: names ending in NUL and an unpaired surrogate are stored as U+FFFD on both dialects, counted per stream and field', async () => {
    e = await startE2E(dialect, { scale: 20, variants: { oddText: true } }, { sync: { per_page: PER_PAGE } });
    const summary = await e.sync();
    expect(streamFailures(summary)).toEqual([]);
    expectExit(summary, 0);
    await expectEqualsTruth(e);
    const names = (
      await e.query<{ name: string | null; raw: unknown }>('SELECT contact_name AS name, _raw AS raw FROM inventory_contacts')
    ).filter((r): r is { name: string; raw: unknown } => r.name?.endsWith('\uFFFD\uFFFD') ?? false);
    expect(names.length).toBeGreaterThan(0);
    for (const r of names) {
      expect(r.name.includes('\u0000')).toBe(false);
      const raw = (typeof r.raw === 'string' ? JSON.parse(r.raw) : r.raw) as Record<string, unknown>;
      expect(raw['contact_name']).toBe(r.name);
    }
    // One warning line per stream and field, however many answers held such text, worded for the warehouse.
    const warned = warningLines(e).filter((r) => String(r['msg']).includes('NUL character'));
    const repairs = summary.organizations.flatMap((o) =>
      o.streams.flatMap((s) => s.warnings.filter((w) => w.kind === 'text_repaired').map((w) => ({ ...w, stream: s.stream }))),
    );
    expect(warned.length).toBe(repairs.length);
    expect(warned.every((r) => r['kind'] === 'text_repaired')).toBe(true);
    const keys = warned.map((r) => `${String(r['organization_id'])}|${String(r['stream'])}|${String(r['field'])}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(warned.every((r) => String(r['msg']).includes('Postgres') === (dialect === 'postgres'))).toBe(true);
    const contactNames = repairs.filter((w) => w.stream === 'inventory.contacts' && w.field === 'contact_name');
    expect(contactNames.reduce((a, w) => a + w.count, 0)).toBe(names.length);
    expect(repairs.reduce((a, w) => a + w.count, 0)).toBeGreaterThan(warned.length);
    const stored = await e.query<{ warnings: string | null }>(
      `SELECT warnings FROM _svcsync_run_streams WHERE stream = 'inventory.contacts' AND warnings IS NOT NULL`,
    );
    expect(stored.flatMap((r) => JSON.parse(r.warnings!) as Array<{ field: string }>).some((w) => w.field === 'contact_name')).toBe(true);
  }, 120_000);

  it.each([
    ['hh:mm text, as the sample shows', false],
    ['decimal numbers, the declared type', true],
  ])(
    'A39: project and task hours are stored as the hours the server meant, sent as %s',
    async (_form, hoursAsNumbers) => {
      e = await startE2E(dialect, { scale: 20, variants: { hoursAsNumbers } }, { sync: { per_page: PER_PAGE } });
      const summary = await e.sync();
      expect(streamFailures(summary)).toEqual([]);
      expectExit(summary, 0);
      const meant = (v: unknown): number | null => {
        if (typeof v === 'number') return v;
        const m = /^(\d+):(\d{2})$/.exec(String(v));
        return m ? Number(m[1]) + Number(m[2]) / 60 : null;
      };
      let compared = 0;
      for (const org of e.sandbox.organizations()) {
        for (const [table, key, fields] of [
          ['invoice_projects', 'project_id', ['total_hours', 'billed_hours', 'un_billed_hours']],
          ['invoice_tasks', 'task_id', ['billed_hours', 'log_time', 'un_billed_hours']],
        ] as const) {
          const stream = table.slice('invoice_'.length);
          const stored = new Map(
            (
              await e.query<Record<string, unknown>>(`SELECT * FROM ${table} WHERE organization_id = ${e.warehouse.sql.param(1)}`, [
                org.organization_id,
              ])
            ).map((r) => [String(r[key]), r]),
          );
          for (const truth of e.sandbox.truth(org.organization_id, 'invoice', stream)) {
            for (const field of fields) {
              expect(typeof truth[field], `${stream}.${field} sent as`).toBe(hoursAsNumbers ? 'number' : 'string');
              const row = stored.get(String(truth[key]));
              expect(row, `${table} ${String(truth[key])}`).toBeDefined();
              expect(Number(row![field]), `${table} ${String(truth[key])} ${field}`).toBeCloseTo(meant(truth[field])!, 4);
              compared++;
            }
          }
        }
      }
      expect(compared).toBeGreaterThan(20);
      expect(warningLines(e).filter((r) => /hours|hh:mm/.test(String(r['msg'])))).toEqual([]);
    },
    120_000,
  );

  it('A40: a token endpoint giving expires_in in milliseconds (and expires_in_sec) gets its tokens refreshed on time: no 401', async () => {
    e = await startE2E(
      dialect,
      { scale: 20, timeScale: 60, tokenExpiresIn: 30, variants: { tokenLifetimeMillis: true }, faults: { latencyMs: 20 } },
      { sync: { per_page: PER_PAGE } },
    );
    const started = e.sandbox.now();
    const summary = await e.sync();
    const elapsedS = (e.sandbox.now() - started) / 1000;
    expect(streamFailures(summary)).toEqual([]);
    expectExit(summary, 0);
    await expectEqualsTruth(e);
    const log = e.sandbox.requestLog();
    // The run outlived several 30-second tokens (the server's latency keeps it long on a fast
    // machine too), took a new one at least once per lifetime, and used none past its life.
    expect(elapsedS).toBeGreaterThan(2 * 30);
    expect(log.token.refresh).toBeGreaterThanOrEqual(Math.floor(elapsedS / 30));
    expect(log.byStatus['401'] ?? 0).toBe(0);
  }, 120_000);

  it('A41: a server taking the invoice projects list\u2019s organization from organization_id alone gets it, tasks too', async () => {
    e = await startE2E(dialect, { scale: 20, variants: { invoiceOrgInQuery: true } }, { sync: { per_page: PER_PAGE } });
    const summary = await e.sync();
    expect(streamFailures(summary)).toEqual([]);
    expectExit(summary, 0);
    await expectEqualsTruth(e, { families: ['invoice'] });
    expect(e.sandbox.requestLog().byStatus['400'] ?? 0).toBe(0);
  }, 120_000);

  it('A13: a family whose organization list answers 404 is read for the organizations the others list, and stays known', async () => {
    e = await startE2E(dialect, { scale: 12, variants: { noOrganizationList: ['billing'] } }, { sync: { per_page: PER_PAGE } });
    const summary = await e.sync();
    expect(streamFailures(summary)).toEqual([]);
    expectExit(summary, 0);
    await expectEqualsTruth(e);
    const ids = e.sandbox
      .organizations()
      .map((o) => o.organization_id)
      .sort();
    const warned = warningLines(e).filter((r) => String(r['msg']).startsWith('billing has no organization list'));
    expect(warned).toHaveLength(1);
    expect(String(warned[0]!['msg'])).toContain(ids.join(', '));
    // No record of its own to hold, but registered, so a job for one organization reads billing
    // without listing the organizations again.
    expect(await e.query('SELECT organization_id FROM billing_organizations')).toEqual([]);
    const registered = await e.query<{ organization_id: string }>(
      `SELECT organization_id FROM _svcsync_organizations WHERE family = 'billing' ORDER BY organization_id`,
    );
    expect(registered.map((r) => r.organization_id)).toEqual(ids);
    e.sandbox.resetRequestLog();
    const one = await e.sync('incremental', { organization: ids[0] });
    expectExit(one, 0);
    expect(one.organizations.map((o) => [o.organizationId, [...o.families].sort()])).toEqual([
      [ids[0], ['billing', 'books', 'inventory', 'invoice']],
    ]);
    expect(Object.keys(e.sandbox.requestLog().byEndpoint).filter((k) => k.endsWith('/organizations'))).toEqual([]);
  }, 120_000);

  it('A13: when every family\u2019s organization list answers 404, the connection fails naming the request, ids named or not', async () => {
    e = await startE2E(dialect, { scale: 6, variants: { noOrganizationList: ['books', 'inventory', 'invoice', 'billing'] } });
    (e.config.connections[0] as { organizations?: string[] }).organizations = [e.sandbox.organizations()[0]!.organization_id];
    const summary = await e.sync();
    expect(summary.organizations).toEqual([]);
    expect(summary.connectionFailures).toHaveLength(1);
    expect(summary.connectionFailures[0]!.error).toMatch(/GET \/books\/v3\/organizations.*HTTP 404/);
    expect(summary.exitCode).not.toBe(0);
  }, 120_000);

  it('A13 with an id per family: the ids the connection names that no list holds are the unlisted family\u2019s', async () => {
    e = await startE2E(dialect, { scale: 12, variants: { noOrganizationList: ['billing'], orgIdPerFamily: true } });
    const businesses = e.sandbox.organizations();
    const named = businesses.flatMap((o) => Object.values(o.ids));
    (e.config.connections[0] as { organizations?: string[] }).organizations = named;
    const summary = await e.sync();
    expect(streamFailures(summary)).toEqual([]);
    expectExit(summary, 0);
    await expectEqualsTruth(e);
    // Billing was read for its own ids only: no other family's id was sent to it.
    expect(e.sandbox.requestLog().byStatus['400'] ?? 0).toBe(0);
  }, 120_000);

  it('A4: reads answered 404 with another code are set aside, every other record is completed; gone_codes reads them as gone', async () => {
    e = await startE2E(dialect, { scale: 12, variants: { missingRecordCode: 2 } }, { sync: { per_page: PER_PAGE } });
    const env = e;
    const org = e.sandbox.organizations()[0]!.organization_id;
    // An earlier run listed these orders; they were deleted before their single read. First in
    // the queue (the newest changes) and more than one batch (50) of them: before, the first
    // failure ended the pass and no order of this organization ever got its line items.
    const gone = Array.from({ length: 60 }, (_, i) => `9990000000${String(i).padStart(5, '0')}`);
    const p = (n: number): string => env.warehouse.sql.param(n);
    expectExit(await e.sync('incremental', { streams: [] }), 0); // discovery alone: the warehouse exists
    const since = '2026-01-01T00:00:00.000Z';
    const newest = new Map(gone.map((id) => [id, new Date(env.sandbox.now()).toISOString()]));
    await enqueuePending(
      e.warehouse.db,
      { connection: 'e2e', organizationId: org, stream: 'inventory.sales_orders' },
      'detail',
      gone,
      'changed',
      since,
      newest,
    );
    // Likewise contacts whose persons were owed: their child lists answer the same 404.
    const personsKey = { connection: 'e2e', organizationId: org, stream: 'inventory.contact_persons' };
    await enqueuePending(e.warehouse.db, personsKey, 'children', gone.slice(0, 3), 'changed', since, newest);
    const first = await e.sync();
    expectExit(first, 4);
    const stream = first.organizations.find((o) => o.organizationId === org)!.streams.find((s) => s.stream === 'inventory.sales_orders')!;
    expect(stream.status).toBe('failed');
    expect(stream.error).toContain('60 single-record reads of inventory.sales_orders could not be read; the others were');
    expect(stream.error).toContain('sync.gone_codes');
    const persons = first.organizations
      .find((o) => o.organizationId === org)!
      .streams.find((s) => s.stream === 'inventory.contact_persons')!;
    expect(persons.error).toContain("3 parents' contact_persons lists of inventory.contact_persons could not be read; the others were");
    expect(await e.liveIds(org, 'inventory', 'contact_persons')).toEqual(truthIds(e.sandbox, org, 'inventory', 'contact_persons'));
    expect(first.organizations.filter((o) => o.organizationId !== org).every((o) => o.status === 'ok')).toBe(true);
    // Every order that exists got its single read: its line items are all there.
    const truth = e.sandbox.truth(org, 'inventory', 'sales_orders');
    const expected = truth.map((o) => [String(o['salesorder_id']), (o['line_items'] as unknown[]).length]).sort();
    const rows = await e.query<{ id: string; n: number | string }>(
      `SELECT salesorder_id AS id, COUNT(*) AS n FROM inventory_sales_orders__line_items WHERE organization_id = ${p(1)} ` +
        'AND _deleted_at IS NULL GROUP BY salesorder_id',
      [org],
    );
    expect(expected.length).toBeGreaterThan(0);
    expect(rows.map((r) => [String(r.id), Number(r.n)]).sort()).toEqual(expected.filter(([, n]) => Number(n) > 0));
    const queued = async (): Promise<string[]> =>
      (
        await env.query<{ item_id: string }>(
          `SELECT item_id FROM _svcsync_pending WHERE organization_id = ${p(1)} AND kind = 'detail' ORDER BY item_id`,
          [org],
        )
      ).map((r) => r.item_id);
    expect(await queued()).toEqual(gone);
    // Told what the code means, the next run takes them as gone and the queue empties.
    (e.config.sync as { gone_codes: number[] }).gone_codes = [1002, 2];
    e.sandbox.advanceClock(60_000);
    expectExit(await e.sync(), 0);
    expect(await queued()).toEqual([]);
    expect(await e.query('SELECT item_id FROM _svcsync_pending')).toEqual([]);
  }, 120_000);

  it('A43: the custom-field id and VAT summaries written the other way from section to section keep their ids and values', async () => {
    e = await startE2E(dialect, { scale: 20, variants: { otherSpellings: true } }, { sync: { per_page: PER_PAGE } });
    const summary = await e.sync();
    expect(streamFailures(summary)).toEqual([]);
    expectExit(summary, 0);
    await expectEqualsTruth(e);
    // Nothing keyed by position, nothing reported as an unknown field.
    expect(warningLines(e).map((r) => r['msg'])).toEqual([]);
    for (const [table, key] of [
      ['inventory_sales_orders__custom_fields', 'custom_field_id'],
      ['inventory_vendor_credits__custom_fields', 'custom_field_id'],
      ['books_vendor_credits__custom_fields', 'custom_field_id'],
    ] as const) {
      const rows = await e.query<{ k: string }>(`SELECT "${key}" AS k FROM "${table}"`);
      expect(rows.length, table).toBeGreaterThan(0);
      expect(
        rows.filter((r) => String(r.k).startsWith('#')),
        table,
      ).toEqual([]);
    }
    for (const family of ['books', 'inventory'] as const) {
      const served = e.sandbox
        .organizations()
        .flatMap((o) => e!.sandbox.truth(o.organization_id, family, 'vendor_credits'))
        .flatMap((c) => c['acquisition_vat_summary'] as Array<Record<string, unknown>>)
        .map((t) => [t['tax_name'], Number(t['tax_amount'])])
        .sort();
      expect(served.length, family).toBeGreaterThan(0);
      const rows = await e.query<{ name: string; amount: number | string }>(
        `SELECT tax__tax_name AS name, tax__tax_amount AS amount FROM "${family}_vendor_credits__acquisition_vat_summary"`,
      );
      expect(rows.map((r) => [r.name, Number(r.amount)]).sort(), family).toEqual(served);
    }
  }, 120_000);

  it('A45: the books per-credit refunds listed under `refunds` (spec 4.9 names no key) are read all the same', async () => {
    // The credits' own records send their refunds empty, so every credit with refunds is read by its list (A48).
    e = await startE2E(
      dialect,
      { scale: 20, variants: { otherListKeys: true, embeddedChildrenDropped: 1 } },
      { sync: { per_page: PER_PAGE } },
    );
    const summary = await e.sync();
    expect(streamFailures(summary)).toEqual([]);
    expectExit(summary, 0);
    await expectEqualsTruth(e, { families: ['books'] });
    const refunds = e.sandbox.organizations().flatMap((o) => e!.sandbox.truth(o.organization_id, 'books', 'vendor_credit_refunds'));
    expect(refunds.length).toBeGreaterThan(0);
    expect(e.sandbox.requestLog().byEndpoint['GET /books/v3/vendorcredits/{id}/refunds']).toBeGreaterThan(0);
  }, 120_000);

  it('A4: single records sent as an array of one and empty lists sent as null are read as the records they are', async () => {
    // Without page_context every list whose length is a multiple of the page ends in an empty
    // page, and contacts without comments answer an empty child list: both come as null.
    e = await startE2E(
      dialect,
      { scale: 30, variants: { singleRecordArray: true, nullEmptyLists: true, omitPageContext: true } },
      { sync: { per_page: PER_PAGE } },
    );
    const summary = await e.sync();
    expect(streamFailures(summary)).toEqual([]);
    expectExit(summary, 0);
    await expectEqualsTruth(e);
    const { singleArrays, nullLists } = e.sandbox.requestLog().variants;
    expect(singleArrays).toBeGreaterThan(0);
    expect(nullLists).toBeGreaterThan(0);
    expect(warningLines(e)).toEqual([]);
  }, 120_000);

  it('A46: a server counting concurrency per user is told by one warning, and concurrency_scope: user keeps to it', async () => {
    // Each answer takes 10 ms, so requests overlap as they do over a network.
    const sandbox = { scale: 20, organizations: 3, variants: { concurrencyPerUser: true }, faults: { latencyMs: 10 } };
    e = await startE2E(dialect, sandbox, { sync: { per_page: PER_PAGE } });
    const first = await e.sync();
    // Refusals are retried: nothing is lost, but the run is loud and names the setting.
    expectExit(first, 0);
    await expectEqualsTruth(e);
    expect(e.sandbox.requestLog().rateLimited['1070']).toBeGreaterThan(0);
    const hints = warningLines(e).filter((r) => String(r['msg']).includes('limits.concurrency_scope: user'));
    expect(hints).toHaveLength(1);
    await e.close();

    e = await startE2E(dialect, sandbox, { sync: { per_page: PER_PAGE }, connection: { limits: { concurrency_scope: 'user' } } });
    expectExit(await e.sync(), 0);
    await expectEqualsTruth(e);
    expect(e.sandbox.requestLog().rateLimited['1070']).toBe(0);
    expect(warningLines(e)).toEqual([]);
  }, 180_000);

  it('A47: organization lists are paged like every list, with page_context or without', async () => {
    for (const [sandbox, perPage] of [
      [{ scale: 5, organizations: 3, variants: { organizationPageSize: 1 } }, PER_PAGE],
      [{ scale: 5, organizations: 3, variants: { omitPageContext: true } }, 2],
    ] as const) {
      e = await startE2E(dialect, sandbox, { sync: { per_page: perPage } });
      const summary = await e.sync();
      expectExit(summary, 0);
      await expectEqualsTruth(e);
      expect(summary.organizations.map((o) => o.organizationId).sort()).toEqual(
        e.sandbox
          .organizations()
          .map((o) => o.organization_id)
          .sort(),
      );
      for (const family of ['books', 'inventory', 'invoice', 'billing']) {
        const rows = await e.query<{ n: number }>(`SELECT COUNT(*) AS n FROM "${family}_organizations"`);
        expect(Number(rows[0]!.n), family).toBe(3);
      }
      await e.close();
      e = undefined;
    }
  }, 180_000);

  it('A22: an organization listed inactive is skipped with a warning naming the way to read it, and read once named', async () => {
    const sandbox = { scale: 5, organizations: 3, variants: { inactiveOrganizations: 1 } };
    e = await startE2E(dialect, sandbox, { sync: { per_page: PER_PAGE } });
    const ids = e.sandbox.organizations().map((o) => o.organization_id);
    const inactive = ids[2]!;
    const summary = await e.sync();
    expectExit(summary, 0);
    expect(summary.organizations.map((o) => o.organizationId).sort()).toEqual(ids.slice(0, 2).sort());
    expect(await e.liveIds(inactive, 'inventory', 'contacts')).toEqual([]);
    const warned = warningLines(e).filter((r) => String(r['msg']).includes('inactive'));
    expect(warned).toHaveLength(1);
    expect(String(warned[0]!['msg'])).toContain(inactive);
    expect(String(warned[0]!['msg'])).toContain("name it in this connection's organizations");
    await e.close();

    e = await startE2E(dialect, sandbox, { sync: { per_page: PER_PAGE }, connection: { organizations: ids } });
    expectExit(await e.sync(), 0);
    await expectEqualsTruth(e);
    expect(await e.liveIds(inactive, 'inventory', 'contacts')).toEqual(truthIds(e.sandbox, inactive, 'inventory', 'contacts'));
    expect(warningLines(e)).toEqual([]);
  }, 180_000);

  it('A8: a server ignoring the sort is seen by the order page_context reports, when its first page looks sorted', async () => {
    // Unedited records: the contacts' creation order (what the server answers in) is change order too.
    const sandbox = { scale: 30, organizations: 1, variants: { ignoreSort: ['inventory.contacts'], uneditedRecords: true } };
    e = await startE2E(dialect, sandbox, { sync: { per_page: PER_PAGE }, connection: { families: ['inventory'] } });
    expectExit(await e.sync(), 0);
    const org = e.sandbox.organizations()[0]!.organization_id;
    e.sandbox.mutate({ organizationId: org, modify: 1, families: ['inventory'], streams: ['contacts'] });
    const byCreated = e.sandbox
      .truth(org, 'inventory', 'contacts')
      .sort(
        (a, b) => instant(b['created_time']) - instant(a['created_time']) || String(b['contact_id']).localeCompare(String(a['contact_id'])),
      );
    const changed = byCreated.reduce(
      (n, r, i) => (instant(r['last_modified_time']) > instant(byCreated[n]!['last_modified_time']) ? i : n),
      0,
    );
    // The changed contact sits below the first page, which stays in change order: only the echo tells.
    expect(changed).toBeGreaterThanOrEqual(PER_PAGE);
    expectExit(await e.sync(), 0);
    await expectEqualsTruth(e, { families: ['inventory'] });
    const id = String(byCreated[changed]!['contact_id']);
    const p = e.warehouse.sql.param(1);
    const rows = await e.query<{ last_modified_time: unknown }>(
      `SELECT last_modified_time FROM inventory_contacts WHERE contact_id = ${p}`,
      [id],
    );
    expect(stored(rows[0]!.last_modified_time)).toBe(instant(byCreated[changed]!['last_modified_time']));
    expect(warningLines(e).filter((r) => String(r['msg']).includes('newest first'))).toHaveLength(1);
  }, 180_000);

  it('A11: per-parent lists that do not declare paging, paged by the server at 1 without page_context, are read whole', async () => {
    e = await startE2E(
      dialect,
      { scale: 20, variants: { omitPageContext: true, undeclaredPageSize: 1 } },
      { sync: { per_page: PER_PAGE } },
    );
    const summary = await e.sync();
    expect(streamFailures(summary)).toEqual([]);
    expectExit(summary, 0);
    await expectEqualsTruth(e);
    // Parents with two children or more: a walk that took the server's short page as the last lost the rest.
    const org = e.sandbox.organizations()[0]!.organization_id;
    const comments = e.sandbox.truth(org, 'inventory', 'contact_comments');
    const perContact = new Map<string, number>();
    for (const c of comments) perContact.set(String(c['contact_id']), (perContact.get(String(c['contact_id'])) ?? 0) + 1);
    expect([...perContact.values()].some((n) => n > 1)).toBe(true);
  }, 120_000);

  it('A11: per-parent lists that refuse page and per_page are asked again without them, and so for the rest of the run', async () => {
    e = await startE2E(dialect, { scale: 20, variants: { strictUndeclaredLists: true } }, { sync: { per_page: PER_PAGE } });
    const summary = await e.sync();
    expect(streamFailures(summary)).toEqual([]);
    expectExit(summary, 0);
    await expectEqualsTruth(e);
    // Each such list (4) is refused once per organization at most, plus what was in flight when it was.
    const refused = e.sandbox.requestLog().byStatus['400'] ?? 0;
    expect(refused).toBeGreaterThan(0);
    expect(refused).toBeLessThanOrEqual(4 * 10 * 2);
  }, 120_000);
});

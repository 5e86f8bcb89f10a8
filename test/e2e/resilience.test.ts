import { afterEach, describe, expect, it } from 'vitest';
import { parseJson } from '../../src/api/json.js';
import { DIALECTS } from '../helpers/dialects.js';
import { expectEqualsTruth, expectExit, startE2E, truthIds, type E2E } from '../helpers/e2e.js';

describe.each(DIALECTS)('resilience on %s', (dialect) => {
  let e: E2E | undefined;
  afterEach(async () => {
    await e?.close();
    e = undefined;
  });

  it('equals the truth with 5xx answers, extra 429s, cut-short bodies and short-lived tokens injected', async () => {
    e = await startE2E(
      dialect,
      { scale: 10, tokenExpiresIn: 120, faults: { rate5xx: 0.08, rate429: 0.05, rateTruncated: 0.05 } },
      { sync: { max_retries: 12 } },
    );
    const summary = await e.sync();
    expectExit(summary, 0);
    const log = e.sandbox.requestLog();
    expect(log.faults['5xx']).toBeGreaterThan(0);
    expect(log.faults['429']).toBeGreaterThan(0);
    expect(log.faults.truncated).toBeGreaterThan(0);
    // Tokens lived two sandbox minutes; the run outlived several.
    expect(log.token.refresh).toBeGreaterThan(1);
    await expectEqualsTruth(e);
  }, 120_000);

  it('stops with exit 4 and a message when the daily quota runs out, and completes after the day rolls over', async () => {
    e = await startE2E(dialect, { scale: 10, limits: { per_day: 60 } }, { connection: { limits: { per_day: 1000, reserve: 0 } } });
    const first = await e.sync();
    expectExit(first, 4);
    const stopped = first.organizations.filter((o) => o.status === 'quota');
    expect(stopped.length).toBeGreaterThan(0);
    // The next midnight (UTC) of the sandbox's day, from its X-Rate-Limit-Reset; the sandbox's clock runs 600 times
    // real time, so the moments between its answer and svcsync's reading of it may move the minute a little later.
    const started = new Date(first.startedAt);
    const midnight = Date.UTC(started.getUTCFullYear(), started.getUTCMonth(), started.getUTCDate() + 1);
    const resume = Date.parse(stopped[0]!.resumeAt!);
    expect(resume).toBeGreaterThanOrEqual(midnight);
    expect(resume - midnight).toBeLessThanOrEqual(10 * 60_000);
    expect(e.sandbox.requestLog().rateLimited['45']).toBeGreaterThan(0);
    // A second run the same day does not hammer the server: the organization stays paused.
    const before = e.sandbox.requestLog().rateLimited['45'];
    const again = await e.sync();
    expectExit(again, 4);
    expect(e.sandbox.requestLog().rateLimited['45']).toBe(before);
    // Next day (sandbox time): the quota is back and the run finishes what was left.
    let rounds = 0;
    let last = again;
    while (last.exitCode !== 0 && rounds < 10) {
      e.sandbox.advanceClock(24 * 3600_000);
      last = await e.sync();
      rounds++;
    }
    expectExit(last, 0);
    await expectEqualsTruth(e);
  }, 120_000);

  it('equals the truth on the next run when records change while the sync is paging', async () => {
    e = await startE2E(
      dialect,
      { scale: 450, organizations: 1, faults: { latencyMs: 15 } },
      { sync: { per_page: 50 }, connection: { streams: ['inventory.sales_orders', 'inventory.contacts', 'billing.recurring_expenses'] } },
    );
    const sandbox = e.sandbox;
    let mutations = 0;
    // A bounded number of changes, so a slow machine (a longer sync) does not turn them into more
    // detail reads than the day's budget holds.
    const timer = setInterval(() => {
      if (mutations >= 12) return;
      sandbox.mutate({ modify: 2, create: 1, streams: ['sales_orders', 'contacts', 'recurring_expenses'] });
      mutations++;
    }, 40);
    let first;
    try {
      first = await e.sync();
    } finally {
      clearInterval(timer);
    }
    expectExit(first, 0);
    expect(mutations).toBeGreaterThan(2);
    e.sandbox.advanceClock(5 * 60_000);
    expectExit(await e.sync(), 0);
    const org = e.sandbox.organizations()[0]!.organization_id;
    for (const [family, stream] of [
      ['inventory', 'sales_orders'],
      ['inventory', 'contacts'],
      ['billing', 'recurring_expenses'],
    ] as const) {
      expect(await e.liveIds(org, family, stream), `${family}.${stream}`).toEqual(truthIds(e.sandbox, org, family, stream));
    }
  }, 120_000);

  it('a first sync that meets a record again on a later page (the list shifted) keeps only the later copy’s child rows', async () => {
    e = await startE2E(
      dialect,
      { scale: 30, organizations: 1 },
      { sync: { per_page: 10 }, connection: { families: ['books'], streams: ['books.webhooks'] } },
    );
    let repeated: Record<string, unknown> | null = null;
    // Page 1's last webhook comes back at the top of page 2 with its two headers gone, as a
    // list shifted by a new record, with that record edited in between, would return it.
    const fetchShifted: typeof fetch = async (input, init) => {
      const url = new URL(String(input instanceof Request ? input.url : input));
      const response = await fetch(input, init);
      if (!url.pathname.endsWith('/webhooks') || response.status !== 200) return response;
      const body = parseJson(await response.text()) as { webhooks: Array<Record<string, unknown>> };
      const page = Number(url.searchParams.get('page'));
      if (page === 1) {
        body.webhooks[body.webhooks.length - 1]!['headers'] = [
          { param_name: 'X-One', param_value: '1' },
          { param_name: 'X-Two', param_value: '2' },
        ];
        repeated = body.webhooks[body.webhooks.length - 1]!;
      } else if (page === 2 && repeated) {
        body.webhooks.unshift({ ...repeated, webhook_name: 'edited while paging', headers: [] });
      }
      return new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });
    };
    const { runSync } = await import('../../src/extractors/sync-run.js');
    const { createLogger } = await import('../../src/core/logger.js');
    const summary = await runSync({
      config: e.config,
      warehouse: e.warehouse,
      clock: e.sandbox.clock,
      logger: createLogger({ level: 'silent', secrets: e.secrets }),
      secrets: e.secrets,
      signal: new AbortController().signal,
      command: 'sync',
      mode: 'incremental',
      fetch: fetchShifted,
    });
    expectExit(summary, 0);
    expect(repeated).not.toBeNull();
    const id = String(repeated!['webhook_id']);
    const p = dialect === 'postgres' ? '$1' : '?';
    const rows = await e.query<{ webhook_name: string }>(`SELECT webhook_name FROM books_webhooks WHERE webhook_id = ${p}`, [id]);
    expect(rows.map((r) => r.webhook_name)).toEqual(['edited while paging']);
    const headers = await e.query<{ param_name: string; live: number | boolean }>(
      'SELECT param_name, CASE WHEN _deleted_at IS NULL THEN 1 ELSE 0 END AS live ' +
        `FROM books_webhooks__headers WHERE webhook_id = ${p} ORDER BY param_name`,
      [id],
    );
    expect(headers.map((h) => [h.param_name, Number(h.live)])).toEqual([
      ['X-One', 0],
      ['X-Two', 0],
    ]);
  }, 60_000);

  it('an aborted run ends every branch, is recorded as stopped, and the next run converges', async () => {
    e = await startE2E(dialect, { scale: 30, faults: { latencyMs: 10 } }, { sync: { per_page: 10 } });
    const controller = new AbortController();
    const { runSync } = await import('../../src/extractors/sync-run.js');
    const { createLogger } = await import('../../src/core/logger.js');
    const run = runSync({
      config: e.config,
      warehouse: e.warehouse,
      clock: e.sandbox.clock,
      logger: createLogger({ level: 'silent', secrets: e.secrets }),
      secrets: e.secrets,
      signal: controller.signal,
      command: 'sync',
      mode: 'incremental',
    });
    setTimeout(() => controller.abort(new Error('stop requested')), 400);
    await expect(run).rejects.toThrow('stop requested');
    // Requests in flight at the abort reach the sandbox's log once its latency has passed.
    await new Promise((r) => setTimeout(r, 100));
    const requestsAtStop = e.sandbox.requestLog().total;
    await new Promise((r) => setTimeout(r, 300));
    // Nothing keeps calling the API after the run has returned.
    expect(e.sandbox.requestLog().total).toBe(requestsAtStop);
    const runs = await e.query<{ status: string }>('SELECT status FROM _svcsync_runs');
    expect(runs.map((r) => r.status)).toEqual(['stopped']);
    expectExit(await e.sync(), 0);
    await expectEqualsTruth(e);
  }, 120_000);
});

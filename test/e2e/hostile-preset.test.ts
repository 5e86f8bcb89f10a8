import { describe, expect, it, type TestContext } from 'vitest';
import { CapturedLog, createLogger } from '../../src/core/logger.js';
import { runVerify } from '../../src/extractors/verify.js';
import { DIALECTS } from '../helpers/dialects.js';
import { expectEqualsTruth, expectExit, startE2E, type E2E } from '../helpers/e2e.js';
import { minimumRequests } from '../helpers/minimum.js';
import { apiRequests, expectRefusedTokensAs57, refusedAnswers, refusedTokens, SHORT_TOKENS, streamFailures } from '../helpers/hostile.js';

/**
 * The hostile preset: every other reading of the spec at once (docs/sandbox.md, "Variants"),
 * with tokens of a few sandbox seconds refused now and then as 401 code 57 (A26). Apart from
 * hostile.test.ts, whose scenarios take one variant at a time, because these runs wait on the
 * free plan's per-minute window at a slow time scale: in a file of their own they run beside
 * the rest of the suite instead of after it.
 */
const PER_PAGE = 10;

/** A sandbox and warehouse for one test, closed when it finishes (the tests of a dialect run at once). */
async function open(ctx: TestContext, ...args: Parameters<typeof startE2E>): Promise<E2E> {
  const env = await startE2E(...args);
  ctx.onTestFinished(() => env.close());
  return env;
}

// A26 runs alone: its bound (four refusals in a row, two of them the server's on purpose) holds
// only while a fresh token reaches the server within its life in real time, and runs sharing this
// process's event loop can stall it longer than that (seen on a loaded machine: four fresh tokens
// expired in a row).
describe.each(DIALECTS)('the hostile preset with revoked tokens, on %s', (dialect) => {
  it('A26: 12-second tokens, revoked now and then and refused twice in a row, answered 401 code 57: nothing is lost', async (ctx) => {
    // A server that answers an expired or revoked token with 401 code 57, the code this
    // sandbox gives a missing scope. Read as a missing scope after one fresh token, every first
    // run ended partial (exit 4) and even a reconcile did not converge.
    const lifetimeS = 12;
    const e = await open(
      ctx,
      dialect,
      {
        preset: 'hostile',
        tokenExpiresIn: lifetimeS,
        // A token lives 3 s of real time, and svcsync uses it for the first half: long enough that a
        // machine loaded by the whole suite does not let a fresh token expire before its request is
        // answered (at 1.5 s it did, with the two cores' load average at 6: a fifth refusal in a row
        // is not what this test is about). The run still outlives several tokens, and revocations
        // every 10 sandbox seconds come more often than expiries.
        timeScale: 4,
        variants: { changeWhilePagingEvery: 0, spurious401Rate: 0.05 },
        faults: { revokeEverySeconds: 10 },
      },
      { sync: { per_page: PER_PAGE } },
    );
    expect(e.sandbox.variants).toMatchObject({ refusedTokenCode: 57, spurious401Run: 2 });
    const started = e.sandbox.now();
    const first = await e.sync();
    expect(streamFailures(first)).toEqual([]);
    expectExit(first, 0);
    await expectEqualsTruth(e);
    const log = e.sandbox.requestLog();
    // The run outlived several tokens; tokens were revoked under it; every refusal was answered 57,
    // fresh tokens refused too, none past the bound.
    expect((e.sandbox.now() - started) / 1000).toBeGreaterThan(5 * lifetimeS);
    expect(log.token.refresh).toBeGreaterThan(5);
    expect(log.faults.revoked).toBeGreaterThan(0);
    expectRefusedTokensAs57(e);
    expect(log.byStatus['401']).toBe(refusedTokens(e).length);
    // Changes, then a reconcile under the same server: it converges.
    e.sandbox.advanceClock(10 * 60_000);
    e.sandbox.mutate({ modify: 3, create: 2, delete: 2 });
    e.sandbox.advanceClock(60_000);
    const reconcile = await e.sync('reconcile');
    expect(streamFailures(reconcile)).toEqual([]);
    expectExit(reconcile, 0);
    await expectEqualsTruth(e);
  }, 180_000);
});

// Concurrent: the runs spend most of their time waiting on the per-minute window at a slow time
// scale, so a dialect's four wait side by side rather than one after another.
describe.concurrent.each(DIALECTS)('the hostile preset and short-lived tokens, on %s', (dialect) => {
  it('hostile: a full sync equals the truth, within the minimum requests plus one page per list and the refused 401s', async (ctx) => {
    const e = await open(ctx, dialect, { scale: 20, preset: 'hostile', ...SHORT_TOKENS }, { sync: { per_page: PER_PAGE } });
    const before = minimumRequests(e.sandbox, PER_PAGE);
    const first = await e.sync();
    expect(streamFailures(first)).toEqual([]);
    expectExit(first, 0);
    const log = e.sandbox.requestLog();
    expectRefusedTokensAs57(e);
    expect(log.token.refresh).toBeGreaterThan(2);
    const after = minimumRequests(e.sandbox, PER_PAGE);
    const refused = refusedAnswers(e);
    expect(log.variants.pagingMutations).toBeGreaterThan(0);
    // Every API answer, refusals included, came gzip-compressed: the client asks for it and decodes it.
    expect(log.variants.compressed).toBeGreaterThan(0);
    expect(log.variants.compressed).toBe(apiRequests(e));
    expect(apiRequests(e)).toBeGreaterThanOrEqual(before.minimum + refused);
    expect(apiRequests(e)).toBeLessThanOrEqual(after.minimum + after.exactMultiples + after.checkSpread + refused);
    // The NUL characters it sends make one warning line per organization, stream and field, not one per answer.
    const repaired = e.log.records.filter((r) => r['level'] === 'warn' && String(r['msg']).includes('NUL character'));
    const counted = first.organizations.flatMap((o) => o.streams.flatMap((s) => s.warnings.filter((w) => w.kind === 'text_repaired')));
    expect(repaired.length).toBeGreaterThan(0);
    expect(repaired.length).toBe(counted.length);
    expect(counted.reduce((a, w) => a + w.count, 0)).toBeGreaterThan(repaired.length);
    // Records that changed while this run paged are the next run's to read; that run's own
    // changes would be the run after's, so the server stops changing them now.
    e.sandbox.setRequestVariants({ changeWhilePagingEvery: 0 });
    e.sandbox.advanceClock(60_000);
    expectExit(await e.sync(), 0);
    await expectEqualsTruth(e);
  }, 180_000);

  it('hostile: verify agrees after a full sync (exit 0), and finds a record deleted behind its back', async (ctx) => {
    const e = await open(
      ctx,
      dialect,
      { scale: 12, preset: 'hostile', ...SHORT_TOKENS, variants: { changeWhilePagingEvery: 0 } },
      { sync: { per_page: PER_PAGE } },
    );
    expectExit(await e.sync(), 0);
    expect(e.sandbox.requestLog().token.refresh).toBeGreaterThan(2);
    const env = e;
    const verify = (): ReturnType<typeof runVerify> =>
      runVerify({
        config: env.config,
        warehouse: env.warehouse,
        clock: env.sandbox.clock,
        logger: createLogger({ level: 'warn', secrets: env.secrets, destination: new CapturedLog() }),
        secrets: env.secrets,
        signal: new AbortController().signal,
      });
    const agreed = await verify();
    expect(agreed.streams.filter((x) => x.status !== 'agree').map((x) => `${x.organizationId} ${x.stream}: ${x.status}`)).toEqual([]);
    expect(agreed.exitCode).toBe(0);
    expect(agreed.streams.length).toBeGreaterThan(0);
    // A deletion the warehouse has not seen yet: verify reports the row as extra (exit 4).
    e.sandbox.advanceClock(60_000);
    e.sandbox.mutate({ modify: 0, create: 0, delete: 1 });
    const found = await verify();
    expect(found.exitCode).toBe(4);
    expect(found.streams.reduce((a, x) => a + (x.extraCount ?? 0), 0)).toBeGreaterThan(0);
  }, 180_000);

  it('hostile: modify, create and delete, then an incremental run and a reconcile', async (ctx) => {
    const e = await open(
      ctx,
      dialect,
      { scale: 20, preset: 'hostile', ...SHORT_TOKENS, variants: { changeWhilePagingEvery: 0 } },
      { sync: { per_page: PER_PAGE } },
    );
    expectExit(await e.sync(), 0);
    await expectEqualsTruth(e);
    expectRefusedTokensAs57(e);
    e.sandbox.advanceClock(10 * 60_000);
    e.sandbox.mutate({ modify: 3, create: 2, delete: 2 });
    e.sandbox.advanceClock(60_000);
    const incremental = await e.sync();
    expectExit(incremental, 0);
    await expectEqualsTruth(e, { ignoreDeletes: true });
    expectExit(await e.sync('reconcile'), 0);
    await expectEqualsTruth(e);
  }, 180_000);

  it('hostile plus faults: 5% 5xx, cut-short bodies, extra 429s and 2% spurious 401s answered 57 with 20-second tokens', async (ctx) => {
    const e = await open(
      ctx,
      dialect,
      {
        scale: 12,
        preset: 'hostile',
        ...SHORT_TOKENS,
        variants: { changeWhilePagingEvery: 0 },
        faults: { rate5xx: 0.05, rateTruncated: 0.03, rate429: 0.03 },
      },
      { sync: { per_page: PER_PAGE, max_retries: 8 } },
    );
    const { minimum, exactMultiples, checkSpread } = minimumRequests(e.sandbox, PER_PAGE);
    const summary = await e.sync();
    expect(streamFailures(summary)).toEqual([]);
    expectExit(summary, 0);
    await expectEqualsTruth(e);
    const log = e.sandbox.requestLog();
    expect(log.faults['5xx'] + log.faults.truncated + log.faults['429']).toBeGreaterThan(0);
    expectRefusedTokensAs57(e);
    expect(log.token.refresh).toBeGreaterThan(2);
    // Every request beyond the minimum repeats a refused or broken answer, is rule 1's extra page, or is
    // a check of a shortcut reading a longer list than the shortest it could have drawn.
    expect(apiRequests(e)).toBeLessThanOrEqual(minimum + exactMultiples + checkSpread + refusedAnswers(e));
    expect(apiRequests(e)).toBeGreaterThanOrEqual(minimum);
  }, 180_000);
});

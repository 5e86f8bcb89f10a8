import { afterEach, describe, expect, it } from 'vitest';
import type { SandboxOptions } from '../../sandbox/index.js';
import { findStream } from '../../src/catalog/index.js';
import type { StreamSpec } from '../../src/catalog/types.js';
import { RunStopped } from '../../src/extractors/sync-run.js';
import { DIALECTS } from '../helpers/dialects.js';
import { expectEqualsTruth, expectExit, ID_FIELDS, instant, startE2E, truthIds, type E2E, type Family } from '../helpers/e2e.js';

const DAY = 24 * 3600_000;
const FAMILIES: readonly Family[] = ['books', 'inventory'];

/** The families' top-level streams (the organization lists are read at discovery, not per organization). */
const TOP: readonly StreamSpec[] = FAMILIES.flatMap((family) =>
  Object.keys(ID_FIELDS[family])
    .filter((name) => name !== 'organizations')
    .map((name) => findStream(`${family}.${name}`)!)
    .filter((s) => !s.parent),
);

/** Requests by kind, from the sandbox's count per endpoint (the organization lists apart). */
function kinds(byEndpoint: Record<string, number>): { lists: number; singles: number; children: number } {
  const k = { lists: 0, singles: 0, children: 0 };
  for (const [endpoint, n] of Object.entries(byEndpoint)) {
    if (endpoint.startsWith('POST /oauth') || /\/organizations$/.test(endpoint)) continue;
    if (/\{[a-z_]+\}$/.test(endpoint)) k.singles += n;
    else if (/\{[a-z_]+\}\//.test(endpoint)) k.children += n;
    else k.lists += n;
  }
  return k;
}

/** Requests the sandbox charged to the organization so far. */
function charged(e: E2E): number {
  return e.sandbox.requestLog().byOrganization[e.sandbox.organizations()[0]!.organization_id] ?? 0;
}

/**
 * The sandbox numbers records newest first; some older ones changed since make the ids'
 * order (the order of a page) differ from the order of change.
 */
function changeSome(e: E2E): void {
  e.sandbox.mutate({ modify: '40%', streams: TOP.filter((s) => s.detail && s.cursor).map((s) => `${s.family}.${s.name}`) });
  e.sandbox.advanceClock(60_000);
}

// One request at a time, so the order svcsync takes its queue in is the order the server sees.
const LIMITS = { concurrency: 1 };

// Timestamps in one offset, and (the spec shows both) in mixed offsets whose text order is not their time order.
const CASES = DIALECTS.flatMap((dialect) => [false, true].map((mixedOffsets) => ({ dialect, mixedOffsets })));

describe.each(CASES)('a quota-bound first sync on $dialect (mixed offsets: $mixedOffsets)', ({ dialect, mixedOffsets }) => {
  let e: E2E | undefined;
  afterEach(async () => {
    await e?.close();
    e = undefined;
  });

  it('delivers every header on day 1, then the newest details; later days finish it, nothing lost or read twice', async () => {
    const sandbox: SandboxOptions = { seed: 23, scale: 20, organizations: 1, variants: { mixedOffsets } };
    const connection = { families: [...FAMILIES] };

    // What a whole first sync asks, measured on a sandbox without limits.
    // A new connection's checks of its shortcuts re-read a few records on purpose (docs/assumptions.md,
    // "Shortcuts that check themselves"); they are off here, where every record must be read exactly once.
    const sync = { shortcut_checks: { new_connection: 0, sample_percent: 0, at_least_every_days: 0 } };
    const m = await startE2E(dialect, { ...sandbox, unlimited: true }, { connection: { ...connection, limits: LIMITS }, sync });
    let whole: ReturnType<typeof kinds>;
    try {
      changeSome(m);
      expectExit(await m.sync(), 0);
      whole = kinds(m.sandbox.requestLog().byEndpoint);
    } finally {
      await m.close();
    }
    expect(whole.singles).toBeGreaterThan(0);
    // A day's budget: every list page, and half of the single-record reads and child lists.
    const budget = whole.lists + Math.floor((whole.singles + whole.children) / 2);

    e = await startE2E(dialect, sandbox, { connection: { ...connection, limits: { ...LIMITS, per_day: budget, reserve: 0 } }, sync });
    const org = e.sandbox.organizations()[0]!.organization_id;
    changeSome(e);
    const first = await e.sync();
    expectExit(first, 4);
    const outcome = first.organizations.find((o) => o.organizationId === org)!;
    expect(outcome.status).toBe('quota');
    expect(charged(e)).toBe(budget);
    // Every request the organization was charged is reported by the stream that made it.
    expect(outcome.streams.reduce((a, s) => a + s.requests, 0)).toBe(budget);

    // Every header on day 1: each top-level stream's list rows are all in the warehouse.
    for (const stream of TOP) {
      expect(await e.liveIds(org, stream.family, stream.name), `${stream.family}.${stream.name}`).toEqual(
        truthIds(e.sandbox, org, stream.family, stream.name),
      );
    }
    // No top-level stream was skipped: one whose details the quota cut off reports 'quota' with what it did.
    const tops = outcome.streams.filter((s) => TOP.some((t) => `${t.family}.${t.name}` === s.stream));
    expect(tops.map((s) => s.stream).sort()).toEqual(TOP.map((t) => `${t.family}.${t.name}`).sort());
    for (const s of tops) expect(['ok', 'quota'], `${s.stream}: ${s.status} ${s.error ?? ''}`).toContain(s.status);
    const cut = tops.filter((s) => s.status === 'quota');
    expect(cut.length).toBeGreaterThan(0);
    for (const s of cut) expect(s.records, s.stream).toBeGreaterThan(0);

    // The details read are the newest: every record read is at least as recent as every one still queued.
    let read = 0;
    let queued = 0;
    for (const stream of TOP.filter((s) => s.detail?.defaultEnabled && s.cursor)) {
      const name = `${stream.family}.${stream.name}`;
      const p = e.warehouse.sql.param(1);
      const pending = new Set(
        (await e.query<{ item_id: string }>(`SELECT item_id FROM _svcsync_pending WHERE stream = ${p} AND kind = 'detail'`, [name])).map(
          (r) => r.item_id,
        ),
      );
      const id = ID_FIELDS[stream.family][stream.name]!;
      const changed = new Map(
        e.sandbox.truth(org, stream.family, stream.name).map((r) => [String(r[id]), instant(r[stream.cursor!.field])]),
      );
      const done = [...changed.keys()].filter((i) => !pending.has(i));
      read += done.length;
      queued += pending.size;
      if (done.length === 0 || pending.size === 0) continue;
      const oldestRead = Math.min(...done.map((i) => changed.get(i)!));
      const newestQueued = Math.max(...[...pending].map((i) => changed.get(i)!));
      expect(oldestRead, `${name}: a record read is older than one still queued`).toBeGreaterThanOrEqual(newestQueued);
    }
    expect(read).toBeGreaterThan(0);
    expect(queued).toBeGreaterThan(0);

    // The next days (the quota resets with each) finish the sync.
    let exit = first.exitCode;
    for (let day = 2; exit !== 0 && day <= 4; day++) {
      e.sandbox.advanceClock(DAY);
      const summary = await e.sync();
      exit = summary.exitCode;
      if (exit !== 0) expectExit(summary, 4);
    }
    expect(exit).toBe(0);
    await expectEqualsTruth(e, { families: FAMILIES });
    // Nothing read twice: each single record was fetched once over the days, as in one unlimited sync.
    expect(kinds(e.sandbox.requestLog().byEndpoint).singles).toBe(whole.singles);
    const left = await e.query<{ n: number | string }>('SELECT COUNT(*) AS n FROM _svcsync_pending');
    expect(Number(left[0]!.n)).toBe(0);
  }, 180_000);
});

describe.each(DIALECTS)('a first sync stopped among its details on %s', (dialect) => {
  let e: E2E | undefined;
  afterEach(async () => {
    await e?.close();
    e = undefined;
  });

  it('has every header committed, and reports each stream it started as stopped with what it committed', async () => {
    e = await startE2E(dialect, { seed: 23, scale: 20, organizations: 1, unlimited: true }, { connection: { families: [...FAMILIES] } });
    const sandbox = e.sandbox;
    const org = sandbox.organizations()[0]!.organization_id;
    // Asked before every request: the stop comes once the first single record has been asked for.
    const stop = { reason: () => (kinds(sandbox.requestLog().byEndpoint).singles > 0 ? 'asked to stop' : null) };
    const error = await e.sync('incremental', { stop }).catch((x: unknown) => x);
    expect(error).toBeInstanceOf(RunStopped);
    const outcome = (error as RunStopped).summary.organizations.find((o) => o.organizationId === org)!;
    expect(outcome.status).toBe('stopped');
    for (const stream of TOP) {
      const name = `${stream.family}.${stream.name}`;
      const truth = truthIds(sandbox, org, stream.family, stream.name);
      expect(await e.liveIds(org, stream.family, stream.name), name).toEqual(truth);
      // One outcome per stream: none skipped, the unfinished ones stopped with the list records they committed.
      const reported = outcome.streams.filter((s) => s.stream === name);
      expect(reported.length, name).toBe(1);
      expect(['ok', 'stopped'], `${name}: ${reported[0]!.status}`).toContain(reported[0]!.status);
      expect(reported[0]!.records, name).toBe(truth.length);
    }
    expect(outcome.streams.filter((s) => s.status === 'stopped').length).toBeGreaterThan(1);

    expectExit(await e.sync(), 0);
    await expectEqualsTruth(e, { families: FAMILIES });
  }, 120_000);
});

import { describe, expect, it } from 'vitest';
import type { Warehouse } from '../../src/loaders/warehouse.js';
import {
  authorizationOf,
  freshness,
  healthVerdict,
  organizationHealth,
  readinessVerdict,
  sortOrganizations,
  STUCK_TICK_MS,
  type Health,
  type StreamHealthInput,
} from '../../src/scheduler/surface/health.js';
import { WarehouseProbe } from '../../src/scheduler/surface/readiness.js';

const NOW = Date.parse('2026-11-23T12:00:00Z');
const ago = (s: number): string => new Date(NOW - s * 1000).toISOString();

function stream(over: Partial<StreamHealthInput> = {}): StreamHealthInput {
  return { stream: 'books.invoices', lastStatus: 'ok', lastError: null, lastSuccessAt: ago(60), expectedEverySeconds: 900, ...over };
}

describe('freshness', () => {
  it.each([
    ['just synced', { lastSuccessAt: ago(60), expectedEverySeconds: 900 }, 'fresh'],
    ['1.5 periods and a minute', { lastSuccessAt: ago(900 * 1.5 + 60), expectedEverySeconds: 900 }, 'fresh'],
    ['two periods', { lastSuccessAt: ago(1800), expectedEverySeconds: 900 }, 'late'],
    ['four periods', { lastSuccessAt: ago(3600), expectedEverySeconds: 900 }, 'stale'],
    ['never', { lastSuccessAt: null, expectedEverySeconds: 900 }, 'never'],
    ['not scheduled', { lastSuccessAt: ago(99_999), expectedEverySeconds: null }, 'unscheduled'],
    // An offset is an instant like any other.
    ['an offset timestamp', { lastSuccessAt: '2026-11-23T17:29:00+0530', expectedEverySeconds: 900 }, 'fresh'],
  ] as const)('%s', (_n, s, want) => {
    expect(freshness(s, NOW)).toBe(want);
  });
});

describe('organizationHealth', () => {
  it.each([
    ['all fresh', [stream()], null, 'ok', null],
    ['a late stream: ok, and says so', [stream({ lastSuccessAt: ago(1800) })], null, 'ok', '1 stream late: books.invoices'],
    [
      'a failed stream',
      [stream({ lastStatus: 'failed', lastError: 'boom' }), stream({ stream: 'books.bills' })],
      null,
      'failing',
      '1 stream failing: books.invoices',
    ],
    ['a stale stream', [stream({ lastSuccessAt: ago(7200) })], null, 'stale', '1 stream stale: books.invoices'],
    ['never synced', [stream({ lastSuccessAt: null, lastStatus: null })], null, 'waiting', '1 stream never synced: books.invoices'],
    ['no streams yet', [], null, 'waiting', 'not synced yet'],
    // A connection that cannot authorize fails every organization of it, whatever its streams did last.
    ['its connection cannot authorize', [stream()], 'acme', 'failing', 'connection acme cannot authorize'],
    [
      'four failed streams',
      ['a', 'b', 'c', 'd'].map((n) => stream({ stream: `books.${n}`, lastStatus: 'partial', lastError: 'x' })),
      null,
      'failing',
      '4 streams failing: books.a, books.b, books.c, and 1 more',
    ],
    // A status other than ok without an error recorded (stopped between pages) is not a failure.
    ['stopped, no error', [stream({ lastStatus: 'stopped' })], null, 'ok', null],
  ] as const)('%s', (_n, streams, connection, state, reason) => {
    expect(organizationHealth(streams, connection, NOW)).toEqual({ state, reason });
  });

  it('sorts failing, then stale, then waiting, then healthy organizations, by connection and name within each', () => {
    const org = (id: string, state: Health, connection = 'main') => ({ connection, organizationId: id, name: `Org ${id}`, state });
    const sorted = sortOrganizations([
      org('1', 'ok'),
      org('4', 'waiting'),
      org('2', 'stale'),
      org('3', 'failing', 'b'),
      org('5', 'failing', 'a'),
    ]);
    expect(sorted.map((o) => o.organizationId)).toEqual(['5', '3', '2', '4', '1']);
  });
});

describe('authorizationOf: what one run says about its connection', () => {
  const refused = {
    connection: 'acme',
    kind: 'authorization' as const,
    error: 'the token request was refused (invalid_client_secret)\n  → check client_id and client_secret of connection acme',
  };
  it.each([
    [
      'a refused token: the error and its hint apart',
      [refused],
      5,
      { result: 'refused', error: refused.error.split('\n')[0], hint: refused.error.split('→ ')[1] },
    ],
    ['answered requests and no refusal: accepted', [], 3, { result: 'ok', error: null, hint: null }],
    ['another connection refused: says nothing of this one', [{ ...refused, connection: 'other' }], 0, null],
    [
      'a failure of another kind and nothing answered: cannot tell',
      [{ connection: 'acme', kind: 'retriable' as const, error: '503' }],
      0,
      null,
    ],
    ['nothing sent: cannot tell', [], 0, null],
    ['an error without a hint', [{ ...refused, error: 'refused' }], 0, { result: 'refused', error: 'refused', hint: null }],
  ] as const)('%s', (_n, failures, answered, want) => {
    const got = authorizationOf('acme', failures, answered, NOW);
    expect(got).toEqual(want === null ? null : { connection: 'acme', at: NOW, ...want });
  });
});

describe('healthVerdict (/healthz)', () => {
  const conn = (name: string, state: 'ok' | 'failing' | 'unknown') => ({
    connection: name,
    state,
    authorization: state === 'failing' ? { error: 'refused', hint: 'fix the secret', failingSince: ago(60) } : null,
  });
  const orgs = (failing: number, total: number) =>
    Array.from({ length: total }, (_, i) => ({
      connection: 'main',
      organizationId: String(i),
      state: i < failing ? ('failing' as const) : ('ok' as const),
      stateReason: i < failing ? 'x failing' : null,
    }));
  it.each([
    ['all well', [conn('main', 'ok')], orgs(0, 4), 0.5, 'ok'],
    ['a connection that cannot authorize, even without organizations', [conn('main', 'ok'), conn('broken', 'failing')], [], 0.5, 'failing'],
    ['half failing is not more than half', [conn('main', 'ok')], orgs(2, 4), 0.5, 'ok'],
    ['more than half failing', [conn('main', 'ok')], orgs(3, 4), 0.5, 'failing'],
    ['one failing with a ratio of 0', [conn('main', 'ok')], orgs(1, 100), 0, 'failing'],
    ['all failing with a ratio of 1: organizations never make it unhealthy', [conn('main', 'ok')], orgs(4, 4), 1, 'ok'],
    ['a connection not checked yet is not failing', [conn('new', 'unknown')], [], 0.5, 'ok'],
  ] as const)('%s', (_n, connections, organizations, ratio, want) => {
    expect(healthVerdict({ connections, organizations }, ratio).status).toBe(want);
  });

  it('names what fails: the connections with error and hint, the count and ratio, a few organizations', () => {
    const v = healthVerdict({ connections: [conn('broken', 'failing')], organizations: orgs(12, 20) }, 0.5);
    expect(v.failingConnections).toEqual([{ connection: 'broken', error: 'refused', hint: 'fix the secret', since: ago(60) }]);
    expect(v.organizations).toMatchObject({ total: 20, failing: 12, ratio: 0.6, maxFailingRatio: 0.5 });
    expect(v.organizations.examples).toHaveLength(10);
    expect(v.organizations.examples[0]).toEqual({ connection: 'main', organizationId: '0', reason: 'x failing' });
  });
});

describe('readinessVerdict (/healthz: can this process work?)', () => {
  const up = { reachable: true as const, ms: 3 };
  const down = { reachable: false as const, error: 'connect ECONNREFUSED 127.0.0.1:5432' };
  it.each([
    ['running, the warehouse answers', 'running', null, up, 'ok', []],
    ['a tick that runs a while is working', 'running', NOW - 60_000, up, 'ok', []],
    [
      'a tick that hangs',
      'running',
      NOW - STUCK_TICK_MS,
      up,
      'failing',
      ["the scheduler's tick has run for 10 min: no job starts until it ends; restart the process"],
    ],
    [
      'the warehouse does not answer',
      'running',
      null,
      down,
      'failing',
      ['the warehouse cannot be read: connect ECONNREFUSED 127.0.0.1:5432'],
    ],
    ['starting', 'starting', null, up, 'starting', ['starting: loading the organizations and the schedules']],
    // Starting or not, a warehouse it cannot read is the reason to give.
    [
      'starting without a warehouse',
      'starting',
      null,
      down,
      'failing',
      ['the warehouse cannot be read: connect ECONNREFUSED 127.0.0.1:5432'],
    ],
  ] as const)('%s', (_n, state, tickSince, warehouse, status, reasons) => {
    const v = readinessVerdict({ state, tickSince }, warehouse, NOW);
    expect(v.status).toBe(status);
    expect(v.reasons).toEqual(reasons);
    expect(v.warehouse.reachable).toBe(warehouse.reachable);
  });

  it('takes nothing of the fleet: no connection or organization is an input', () => {
    expect(readinessVerdict({ state: 'running', tickSince: NOW - 5_000 }, up, NOW)).toEqual({
      status: 'ok',
      reasons: [],
      jobs: { state: 'running', tickRunningSeconds: 5 },
      warehouse: { reachable: true, ms: 3, error: null },
    });
  });
});

describe('WarehouseProbe', () => {
  /** A warehouse whose queries answer when the test says. */
  function stalled(): { warehouse: Pick<Warehouse, 'db'>; queries: () => number; answer: () => void } {
    let queries = 0;
    const waiting: Array<() => void> = [];
    const db = {
      executeQuery: () => {
        queries++;
        return new Promise((resolve) => waiting.push(() => resolve({ rows: [] })));
      },
    };
    return {
      warehouse: { db } as unknown as Pick<Warehouse, 'db'>,
      queries: () => queries,
      answer: () => waiting.splice(0).forEach((w) => w()),
    };
  }

  it('a warehouse that does not answer in time is unreachable; probes meanwhile share the one query in flight', async () => {
    const w = stalled();
    const probe = new WarehouseProbe(w.warehouse, 50);
    const [a, b] = await Promise.all([probe.probe(), probe.probe()]);
    expect(a).toEqual({ reachable: false, error: 'it did not answer SELECT 1 within 0.05 s' });
    expect(b).toBe(a);
    expect(w.queries()).toBe(1);
    w.answer();
    // The next probe asks again.
    const next = probe.probe();
    w.answer();
    expect(await next).toMatchObject({ reachable: true });
    expect(w.queries()).toBe(2);
  });

  it('a query that fails is unreachable, with the error', async () => {
    const db = { executeQuery: () => Promise.reject(new Error('database "gone" does not exist')) };
    const probe = new WarehouseProbe({ db } as unknown as Pick<Warehouse, 'db'>, 1_000);
    expect(await probe.probe()).toEqual({ reachable: false, error: 'database "gone" does not exist' });
  });
});

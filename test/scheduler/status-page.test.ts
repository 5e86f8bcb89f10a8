import { describe, expect, it } from 'vitest';
import type { StatusDocument, StatusOrganization, StatusStream } from '../../src/scheduler/status-document.js';
import { age, freshness, health, renderStatusPage, sortForPage } from '../../src/scheduler/status-page.js';

const NOW = Date.parse('2026-11-23T12:00:00Z');
const ago = (s: number): string => new Date(NOW - s * 1000).toISOString();

function stream(over: Partial<StatusStream> = {}): StatusStream {
  return {
    stream: 'books.invoices',
    cursor: null,
    inProgress: null,
    lastStatus: 'ok',
    lastFinishedAt: ago(60),
    lastSuccessAt: ago(60),
    expectedEverySeconds: 900,
    lastError: null,
    rows: 10,
    deleted: 0,
    pending: 0,
    drift: [],
    ...over,
  };
}

function org(id: string, streams: StatusStream[], over: Partial<StatusOrganization> = {}): StatusOrganization {
  return {
    connection: 'main',
    organizationId: id,
    name: `Org ${id}`,
    families: ['books'],
    requestsToday: 250,
    budget: 1000,
    blockedUntil: null,
    budgetLeft: 750,
    nextRuns: [],
    streams,
    ...over,
  };
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

describe('health and order', () => {
  const failing = org('3', [stream({ lastStatus: 'failed', lastError: 'token refused\n  → run svcsync auth' })]);
  const stale = org('2', [stream({ lastSuccessAt: ago(7200) })]);
  const ok = org('1', [stream()]);
  const waiting = org('4', [stream({ lastSuccessAt: null, lastStatus: null })]);
  it('names the worst state of an organization', () => {
    expect([failing, stale, ok, waiting].map((o) => health(o, NOW))).toEqual(['failing', 'stale', 'ok', 'waiting']);
  });
  it('sorts failing, then stale, then waiting, then healthy organizations', () => {
    expect(sortForPage([ok, waiting, stale, failing], NOW).map((o) => o.organizationId)).toEqual(['3', '2', '4', '1']);
  });
});

describe('renderStatusPage', () => {
  const doc: StatusDocument = {
    version: '1.2.3',
    generatedAt: new Date(NOW).toISOString(),
    queue: null,
    daemon: {
      startedAt: ago(3600),
      running: [{ job: 'main/1/incremental', connection: 'main', organizationId: '1', streams: ['books.invoices'] }],
      hooks: [{ connection: 'main', active: true }],
      hookRunsDue: [],
      hookFallbacks: [{ connection: 'main', organizationId: '2', at: ago(10), reason: 'budget low: hooks fall back to the schedule' }],
      nextRuns: [{ job: 'main/1/incremental', connection: 'main', organizationId: '1', at: '2026-11-23T12:15:00.000Z' }],
    },
    organizations: [
      org('1', [stream()]),
      org('2', [stream({ lastStatus: 'failed', lastError: 'boom <script>alert(1)</script>' })], {
        name: 'Acme & Sons',
        requestsToday: 1000,
      }),
    ],
  };
  const html = renderStatusPage(doc, 'acme', NOW);

  it('puts the failing organization first, escaped, with its error', () => {
    expect(html.indexOf('Acme &amp; Sons')).toBeLessThan(html.indexOf('Org 1'));
    expect(html).toContain('boom &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).not.toContain('<script>alert(1)');
  });
  it('shows the budget bars, what runs, the next run and the webhook state', () => {
    expect(html).toContain('aria-valuenow="250" aria-valuemax="1000"');
    expect(html).toMatch(/<span class="full" style="width:100\.0%">/);
    expect(html).toContain('running incremental');
    expect(html).toContain('next run 2026-11-23 12:15 (incremental)');
    expect(html).toContain('webhooks on — fell back to the schedule: budget low');
  });
  it('pre-fills the filter and fetches nothing from elsewhere', () => {
    expect(html).toContain('value="acme"');
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(html.length).toBeLessThan(20_000);
  });
});

describe('age', () => {
  it.each([
    [5_000, '5 s'],
    [600_000, '10 min'],
    [7_200_000, '2 h'],
    [3 * 86_400_000, '3 d'],
  ])('%i ms → %s', (ms, want) => {
    expect(age(ms)).toBe(want);
  });
});

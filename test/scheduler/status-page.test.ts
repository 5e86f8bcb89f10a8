import { describe, expect, it } from 'vitest';
import { renderConnections, renderStatus } from '../../src/cli/commands/status.js';
import type { StatusConnection, StatusDocument, StatusOrganization, StatusStream } from '../../src/scheduler/surface/status-document.js';
import type { LiveFreshness } from '../../src/scheduler/surface/live-status.js';
import { age, renderStatusPage, streamCode, timeTag } from '../../src/scheduler/surface/status-page.js';

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
    state: 'ok',
    stateReason: null,
    requestsToday: 250,
    budget: 1000,
    blockedUntil: null,
    budgetLeft: 750,
    projectedToday: { requests: 800, fits: true },
    nextRuns: [],
    streams,
    ...over,
  };
}

function connection(name: string, over: Partial<StatusConnection> = {}): StatusConnection {
  return {
    connection: name,
    state: 'ok',
    authorization: { result: 'ok', at: ago(120), error: null, hint: null, failingSince: null, lastOkAt: ago(120) },
    families: ['books'],
    organizations: 2,
    webhooks: true,
    ...over,
  };
}

const refused: StatusConnection = connection('broken', {
  state: 'failing',
  authorization: {
    result: 'refused',
    at: ago(30),
    error: 'the token request was refused (invalid_client_secret)',
    hint: 'check client_id and client_secret of connection broken',
    failingSince: ago(600),
    lastOkAt: null,
  },
  organizations: 0,
  webhooks: false,
});

describe('streamCode: a heat-map cell', () => {
  it.each([
    [stream(), 'F'],
    [stream({ lastSuccessAt: ago(1800) }), 'L'],
    [stream({ lastSuccessAt: ago(7200) }), 'S'],
    [stream({ lastSuccessAt: null, lastStatus: null }), 'N'],
    [stream({ expectedEverySeconds: null }), 'U'],
    // A failed last run shows as failed however recent the last success.
    [stream({ lastStatus: 'failed', lastError: 'boom' }), 'X'],
  ])('%#', (s, code) => {
    expect(streamCode(s, NOW)).toBe(code);
  });
});

describe('renderStatusPage', () => {
  const doc: StatusDocument = {
    version: '1.2.3',
    generatedAt: new Date(NOW).toISOString(),
    queue: null,
    connections: [refused, connection('main')],
    daemon: {
      startedAt: ago(3600),
      running: [{ job: 'main/1/incremental', connection: 'main', organizationId: '1', streams: ['books.invoices'] }],
      hookRunsDue: [],
      hookFallbacks: [],
      nextRuns: [{ job: 'main/2/incremental', connection: 'main', organizationId: '2', at: '2026-11-23T12:15:00.000Z' }],
    },
    organizations: [
      org('1', [stream(), stream({ stream: 'books.bills', lastSuccessAt: ago(1800) })]),
      org('2', [stream({ lastStatus: 'failed', lastError: 'boom <script>alert(1)</script>' })], {
        name: 'Acme & Sons',
        state: 'failing',
        stateReason: '1 stream failing: books.invoices',
        requestsToday: 1000,
        projectedToday: { requests: 1100, fits: false },
      }),
    ],
  };
  const html = renderStatusPage(doc, 'acme', NOW);

  it('lists every connection, the one that cannot authorize first, with its error and hint once', () => {
    const connections = html.slice(html.indexOf('id="connections"'), html.indexOf('</ul>'));
    expect(connections.indexOf('data-connection="broken"')).toBeLessThan(connections.indexOf('data-connection="main"'));
    expect(connections).toContain('cannot authorize');
    expect(html.split('invalid_client_secret').length - 1).toBe(1);
    expect(html.split('→ check client_id').length - 1).toBe(1);
    expect(html).toContain('<data value="1">1</data> of <data value="2">2</data> connections cannot authorize');
  });
  it('says webhooks are on from the configuration, with or without a daemon (a worker has none)', () => {
    expect(html).toMatch(/data-connection="main"[^]*?webhooks on/);
    const worker = renderStatusPage({ ...doc, daemon: null }, '', NOW);
    expect(worker).toMatch(/data-connection="main"[^]*?webhooks on/);
    expect(worker).toMatch(/data-connection="broken"[^]*?webhooks off/);
  });
  it('puts the failing organization first, escaped, collapsed to one line with why', () => {
    expect(html.indexOf('Acme &amp; Sons')).toBeLessThan(html.indexOf('Org 1'));
    expect(html).toContain('1 stream failing: books.invoices');
    // The error itself loads with the streams, from /status.json, and is never put in the page unescaped.
    expect(html).not.toContain('<script>alert(1)');
    expect(html.match(/<details class="org"/g)).toHaveLength(2);
    expect(html).not.toMatch(/<details class="org"[^>]* open/);
  });
  it('gives the heat map one letter per stream in a shared stream order, and the budget figures', () => {
    expect(html).toContain('data-streams="books.bills,books.invoices"');
    expect(html).toMatch(/data-id="2" data-state="failing" data-f="\.X" data-u="1000" data-b="1000" data-p="1100"/);
    expect(html).toMatch(/data-id="1" data-state="ok" data-f="LF" data-u="250" data-b="1000" data-p="800"/);
  });
  it('shows the budget bars, the projected end of day, what runs and the next run', () => {
    expect(html).toContain('aria-valuenow="250" aria-valuemax="1000"');
    expect(html).toMatch(/<span class="full" style="width:100\.0%">/);
    // Counts grouped, with their values for the script to group again in the reader's locale.
    expect(html).toContain('<data value="250">250</data> / <data value="1000">1,000</data>');
    expect(html).toContain('<span class="over" data-projected>~<data value="1100">1,100</data> by day\'s end</span>');
    expect(html).toContain('<span data-projected>~<data value="800">800</data> by day\'s end</span>');
    expect(html).toContain('running incremental');
    expect(html).toMatch(/next <time datetime="2026-11-23T12:15:00.000Z"[^>]*>in 15 min<\/time> \(incremental\)/);
  });
  it('counts organizations by state as filter buttons', () => {
    expect(html).toContain('data-state="failing" aria-pressed="false"><data value="1">1</data> failing</button>');
    expect(html).toContain('data-state="ok" aria-pressed="false"><data value="1">1</data> ok</button>');
  });
  it('pre-fills the filter and fetches nothing from elsewhere', () => {
    expect(html).toContain('value="acme"');
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
  });
});

describe('the freshness plan on the status page', () => {
  const plan = (id: string, short: boolean): LiveFreshness => ({
    connection: 'main',
    organizationId: id,
    short,
    streams: [
      {
        stream: 'inventory.sales_orders',
        state: 'fresher',
        changesPerDay: 240,
        intervalMinutes: 17.6,
        nextPollAt: '2026-11-23T12:10:00.000Z',
        p95Minutes: 16.7,
      },
      {
        stream: 'books.credit_notes',
        state: short ? 'budget' : 'quiet',
        changesPerDay: 0.4,
        intervalMinutes: 720,
        nextPollAt: '2026-11-23T20:00:00.000Z',
        p95Minutes: null,
      },
    ],
  });
  const docWith = (plans: LiveFreshness[]): StatusDocument => ({
    version: '1.2.3',
    generatedAt: new Date(NOW).toISOString(),
    queue: null,
    connections: [connection('main')],
    daemon: { startedAt: ago(60), running: [], hookRunsDue: [], hookFallbacks: [], nextRuns: [], freshness: plans },
    organizations: plans.map((p) => org(p.organizationId, [stream()], { name: `Org ${p.organizationId} <b>` })),
  });

  it("shows each kept-fresh stream's rate, interval, next poll and predicted staleness, the organization's name escaped", () => {
    const html = renderStatusPage(docWith([plan('1', false)]), '', NOW);
    const table = html.slice(html.indexOf('id="freshness-plan"'), html.indexOf('</table>'));
    expect(table).toContain('<th scope="rowgroup" rowspan="2">Org 1 &lt;b&gt;</th>');
    expect(table).toMatch(
      /inventory\.sales_orders<\/td><td>fresher than its target \(spare budget\)<\/td><td>240<\/td><td>18 min<\/td><td><time datetime="2026-11-23T12:10:00.000Z"[^>]*>in 10 min<\/time><\/td><td>17 min<\/td>/,
    );
    expect(table).toMatch(/books\.credit_notes<\/td><td>quiet: no changes expected<\/td><td>0\.4<\/td><td>12 h<\/td>.*<td>—<\/td>/);
    expect(html).toContain('1 organization kept fresh; every day holds its plan');
    expect(html).not.toContain('budget short today');
  });

  it("names the streams a short day delays on the organization's line", () => {
    const html = renderStatusPage(docWith([plan('1', true)]), '', NOW);
    expect(html).toMatch(/<details class="org"[^>]*data-id="1"[^]*budget short today: polled less often: books\.credit_notes/);
    expect(html).toContain('<tr data-state="budget">');
    expect(html).toContain('1 organization kept fresh; 1 short of budget today');
  });

  it('on a fleet, lists only the organizations short of budget', () => {
    const plans = Array.from({ length: 30 }, (_, i) => plan(String(i + 1), i === 4 || i === 17));
    const html = renderStatusPage(docWith(plans), '', NOW);
    expect(html.match(/<th scope="rowgroup"/g)).toHaveLength(2);
    expect(html).toContain('30 organizations kept fresh; 2 short of budget today (showing 2 short of budget)');
    expect(html).toContain('>Org 5 &lt;b&gt;</th>');
    expect(html).toContain('>Org 18 &lt;b&gt;</th>');
  });

  it('has no freshness section without a plan (cron schedules, a worker)', () => {
    expect(renderStatusPage(docWith([]), '', NOW)).not.toContain('aria-label="Freshness"');
    expect(renderStatusPage({ ...docWith([plan('1', false)]), daemon: null }, '', NOW)).not.toContain('aria-label="Freshness"');
  });
});

describe('svcsync status (text)', () => {
  it('lists every connection first, the failing one with its error and hint', () => {
    const lines = renderConnections([refused, connection('main'), connection('new', { state: 'unknown', authorization: null })]);
    expect(lines[0]).toMatch(/^connection broken: FAILING — cannot authorize since .*; nothing of it syncs \(0 organizations\)$/);
    expect(lines[1]).toBe('  the token request was refused (invalid_client_secret)');
    expect(lines[2]).toBe('  → check client_id and client_secret of connection broken');
    expect(lines[3]).toMatch(/^connection main: ok — authorized /);
    expect(lines[4]).toMatch(/^connection new: not checked yet/);
  });
  it('with no organization yet, still shows the connections', () => {
    const text = renderStatus([], [refused]);
    expect(text).toContain('connection broken: FAILING');
    expect(text).toContain('Nothing synced yet');
  });
  it("says each organization's state and its projected end of day", () => {
    const text = renderStatus([org('2', [stream()], { state: 'failing', stateReason: 'connection broken cannot authorize' })]);
    expect(text).toContain('  failing: connection broken cannot authorize');
    expect(text).toContain('about 800 by the end of the day');
  });
});

describe('times', () => {
  it.each([
    [5_000, '5 s'],
    [600_000, '10 min'],
    [7_200_000, '2 h'],
    [3 * 86_400_000, '3 d'],
  ])('%i ms → %s', (ms, want) => {
    expect(age(ms)).toBe(want);
  });
  it('"12 min ago" with the instant in datetime (the script puts the local time on hover)', () => {
    expect(timeTag(ago(720), NOW)).toBe(`<time datetime="${ago(720)}">12 min ago</time>`);
    expect(timeTag('2026-11-23T12:05:00Z', NOW)).toContain('>in 5 min</time>');
  });
});

/**
 * The requests scenario of `npm run bench`: what the API quota pays for, and the freshness it
 * buys, on the free plan. Requests are counted by the sandbox (organization-scoped requests,
 * what a plan's daily quota counts), never timed. For each organization (bench/week.ts):
 *
 * 1. First sync: one `svcsync sync` of the whole catalog on an empty warehouse, its requests by
 *    kind (list pages, single-record reads, child lists), and the days it takes on each plan's
 *    usable quota (the daily quota less the reserve).
 * 2. `svcsync plan`'s prediction of the busiest day, read before the week.
 * 3. A simulated week of the daemon on the sandbox's clock at the organization's change rate
 *    (changes at seeded random instants of the working hours): requests per day (busiest and
 *    mean) and the staleness of every change, from the change in the sandbox to its row in the
 *    warehouse.
 *
 * The organizations: the reference one (5,000 sales orders, 2,000 contacts, 50,000 events,
 * 300 projects; 250 orders and 100 contacts modified and 1,000 events created a day), one of
 * the same size changing ten times faster, and a small one, a twentieth of the reference in
 * records and changes.
 */
import type { Plan } from '../src/config/plans.js';
import { runWeek, type ChangeRate, type WeekFigures, type WeekOrganization } from './week.js';

/** The reference organization: records per top-level stream (the others at the sandbox's scale of 50). */
export const REFERENCE: Readonly<Record<string, number>> = {
  'inventory.sales_orders': 5_000,
  'inventory.contacts': 2_000,
  'billing.events': 50_000,
  'inventory.vendor_credits': 1_000,
  'books.vendor_credits': 1_000,
  'invoice.projects': 300,
};

/** Changes a day in steady state: sales orders and contacts modified, events created. */
export const DAILY_CHANGES: Readonly<ChangeRate> = { orders: 250, contacts: 100, events: 1_000 };

const REFERENCE_SCALE = 50;

export interface RequestsOptions {
  /** Divides every count of every organization and its change rate (a quick look). */
  divide: number;
  perPage: number;
  plan: Plan;
  /** Simulated days of the daemon (default 7). */
  days?: number;
  /** Only these organizations (`reference`, `ten-times-faster`, `small`); all by default. */
  organizations?: readonly string[];
}

/** The reference organization's figures, and every organization's under its name. */
export type RequestsFigures = WeekFigures & { organizations: Record<string, WeekFigures> };

const scaled = (n: number, by: number): number => Math.max(1, Math.round(n / by));

function shrink(records: Readonly<Record<string, number>>, by: number): Record<string, number> {
  return Object.fromEntries(Object.entries(records).map(([k, n]) => [k, scaled(n, by)]));
}

function rate(r: ChangeRate, times: number, divide: number): ChangeRate {
  return {
    orders: scaled(r.orders * times, divide),
    contacts: scaled(r.contacts * times, divide),
    events: scaled(r.events * times, divide),
  };
}

/** The three organizations of the scenario, every count divided by `divide`. */
export function benchOrganizations(divide: number): WeekOrganization[] {
  return [
    {
      name: 'reference',
      records: shrink(REFERENCE, divide),
      scale: scaled(REFERENCE_SCALE, divide),
      changes: rate(DAILY_CHANGES, 1, divide),
    },
    {
      name: 'ten-times-faster',
      records: shrink(REFERENCE, divide),
      scale: scaled(REFERENCE_SCALE, divide),
      changes: rate(DAILY_CHANGES, 10, divide),
    },
    {
      name: 'small',
      records: shrink(REFERENCE, 20 * divide),
      scale: scaled(REFERENCE_SCALE, 20 * divide),
      changes: rate(DAILY_CHANGES, 1, 20 * divide),
    },
  ];
}

export async function runRequestsBench(
  opts: RequestsOptions,
  progress: (line: string) => void = () => undefined,
): Promise<RequestsFigures> {
  const organizations: Record<string, WeekFigures> = {};
  const wanted = benchOrganizations(opts.divide).filter((o) => !opts.organizations || opts.organizations.includes(o.name));
  for (const organization of wanted) {
    const f = await runWeek({ organization, days: opts.days ?? 7, perPage: opts.perPage, plan: opts.plan });
    progress(
      `${f.name}: first sync ${fmt(f.firstSync.requests)} requests; busiest day ${fmt(f.steady.busiestDay)}, ` +
        `mean ${fmt(f.steady.meanDay)}, plan predicted ${fmt(f.steady.predictedDay)} (${fmt(f.elapsedS, 1)} s)`,
    );
    organizations[f.name] = f;
  }
  const top = organizations['reference'] ?? Object.values(organizations)[0];
  if (!top) throw new Error('no organization selected');
  return { ...top, organizations };
}

const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const mins = (n: number | null): string => (n === null ? '–' : fmt(n, 1));

function renderFirstSync(f: WeekFigures, lines: string[]): void {
  const k = f.firstSync.kinds;
  lines.push('| first sync | list pages | single reads | child lists | requests | organization lists (not charged) |');
  lines.push('|---|---:|---:|---:|---:|---:|');
  const kinds = [k.listPages, k.singleReads, k.childLists, f.firstSync.requests].map((n) => fmt(n));
  lines.push(`| whole catalog | ${kinds.join(' | ')} | ${k.organizationLists} |`);
  lines.push('');
  lines.push(`| plan | usable a day | days for the first sync |`);
  lines.push('|---|---:|---:|');
  for (const d of f.firstSyncDays) lines.push(`| ${d.plan} | ${fmt(d.usable)} | ${fmt(d.days, 1)} |`);
}

function renderClasses(f: WeekFigures, lines: string[]): void {
  const days = f.steady.days.length;
  lines.push(`The ${f.name} organization's week by job class (the requests each run reported; ${days} days):`);
  lines.push('');
  lines.push('| job class | schedule | runs | requests | per run | per day |');
  lines.push('|---|---|---:|---:|---:|---:|');
  for (const c of f.steady.classes)
    lines.push(
      `| ${c.jobClass} | \`${c.schedule}\` | ${c.runs} | ${fmt(c.requests)} | ${fmt(c.runs ? c.requests / c.runs : 0)} | ` +
        `${fmt(c.requests / days)} |`,
    );
}

const STALE_STREAMS = ['inventory.sales_orders', 'inventory.contacts', 'billing.events'];

function renderWeeks(all: WeekFigures[], lines: string[]): void {
  lines.push(
    '| organization | records (orders, contacts, events) | changes a day (orders, contacts, events) | first sync | ' +
      'plan predicted | busiest day | mean day | budget | ' +
      STALE_STREAMS.map((s) => `${s.split('.')[1]} p50 / p95 / max (min)`).join(' | ') +
      ' |',
  );
  lines.push(`|---|---|---|---:|---:|---:|---:|---:|${STALE_STREAMS.map(() => '---:').join('|')}|`);
  for (const f of all) {
    const recs = STALE_STREAMS.map((s) => fmt(f.records[s] ?? 0)).join(', ');
    const ch = [f.changes.orders, f.changes.contacts, f.changes.events].map((n) => fmt(n)).join(', ');
    const stale = STALE_STREAMS.map((s) => {
      const x = f.steady.staleness[s];
      if (!x) return '–';
      // Changes that never landed count with their lag so far: the figures they reach are lower bounds.
      const atLeast = (share: number): string => (x.unlanded > share * x.changes ? '≥ ' : '');
      return `${atLeast(0.5)}${mins(x.p50Minutes)} / ${atLeast(0.05)}${mins(x.p95Minutes)} / ${atLeast(0)}${mins(x.maxMinutes)}`;
    });
    lines.push(
      `| ${f.name} | ${recs} | ${ch} | ${fmt(f.firstSync.requests)} | ${fmt(f.steady.predictedDay)} | ` +
        `${fmt(f.steady.busiestDay)} | ${fmt(f.steady.meanDay)} | ${fmt(f.steady.usable)} | ${stale.join(' | ')} |`,
    );
  }
}

function renderChecks(all: WeekFigures[], lines: string[]): void {
  for (const f of all) {
    const s = f.steady;
    const within = s.busiestDay <= s.usable ? 'met' : '**NOT met**';
    const unlanded = Object.values(s.staleness).reduce((a, x) => a + x.unlanded, 0);
    const changes = Object.values(s.staleness).reduce((a, x) => a + x.changes, 0);
    const skipped = Object.entries(s.skipped)
      .map(([k, n]) => `${n} ${k}`)
      .join(', ');
    const landed = unlanded ? `**no**, ${fmt(unlanded)} of ${fmt(changes)} never did` : 'yes';
    lines.push(
      `- ${f.name}: busiest day ${fmt(s.busiestDay)} within the ${s.plan} plan's ${fmt(s.usable)} — ${within}; ` +
        `days ${s.days.map((n) => fmt(n)).join(', ')}; every change landed: ${landed}` +
        (skipped ? `; fires skipped: ${skipped}` : '') +
        `; warehouse live rows = sandbox: ${f.idsMatch ? 'yes' : 'NO: ' + f.mismatches.join('; ')}`,
    );
  }
}

export function renderRequests(r: RequestsFigures): string {
  const all = Object.values(r.organizations);
  const lines: string[] = [];
  const recs = Object.entries(r.records)
    .map(([k, n]) => `${fmt(n)} ${k}`)
    .join(', ');
  lines.push(`Requests (scenario \`requests\`): the ${r.name} organization with ${recs}, the other streams at 50 records; per_page 200.`);
  lines.push(
    'Organization-scoped requests as the sandbox counted them (what the daily quota counts; token and organization-list calls apart).',
  );
  lines.push('');
  renderFirstSync(r, lines);
  lines.push('');
  lines.push(
    `Freshness within the quota: a simulated week of \`svcsync daemon\` (its own schedules and budget decisions, the ` +
      `${r.steady.plan} plan's daily quota) on the sandbox's clock, the changes at seeded random instants of 09:00–17:00 UTC ` +
      'every day. Staleness is from the change in the sandbox to the write of its row in the warehouse (`_synced_at`), in minutes.',
  );
  lines.push('');
  renderWeeks(all, lines);
  lines.push('');
  renderClasses(r, lines);
  lines.push('');
  renderChecks(all, lines);
  return lines.join('\n');
}

/**
 * The requests scenario of `npm run bench`: what the API quota pays for a reference
 * organization. Requests are counted by the sandbox (organization-scoped requests, what a plan's
 * daily quota counts), never timed, so the sandbox is unlimited and svcsync's client gates are
 * lifted; the plan's default schedules still decide when each job runs.
 *
 * 1. First sync: one `svcsync sync` of the whole catalog on an empty warehouse, its requests by
 *    kind (list pages, single-record reads, child lists), and the days it takes on each plan's
 *    usable quota (the daily quota less the reserve).
 * 2. Steady state: days of the daemon's jobs as `resolveJobs` builds them for the plan (its
 *    default schedules), each fire run in time order on the sandbox's clock, with the stated
 *    change rate applied evenly between fires (orders and contacts modified, events created).
 *    The slow cycles roll (a share of the parents' child lists a day), so days differ a little:
 *    the busiest of `days` days is the figure.
 *
 * Runs in the driver's process (the sandbox too): nothing here is timed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { CompiledQuery } from 'kysely';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PLANS, dailyBudget, planLimits, type Plan } from '../src/config/plans.js';
import { parseConfig } from '../src/config/load.js';
import { createLogger } from '../src/core/logger.js';
import { SecretRegistry } from '../src/core/secrets.js';
import { runSync } from '../src/extractors/sync-run.js';
import type { SyncMode } from '../src/extractors/stream-pass.js';
import { migrateToLatest } from '../src/loaders/migrate.js';
import { openWarehouse, type Warehouse } from '../src/loaders/warehouse.js';
import { daemonCommand } from '../src/scheduler/planning/estimate.js';
import { readsWhole, resolveJobs, type JobSpec } from '../src/scheduler/timing/jobs.js';
import { findStream } from '../src/catalog/index.js';
import { startSandbox, type Family, type RequestLog } from '../sandbox/index.js';

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
export const DAILY_CHANGES = { orders: 250, contacts: 100, events: 1_000 } as const;

export interface RequestsOptions {
  /** Divides every count of the reference organization and the change rate (a quick look). */
  divide: number;
  perPage: number;
  /** Plan whose default schedules the steady-state day follows. */
  plan: Plan;
  /** Steady days simulated one after another (default 3; `npm run bench` runs 7); the busiest is reported. */
  days?: number;
}

export interface RequestKinds {
  listPages: number;
  singleReads: number;
  childLists: number;
  /** Organization lists: not organization-scoped, so not charged to its quota. */
  organizationLists: number;
}

export interface JobClassDay {
  /** The job class, `incremental (read whole)` for the trees read whole on every run. */
  jobClass: string;
  /** The cron expression(s) of the class's jobs. */
  schedule: string;
  fires: number;
  requests: number;
}

export interface RequestsFigures {
  records: Record<string, number>;
  changes: { orders: number; contacts: number; events: number };
  firstSync: { requests: number; kinds: RequestKinds; byEndpoint: Record<string, number> };
  /** Days of each plan's usable quota the first sync needs. */
  days: Array<{ plan: Plan; usable: number; days: number }>;
  /** The busiest steady day, and every simulated day's requests. */
  steady: { plan: Plan; usable: number; perDay: number; classes: JobClassDay[]; byEndpoint: Record<string, number>; days: number[] };
  /** svcsync's warehouse equals the sandbox after the day (live ids of every top-level stream). */
  idsMatch: boolean;
  mismatches: string[];
}

/** Organization-scoped requests of a log: what an organization's daily quota counts. */
function charged(log: RequestLog): number {
  return Object.values(log.byOrganization).reduce((a, n) => a + n, 0);
}

function kindsOf(byEndpoint: Record<string, number>): RequestKinds {
  const k: RequestKinds = { listPages: 0, singleReads: 0, childLists: 0, organizationLists: 0 };
  for (const [endpoint, n] of Object.entries(byEndpoint)) {
    if (endpoint.startsWith('POST /oauth')) continue;
    if (/\/organizations$/.test(endpoint)) k.organizationLists += n;
    else if (/\{[a-z_]+\}$/.test(endpoint)) k.singleReads += n;
    else if (/\{[a-z_]+\}\//.test(endpoint)) k.childLists += n;
    else k.listPages += n;
  }
  return k;
}

function diff(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, n] of Object.entries(after)) if (n - (before[k] ?? 0) > 0) out[k] = n - (before[k] ?? 0);
  return out;
}

/** Changes accrued over a span of the day, whole records, the fractions carried to the next span. */
class ChangeAccrual {
  private readonly carried = { orders: 0, contacts: 0, events: 0 };
  constructor(private readonly perDay: { orders: number; contacts: number; events: number }) {}

  take(ms: number): { orders: number; contacts: number; events: number } {
    const out = { orders: 0, contacts: 0, events: 0 };
    for (const k of ['orders', 'contacts', 'events'] as const) {
      const due = this.carried[k] + (this.perDay[k] * ms) / 86_400_000;
      out[k] = Math.floor(due);
      this.carried[k] = due - out[k];
    }
    return out;
  }
}

const DAY = 86_400_000;

function classLabel(job: JobSpec): string {
  const whole = job.jobClass === 'incremental' && job.trees.length > 0 && job.trees.every((t) => readsWhole(findStream(t)!));
  return whole ? 'incremental (read whole)' : job.jobClass;
}

export async function runRequestsBench(opts: RequestsOptions): Promise<RequestsFigures> {
  const records = Object.fromEntries(Object.entries(REFERENCE).map(([k, n]) => [k, Math.max(1, Math.round(n / opts.divide))]));
  const changes = {
    orders: Math.round(DAILY_CHANGES.orders / opts.divide),
    contacts: Math.round(DAILY_CHANGES.contacts / opts.divide),
    events: Math.round(DAILY_CHANGES.events / opts.divide),
  };
  const sandbox = await startSandbox({ seed: 42, organizations: 1, scale: 50, streamScale: records, unlimited: true });
  const dir = mkdtempSync(join(tmpdir(), 'svcsync-bench-requests-'));
  let warehouse: Warehouse | null = null;
  try {
    const secrets = new SecretRegistry();
    const url = `sqlite:${join(dir, 'warehouse.db')}`;
    const config = parseConfig(
      {
        warehouse: url,
        log_level: 'error',
        sync: { per_page: opts.perPage },
        connections: [
          {
            name: 'bench',
            accounts_url: sandbox.url,
            ...sandbox.credentials,
            plan: opts.plan,
            // Counted, not timed: the client's gates are lifted; the plan still picks the schedules.
            limits: { per_minute: 1_000_000_000, per_day: 1_000_000_000, concurrency: 10, reserve: 0 },
          },
        ],
      },
      { env: {}, secrets },
    );
    warehouse = await openWarehouse(url);
    await migrateToLatest(warehouse);
    const logger = createLogger({ level: 'error', secrets });
    const wh = warehouse;
    const run = (command: string, mode: SyncMode, job?: Pick<JobSpec, 'organizationId' | 'streams'>): Promise<unknown> =>
      runSync({
        config,
        warehouse: wh,
        clock: sandbox.clock,
        logger,
        secrets,
        signal: new AbortController().signal,
        command,
        mode,
        // The daemon's jobs follow the slow cycles as the daemon runs them.
        ...(job ? { organization: job.organizationId ?? undefined, streams: job.streams, wholeReadCycle: true } : {}),
      });

    // 1. The first sync.
    sandbox.resetRequestLog();
    await run('sync', 'incremental');
    const first = sandbox.requestLog();
    const firstSync = { requests: charged(first), kinds: kindsOf(first.byEndpoint), byEndpoint: { ...first.byEndpoint } };
    const days = PLANS.map((plan) => {
      const usable = dailyBudget(planLimits(plan));
      return { plan, usable, days: firstSync.requests / usable };
    });

    // 2. Days of the daemon's jobs, from the next midnight (UTC) on the sandbox's clock.
    const org = sandbox.organizations()[0]!;
    const families: Family[] = ['books', 'inventory', 'invoice', 'billing'];
    const jobs = resolveJobs(config, [{ connection: 'bench', organizationId: org.organization_id, families }], { backfill: false });
    const accrual = new ChangeAccrual(changes);
    const usable = dailyBudget(planLimits(opts.plan));
    let dayStart = Math.floor(sandbox.now() / DAY) * DAY + DAY;
    let last = dayStart;
    let steady: RequestsFigures['steady'] | null = null;
    const perDay: number[] = [];
    sandbox.advanceClock(Math.max(0, dayStart - sandbox.now()));
    for (let d = 0; d < (opts.days ?? 3); d++, dayStart += DAY) {
      const fires = jobs
        .flatMap((job) => job.cron.between(dayStart - 1, dayStart + DAY - 1).map((at) => ({ at, job })))
        .sort((a, b) => a.at - b.at || a.job.priority - b.job.priority);
      const classes = new Map<string, JobClassDay>();
      sandbox.resetRequestLog();
      for (const { at, job } of fires) {
        if (at > sandbox.now()) sandbox.advanceClock(at - sandbox.now());
        const due = accrual.take(at - last);
        last = at;
        if (due.orders) sandbox.mutate({ modify: due.orders, families: ['inventory'], streams: ['sales_orders'] });
        if (due.contacts) sandbox.mutate({ modify: due.contacts, families: ['inventory'], streams: ['contacts'] });
        if (due.events) sandbox.mutate({ create: due.events, families: ['billing'], streams: ['events'] });
        const before = charged(sandbox.requestLog());
        await run(daemonCommand(job), job.mode, job);
        const label = classLabel(job);
        const c = classes.get(label) ?? { jobClass: label, schedule: '', fires: 0, requests: 0 };
        if (!c.schedule.split(', ').includes(job.cron.expression))
          c.schedule = [c.schedule, job.cron.expression].filter(Boolean).join(', ');
        c.fires++;
        c.requests += charged(sandbox.requestLog()) - before;
        classes.set(label, c);
      }
      const day = sandbox.requestLog();
      perDay.push(charged(day));
      if (!steady || charged(day) > steady.perDay)
        steady = {
          plan: opts.plan,
          usable,
          perDay: charged(day),
          classes: [...classes.values()],
          byEndpoint: diff(day.byEndpoint, {}),
          days: [],
        };
      // The rest of the day on the clock, so the next day's first fire is on its own day.
      if (dayStart + DAY > sandbox.now()) sandbox.advanceClock(dayStart + DAY - sandbox.now());
    }
    steady!.days = perDay;

    // The warehouse against the sandbox: every top-level stream's live ids.
    const mismatches: string[] = [];
    for (const name of Object.keys(records)) {
      const [family, stream] = name.split('.') as [Family, string];
      const table = `${family}_${stream}`;
      const got = await wh.db.executeQuery<{ n: number }>(
        CompiledQuery.raw(`SELECT COUNT(*) AS n FROM "${table}" WHERE "_deleted_at" IS NULL`),
      );
      const live = Number(got.rows[0]?.n ?? -1);
      const want = sandbox.count(org.ids[family], family, stream);
      if (live !== want) mismatches.push(`${table}: ${live} live rows, sandbox ${want}`);
    }
    return { records, changes, firstSync, days, steady: steady!, idsMatch: mismatches.length === 0, mismatches };
  } finally {
    await warehouse?.close();
    await sandbox.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

export function renderRequests(f: RequestsFigures): string {
  const lines: string[] = [];
  const recs = Object.entries(f.records)
    .map(([k, n]) => `${fmt(n)} ${k}`)
    .join(', ');
  lines.push(`Requests (scenario \`requests\`): one organization with ${recs}, the other streams at 50 records; per_page 200.`);
  lines.push(
    'Organization-scoped requests as the sandbox counted them (what the daily quota counts; token and organization-list calls apart).',
  );
  lines.push('');
  const k = f.firstSync.kinds;
  lines.push('| first sync | list pages | single reads | child lists | requests | organization lists (not charged) |');
  lines.push('|---|---:|---:|---:|---:|---:|');
  const kinds = [k.listPages, k.singleReads, k.childLists, f.firstSync.requests].map((n) => fmt(n));
  lines.push(`| whole catalog | ${kinds.join(' | ')} | ${k.organizationLists} |`);
  lines.push('');
  lines.push(`| plan | usable a day | days for the first sync |`);
  lines.push('|---|---:|---:|');
  for (const d of f.days) lines.push(`| ${d.plan} | ${fmt(d.usable)} | ${fmt(d.days, 1)} |`);
  lines.push('');
  const s = f.steady;
  lines.push(
    `Steady state: ${s.days.length} days of the daemon's jobs under the ${s.plan} plan's default schedules, at ` +
      `${fmt(f.changes.orders)} sales orders and ${fmt(f.changes.contacts)} contacts modified and ` +
      `${fmt(f.changes.events)} events created a day (spread evenly between fires), reconcile included. ` +
      `Requests each day: ${s.days.map((n) => fmt(n)).join(', ')}; the busiest day by job class:`,
  );
  lines.push('');
  lines.push('| job class | schedule | fires | requests | per fire |');
  lines.push('|---|---|---:|---:|---:|');
  for (const c of s.classes)
    lines.push(`| ${c.jobClass} | \`${c.schedule}\` | ${c.fires} | ${fmt(c.requests)} | ${fmt(c.fires ? c.requests / c.fires : 0)} |`);
  lines.push(`| **day** | | | **${fmt(s.perDay)}** | |`);
  lines.push('');
  lines.push(
    `- steady state within the ${s.plan} plan's ${fmt(s.usable)} usable requests a day: busiest day ${fmt(s.perDay)} — ` +
      (s.perDay <= s.usable ? 'met' : '**NOT met**'),
  );
  lines.push(`- warehouse live rows = sandbox after the day: ${f.idsMatch ? 'yes' : 'NO: ' + f.mismatches.join('; ')}`);
  return lines.join('\n');
}

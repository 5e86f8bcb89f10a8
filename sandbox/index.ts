/**
 * A local server that behaves like the four API families of docs/api.md, for the
 * demo, the end-to-end tests and the benchmarks. Self-contained: it shares no code with the
 * client, so a misreading of the spec in one cannot hide the same misreading in the other.
 */
import { controlAnswer } from './control.js';
import { OrgData, streamsFor, type Amount, type MutateOptions, type MutationSummary } from './data-store.js';
import { PLANS, limitsFor, type Limits, type Plan } from './limits.js';
import { DEFAULT_CREDENTIALS, OAuthServer, type Credentials } from './oauth.js';
import { FAMILIES, buildOrganizations, type Family } from './organizations.js';
import { emptyLog, type RequestLog } from './request-log.js';
import { SandboxClock, type SandboxTimer } from './sandbox-clock.js';
import { SandboxServer, type Faults } from './server.js';
import { VersionLedger, type Change, type HistoryStats, type Version } from './record-versions.js';
import { STREAMS, findStream } from './stream-catalog.js';
import { resolveVariants, type Preset, type Variants } from './variants.js';

export type { Family } from './organizations.js';
export type { Faults } from './server.js';
export type { RequestLog, Overlap } from './request-log.js';
export type { MutationSummary, MutationCounts, MutateOptions, Amount } from './data-store.js';
export type { Change, Version, HistoryStats } from './record-versions.js';
export type { Plan, Limits } from './limits.js';
export { PLAN_LIMITS, PLANS } from './limits.js';
export type { Variants, Preset } from './variants.js';
export { HOSTILE_VARIANTS, DEFAULT_VARIANTS, VARIANT_NAMES, PRESETS, SORTABLE_LISTS, resolveVariants } from './variants.js';

export interface SandboxOptions {
  host?: string;
  port?: number;
  seed?: number;
  scale?: number;
  /**
   * Records per organization of some top-level streams (`family.stream`, up to 1,000,000 each),
   * where `scale` sets the rest: an organization shaped like a real one (many events, few projects).
   */
  streamScale?: Record<string, number>;
  organizations?: number;
  plan?: Plan;
  limits?: Partial<Limits>;
  unlimited?: boolean;
  timeScale?: number;
  startTime?: string;
  tokenExpiresIn?: number;
  faults?: Faults;
  credentials?: Partial<Credentials> & { scopes?: string[] };
  /** Where the spec leaves a choice open, take the other one (see docs/sandbox.md, "Variants"). Override the preset. */
  variants?: Partial<Variants>;
  /** `hostile`: every variant on at its hostile setting (HOSTILE_VARIANTS). Default: all off. */
  preset?: Preset;
  /**
   * Past versions kept, all organizations together (DEFAULT_MAX_VERSIONS): past it the oldest
   * are dropped, and `truthAt` before the instant they closed is refused.
   */
  maxVersions?: number;
  /** Keep a log of every change to a top-level record (`changeLog`): a benchmark measures how long each took to reach the warehouse. */
  recordChanges?: boolean;
}

/** One change to a top-level record, at a sandbox instant (ms). */
export interface ChangeEntry {
  organizationId: string;
  /** `family.stream` */
  stream: string;
  id: string;
  change: Change;
  at: number;
}

export interface SandboxOrganization {
  /** The books id; the id of every family unless the variant orgIdPerFamily is on. */
  organization_id: string;
  /** The organization id in each family (all equal unless orgIdPerFamily). */
  ids: Record<Family, string>;
  name: string;
  currency_code: string;
  time_zone: string;
  offset: string;
  idStyle: 'string' | 'number';
}

export interface Sandbox {
  url: string;
  accountsUrl: string;
  credentials: Credentials;
  /** The variants in force (preset plus explicit overrides). */
  variants: Variants;
  organizations(): SandboxOrganization[];
  now(): number;
  clock: { now(): number; setTimeout(fn: () => void, ms: number): SandboxTimer; sleep(ms: number, signal?: AbortSignal): Promise<void> };
  advanceClock(ms: number): void;
  truth(organizationId: string, family: Family, stream: string): Array<Record<string, unknown>>;
  /**
   * The records as they stood at sandbox instant t (ms), shaped as `truth` shapes them, with
   * the child arrays they had then: records created after t and records deleted at or before t
   * are absent. A RangeError for an instant before the versions kept (see maxVersions).
   */
  truthAt(organizationId: string, family: Family, stream: string, t: number): Array<Record<string, unknown>>;
  /** Every version of one record, oldest first, `[from, to)` in sandbox ms; [] for an id the stream never held. */
  versions(organizationId: string, family: Family, stream: string, id: string): Version[];
  historyStats(): HistoryStats;
  count(organizationId: string, family: Family, stream: string): number;
  /**
   * Builds and caches the list JSON of every record of a top-level stream, so that serving
   * its pages later costs little: a benchmark then measures the client, not the generator.
   * Returns the number of records warmed. Up to 250,000 records a stream unless `whole`, which
   * keeps every record's JSON however many there are (memory grows with the stream).
   */
  warm(organizationId: string, family: Family, stream: string, whole?: boolean): number;
  mutate(opts: MutateOptions): MutationSummary;
  issueGrantCode(opts?: { scopes?: string[] }): string;
  setFaults(faults: Faults): void;
  /** Changes the per-request variants (changes while paging, spurious 401s) of a running sandbox. */
  setRequestVariants(v: Partial<Pick<Variants, 'changeWhilePagingEvery' | 'spurious401Rate'>>): void;
  requestLog(): RequestLog;
  resetRequestLog(): void;
  /** The changes since the last reset, oldest first (empty unless started with `recordChanges`). */
  changeLog(): ChangeEntry[];
  resetChangeLog(): void;
  stop(): Promise<void>;
}

export const DEFAULT_START_TIME = '2026-11-20T08:00:00Z';
export const DEFAULT_MAX_VERSIONS = 500_000;

function check(condition: boolean, message: string): void {
  if (!condition) throw new RangeError(message);
}

function checkRate(name: string, value: number | undefined): void {
  if (value !== undefined) check(Number.isFinite(value) && value >= 0 && value <= 1, `faults.${name} must be between 0 and 1`);
}

const SHARE = /^\d+(\.\d+)?%$/;

function checkAmount(name: string, value: Amount | undefined): void {
  if (value === undefined) return;
  const ok =
    typeof value === 'number'
      ? Number.isInteger(value) && value >= 0 && value <= 1_000_000
      : typeof value === 'string' && SHARE.test(value) && Number(value.slice(0, -1)) <= 100;
  check(ok, `${name} must be a number of records (0 to 1000000) or a share from "0%" to "100%", got ${JSON.stringify(value)}`);
}

const STREAM_NAMES = [...new Set(STREAMS.flatMap((d) => [d.stream, `${d.family}.${d.stream}`]))];

function checkMutation(opts: MutateOptions): void {
  for (const name of ['modify', 'create', 'delete', 'restore'] as const) checkAmount(name, opts[name]);
  for (const f of opts.families ?? [])
    check(FAMILIES.includes(f), `families: unknown family ${JSON.stringify(f)} (known: ${FAMILIES.join(', ')})`);
  for (const s of opts.streams ?? [])
    check(
      STREAM_NAMES.includes(s),
      `streams: no stream ${JSON.stringify(s)} changes (streams: ${STREAMS.map((d) => `${d.family}.${d.stream}`).join(', ')})`,
    );
  check(
    streamsFor(opts).length > 0,
    `streams ${JSON.stringify(opts.streams)} are in none of the families ${JSON.stringify(opts.families)}`,
  );
}

function checkEvery(value: number | undefined): void {
  if (value !== undefined) check(Number.isFinite(value) && value >= 0, 'faults.revokeEverySeconds must be a number of seconds, 0 for none');
}

export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const seed = options.seed ?? 42;
  const scale = options.scale ?? 50;
  const orgCount = options.organizations ?? 3;
  const plan = options.plan ?? 'free';
  const timeScale = options.timeScale ?? 1;
  const startMs = Date.parse(options.startTime ?? DEFAULT_START_TIME);
  const expiresIn = options.tokenExpiresIn ?? 3600;
  const maxVersions = options.maxVersions ?? DEFAULT_MAX_VERSIONS;
  check(Number.isInteger(seed), 'seed must be an integer');
  check(Number.isInteger(scale) && scale >= 0 && scale <= 1_000_000, 'scale must be an integer from 0 to 1000000');
  const streamScale = options.streamScale ?? {};
  for (const [name, n] of Object.entries(streamScale)) {
    const [family, stream] = name.split('.');
    const def = family && stream ? STREAMS.find((d) => d.family === family && d.stream === stream) : undefined;
    check(def !== undefined && def.kind === 'top', `streamScale: ${name} is not a top-level stream (family.stream)`);
    check(Number.isInteger(n) && n >= 0 && n <= 1_000_000, `streamScale.${name} must be an integer from 0 to 1000000`);
  }
  // Past 100 organizations record ids repeat across organizations (an id names the organization's
  // index modulo 100), which the warehouse's (organization_id, id) keys allow.
  check(Number.isInteger(orgCount) && orgCount >= 1 && orgCount <= 1000, 'organizations must be an integer from 1 to 1000');
  check(PLANS.includes(plan), `plan must be one of ${PLANS.join(', ')}`);
  check(Number.isFinite(timeScale) && timeScale > 0, 'timeScale must be a positive number');
  check(Number.isFinite(startMs), 'startTime must be an ISO 8601 instant');
  check(Number.isFinite(expiresIn) && expiresIn > 0, 'tokenExpiresIn must be a positive number of seconds');
  check(Number.isInteger(maxVersions) && maxVersions >= 0, 'maxVersions must be a whole number, 0 to keep no past version');
  const faults = options.faults ?? {};
  checkRate('rate5xx', faults.rate5xx);
  checkRate('rate429', faults.rate429);
  checkRate('rateTruncated', faults.rateTruncated);
  checkEvery(faults.revokeEverySeconds);
  const variants = resolveVariants(options.preset, options.variants);
  const limits = limitsFor(plan, options.limits);
  for (const [k, v] of Object.entries(limits)) check(Number.isFinite(v) && v >= 1, `limits.${k} must be a positive number`);

  const clock = new SandboxClock(startMs, timeScale);
  const orgs = buildOrganizations(seed, orgCount, variants);
  const ledger = new VersionLedger(maxVersions);
  const data = new Map(orgs.map((o) => [o.organization_id, new OrgData(seed, o, scale, startMs, variants, ledger, streamScale)]));
  let changes: ChangeEntry[] = [];
  if (options.recordChanges) {
    for (const d of data.values())
      d.onChange = (def, id, change, at) =>
        changes.push({ organizationId: d.org.organization_id, stream: `${def.family}.${def.stream}`, id, change, at });
  }
  const { scopes, ...given } = options.credentials ?? {};
  const credentials: Credentials = { ...DEFAULT_CREDENTIALS, ...given };
  let url = '';
  let mutationRound = 0;
  // Set once started; the control endpoints answer through it.
  const started: { sandbox?: Sandbox } = {};
  const oauth = new OAuthServer(credentials, scopes, expiresIn, () => url, variants.tokenLifetimeMillis);
  const server = new SandboxServer({
    clock,
    timeScale,
    seed,
    orgs,
    data,
    oauth,
    limits,
    unlimited: options.unlimited ?? false,
    faults,
    variants,
    changeWhilePaging: (d, def) => {
      d.mutate(def, { modify: 1, create: 1, delete: 0, restore: 0 }, clock.now(), ++mutationRound);
    },
    control: (method, path, query, body) => {
      const sandbox = started.sandbox;
      if (!sandbox) return { status: 503, body: JSON.stringify({ code: 1000, message: 'The sandbox is starting' }) };
      return controlAnswer(sandbox, method, path, query, body);
    },
  });
  const address = await server.listen(options.host ?? '127.0.0.1', options.port ?? 0);
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  url = `http://${host}:${address.port}`;

  // Any id of a business (its books id, or its id in one family) → its data.
  const byId = new Map<string, { d: OrgData; families: Set<Family> }>();
  for (const d of data.values()) {
    for (const family of FAMILIES) {
      const id = d.org.ids[family];
      const entry = byId.get(id) ?? { d, families: new Set<Family>() };
      entry.families.add(family);
      byId.set(id, entry);
    }
  }
  /** The organization named by its books (shared) id, or by its id in `family`. */
  const orgData = (organizationId: string, family?: Family): OrgData => {
    const entry = byId.get(organizationId);
    if (!entry || (family && !entry.families.has(family) && entry.d.org.organization_id !== organizationId)) {
      throw new RangeError(`unknown organization ${organizationId}${family ? ` in family ${family}` : ''}`);
    }
    return entry.d;
  };
  const streamDef = (family: Family, stream: string) => {
    const def = findStream(family, stream);
    if (!def) throw new RangeError(`unknown stream ${family}.${stream}`);
    return def;
  };

  const sandbox: Sandbox = {
    url,
    accountsUrl: url,
    credentials: { ...credentials },
    variants: structuredClone(variants),
    organizations: () =>
      orgs.map((o) => ({
        organization_id: o.organization_id,
        ids: { ...o.ids },
        name: o.profile.name,
        currency_code: o.profile.currency_code,
        time_zone: o.profile.time_zone,
        offset: o.offset,
        idStyle: o.idStyle,
      })),
    now: () => clock.now(),
    clock: {
      now: () => clock.now(),
      setTimeout: (fn, ms) => clock.setTimeout(fn, ms),
      sleep: (ms, signal) => clock.sleep(ms, signal),
    },
    advanceClock: (ms) => clock.advance(ms),
    truth(organizationId, family, stream) {
      const d = orgData(organizationId, family);
      if (stream === 'organizations') return [d.g.organizationRecord(family)];
      return d.truth(streamDef(family, stream));
    },
    truthAt(organizationId, family, stream, t) {
      check(Number.isFinite(t), 'truthAt needs an instant in sandbox ms');
      const d = orgData(organizationId, family);
      if (t < d.horizon) {
        throw new RangeError(
          `truthAt ${new Date(t).toISOString()}: the sandbox keeps versions from ${new Date(d.horizon).toISOString()} on ` +
            `(maxVersions ${maxVersions}); ask for a later instant or start it with a larger maxVersions`,
        );
      }
      if (stream === 'organizations') return t >= d.g.organizationCreated() ? [d.g.organizationRecord(family)] : [];
      return d.truthAt(streamDef(family, stream), t);
    },
    versions(organizationId, family, stream, id) {
      const d = orgData(organizationId, family);
      if (stream === 'organizations') {
        const rec = d.g.organizationRecord(family);
        return rec['organization_id'] === id ? [{ from: d.g.organizationCreated(), to: null, change: 'created', record: rec }] : [];
      }
      return d.versions(streamDef(family, stream), id);
    },
    historyStats() {
      const horizons = [...data.values()].map((d) => d.horizon).filter((h) => h > -Infinity);
      return { versions: ledger.kept, dropped: ledger.dropped, maxVersions, since: horizons.length ? Math.max(...horizons) : null };
    },
    warm(organizationId, family, stream, whole = false) {
      const d = orgData(organizationId, family);
      if (stream === 'organizations') return 0;
      return d.warm(streamDef(family, stream), whole);
    },
    count(organizationId, family, stream) {
      const d = orgData(organizationId, family);
      if (stream === 'organizations') return 1;
      return d.count(streamDef(family, stream));
    },
    mutate(opts) {
      checkMutation(opts);
      const summary: MutationSummary = { modified: 0, created: 0, deleted: 0, restored: 0, streams: {} };
      const targets = opts.organizationId ? [orgData(opts.organizationId)] : [...data.values()];
      const counts = { modify: opts.modify ?? 0, create: opts.create ?? 0, delete: opts.delete ?? 0, restore: opts.restore ?? 0 };
      const round = ++mutationRound;
      const now = clock.now();
      for (const d of targets) {
        for (const def of streamsFor(opts)) {
          const done = d.mutate(def, counts, now, round);
          const key = `${def.family}.${def.stream}`;
          const entry = (summary.streams[key] ??= { modified: 0, created: 0, deleted: 0, restored: 0 });
          for (const k of ['modified', 'created', 'deleted', 'restored'] as const) {
            entry[k] += done[k];
            summary[k] += done[k];
          }
        }
      }
      return summary;
    },
    issueGrantCode: (opts) => oauth.issueGrantCode(clock.now(), opts?.scopes),
    setFaults(f) {
      checkRate('rate5xx', f.rate5xx);
      checkRate('rate429', f.rate429);
      checkRate('rateTruncated', f.rateTruncated);
      checkEvery(f.revokeEverySeconds);
      server.faults = { ...f };
    },
    setRequestVariants(v) {
      if (v.spurious401Rate !== undefined) checkRate('spurious401Rate', v.spurious401Rate);
      if (v.changeWhilePagingEvery !== undefined)
        check(Number.isInteger(v.changeWhilePagingEvery) && v.changeWhilePagingEvery >= 0, 'changeWhilePagingEvery must be a whole number');
      server.setRequestVariants(v);
      variants.changeWhilePagingEvery = v.changeWhilePagingEvery ?? variants.changeWhilePagingEvery;
      variants.spurious401Rate = v.spurious401Rate ?? variants.spurious401Rate;
    },
    requestLog: () => structuredClone(server.log),
    resetRequestLog() {
      server.log = emptyLog();
    },
    changeLog: () => changes.slice(),
    resetChangeLog() {
      changes = [];
    },
    async stop() {
      clock.dispose();
      await server.close();
    },
  };
  started.sandbox = sandbox;
  return sandbox;
}

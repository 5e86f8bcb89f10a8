import { createHash, timingSafeEqual } from 'node:crypto';
import { qualifiedName, type StreamSpec } from '../../catalog/types.js';
import type { Clock, Timer } from '../../core/clock.js';
import type { JobSpec, KnownOrganization } from '../timing/jobs.js';

/**
 * Webhook-triggered syncs (docs/daemon.md, "Webhooks"): the decisions are pure functions and
 * small clock-driven objects here; the HTTP server, the daemon and the worker only apply them.
 */

export interface HookSettings {
  /** Hooks for one organization within this long start one run, this long after the first. */
  debounce_ms: number;
  /** Hooks a minute one address may send before it gets 429. */
  per_address_per_minute: number;
  /** Larger bodies get 413 (the body is never used; the run reads changes through the API). */
  max_body_bytes: number;
}

export const DEFAULT_HOOK_SETTINGS: HookSettings = { debounce_ms: 10_000, per_address_per_minute: 120, max_body_bytes: 64 * 1024 };

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/**
 * Whether the presented secret is the configured one, in time that does not depend on where
 * they differ or on their lengths (both are hashed first). No configured secret matches nothing.
 */
export function secretMatches(presented: string | undefined, expected: string | undefined): boolean {
  // Hash something even when one side is missing, so a missing secret costs what a wrong one does.
  const a = digest(presented ?? '');
  const b = digest(expected ?? '\u0000no secret configured');
  return timingSafeEqual(a, b) && presented !== undefined && expected !== undefined && expected.length > 0;
}

/** What a hook's URL names: `/hooks/{connection}/{family}/{organization_id}[/{stream}]`, `?streams=a,b`. */
export interface HookTarget {
  connection: string;
  family: string;
  organizationId: string;
  /** Stream names within the family (`sales_orders`) or qualified (`inventory.sales_orders`); empty: every incremental stream. */
  streams: string[];
}

/** What a hook with a valid secret led to. */
export type HookResult =
  | { kind: 'accepted'; runAt: number; coalesced: boolean }
  | { kind: 'fallback'; reason: string }
  | { kind: 'unknown'; message: string }
  | { kind: 'invalid'; message: string };

/** A hook checked against what is scheduled: the organization, its incremental jobs to run and their trees. */
export type HookResolution =
  { kind: 'ok'; key: string; trees: string[]; jobs: JobSpec[] } | Exclude<HookResult, { kind: 'accepted' | 'fallback' }>;

/** The connection's webhook secret, if hooks are on for it. */
export function hookSecret(
  connections: ReadonlyArray<{ name: string; webhook_secret?: string | undefined }>,
  connection: string,
): string | undefined {
  return connections.find((c) => c.name === connection)?.webhook_secret;
}

/**
 * What a hook names, checked against what is scheduled: the organization's incremental jobs
 * and the trees (top-level streams) of the family to run, or why not (unknown, invalid). `key`
 * is the organization's (connection and id), under which hooks coalesce.
 */
export function resolveHook(
  target: HookTarget,
  organizations: readonly KnownOrganization[],
  scheduled: readonly JobSpec[],
  catalog: readonly StreamSpec[],
): HookResolution {
  const org = organizations.find(
    (o) => o.connection === target.connection && o.organizationId === target.organizationId && o.families.some((f) => f === target.family),
  );
  if (!org)
    return {
      kind: 'unknown',
      message:
        `organization ${target.organizationId} is not known to connection ${target.connection} for family ${target.family}: ` +
        'svcsync syncs the organizations its discovery found (svcsync status lists them)',
    };
  const jobs = scheduled.filter(
    (j) => j.connection === org.connection && j.organizationId === org.organizationId && j.jobClass === 'incremental',
  );
  const familyTrees = jobs.flatMap((j) => j.trees).filter((t) => t.startsWith(`${target.family}.`));
  const trees = new Set<string>();
  for (const name of target.streams) {
    const qualified = name.includes('.') ? name : `${target.family}.${name}`;
    let spec = catalog.find((s) => qualifiedName(s) === qualified);
    // A child stream is synced with its parent's tree.
    while (spec?.parent) {
      const parent = spec.parent.stream;
      spec = catalog.find((s) => s.family === spec!.family && s.name === parent);
    }
    const tree = spec ? qualifiedName(spec) : qualified;
    if (!familyTrees.includes(tree))
      return {
        kind: 'invalid',
        message:
          `stream "${name}" is not an incremental stream of ${target.family} for this organization; ` +
          `name one of: ${familyTrees.join(', ')}`,
      };
    trees.add(tree);
  }
  if (familyTrees.length === 0)
    return { kind: 'invalid', message: `no incremental stream of ${target.family} is scheduled for this organization` };
  const wanted = trees.size ? [...trees] : familyTrees;
  return {
    kind: 'ok',
    key: `${org.connection}\u0000${org.organizationId}`,
    trees: wanted,
    jobs: jobs.filter((j) => j.trees.some((t) => wanted.includes(t))),
  };
}

/** Parses a hook path and query, or returns null when the path is not a hook path. */
export function parseHookUrl(url: URL): HookTarget | null {
  const parts = url.pathname.split('/').filter((p) => p.length > 0);
  if (parts[0] !== 'hooks' || parts.length < 4 || parts.length > 5) return null;
  let decoded: string[];
  try {
    decoded = parts.map((p) => decodeURIComponent(p));
  } catch {
    return null;
  }
  const [, connection, family, organizationId, stream] = decoded as [string, string, string, string, string | undefined];
  const fromQuery = [...url.searchParams.getAll('streams'), ...url.searchParams.getAll('stream')]
    .flatMap((v) => v.split(','))
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  const streams = [...new Set([...(stream ? [stream] : []), ...fromQuery])];
  return { connection, family, organizationId, streams };
}

/** The secret a caller presented: the `X-Svcsync-Secret` header, else `?secret=`. */
export function presentedSecret(headers: Record<string, string | string[] | undefined>, url: URL): string | undefined {
  const h = headers['x-svcsync-secret'];
  const header = Array.isArray(h) ? h[0] : h;
  return header ?? url.searchParams.get('secret') ?? undefined;
}

/**
 * At most `limit` hooks from one address in any `windowMs` (a sliding log per address). Checked
 * before the body is read or the secret compared, so a flood costs almost nothing.
 */
export class AddressRateLimit {
  private readonly seen = new Map<string, number[]>();

  constructor(
    private readonly clock: Clock,
    private readonly limit: number,
    private readonly windowMs = 60_000,
  ) {}

  allow(address: string): boolean {
    const now = this.clock.now();
    const from = now - this.windowMs;
    const times = (this.seen.get(address) ?? []).filter((t) => t > from);
    const ok = times.length < this.limit;
    if (ok) times.push(now);
    this.seen.set(address, times);
    // Addresses gone quiet are forgotten, so the map stays as small as the callers of the last minute.
    if (this.seen.size > 1_000) for (const [a, t] of this.seen) if (t.every((x) => x <= from)) this.seen.delete(a);
    return ok;
  }
}

export type HookDebounce = { kind: 'scheduled'; at: number } | { kind: 'coalesced'; at: number };

/**
 * Coalesces hooks per key (connection/organization): the first arms a timer for `delayMs`;
 * the ones until it fires only add their streams. When it fires, `fire` gets the union
 * (empty: every incremental stream). So a flood of hooks for one organization costs at most
 * one run per delay.
 */
export class HookDebouncer {
  private readonly pending = new Map<string, { at: number; streams: Set<string> | null; timer: Timer; hooks: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly delayMs: number,
    private readonly fire: (key: string, streams: string[], hooks: number) => void,
  ) {}

  add(key: string, streams: readonly string[]): HookDebounce {
    const p = this.pending.get(key);
    if (p) {
      p.hooks++;
      // Null means "every stream": a hook that names none widens the run to all of them.
      if (p.streams && streams.length > 0) for (const s of streams) p.streams.add(s);
      else p.streams = null;
      return { kind: 'coalesced', at: p.at };
    }
    const at = this.clock.now() + this.delayMs;
    const timer = this.clock.setTimeout(() => {
      const done = this.pending.get(key);
      this.pending.delete(key);
      if (done) this.fire(key, done.streams ? [...done.streams].sort() : [], done.hooks);
    }, this.delayMs);
    this.pending.set(key, { at, streams: streams.length > 0 ? new Set(streams) : null, timer, hooks: 1 });
    return { kind: 'scheduled', at };
  }

  /** When the pending run for `key` is due, or null. */
  dueAt(key: string): number | null {
    return this.pending.get(key)?.at ?? null;
  }

  cancelAll(): void {
    for (const p of this.pending.values()) p.timer.cancel();
    this.pending.clear();
  }
}

/**
 * Whether a hook may start an extra incremental run: its estimate must fit what is left of the
 * day above what the scheduled incremental fires until the reset are expected to need (`held`).
 * Otherwise hooks fall back to the schedule until the budget allows them again.
 */
export function hookBudget(estimate: number, remaining: number, held: number): { run: boolean; reason: string } {
  if (estimate <= remaining - held) return { run: true, reason: `estimated ${estimate} of ${remaining} requests left today` };
  return {
    run: false,
    reason:
      `budget low: a hook run needs about ${estimate} requests; ${remaining} are left today and ${held} are held ` +
      'for the scheduled incremental runs; hooks fall back to the schedule',
  };
}

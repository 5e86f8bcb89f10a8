import type { Config } from '../config/schema.js';
import type { Logger } from '../core/logger.js';
import type { AnyDb } from '../loaders/db.js';
import { loadVerdicts, saveVerdict } from '../state/shortcut-verdicts.js';
import type { ShortcutRow } from '../state/tables.js';

/**
 * Shortcuts that check themselves. svcsync saves requests by trusting readings of the API that
 * its documentation leaves open (docs/assumptions.md). A server that reads the spec another way
 * would make such a shortcut lose records silently, so each one is checked against the long way:
 * every use on a new connection until a few agree, then a slow rotating sample (every
 * `100 / sample_percent`-th use, and at least one use every `at_least_every_days`). The verdict
 * is kept per connection, organization and stream in `_svcsync_shortcuts`; a check that
 * disagrees switches the shortcut off for the organization, loudly, and the caller reads the
 * affected records the long way at once.
 */
export type ShortcutId = 'embedded_children' | 'all_children_list' | 'child_changes_touch_parent';

export const SHORTCUT_IDS: readonly ShortcutId[] = ['embedded_children', 'all_children_list', 'child_changes_touch_parent'];

/** What each shortcut assumes and what reading the long way costs, for messages. */
export const SHORTCUTS: Readonly<Record<ShortcutId, { assumption: string; assumes: string; longWay: string }>> = {
  embedded_children: {
    assumption: 'A48',
    assumes: "a vendor credit's own record carries every refund and credited bill when its totals add up",
    longWay: "each credit's refunds and credited-bills lists, two requests a credit",
  },
  all_children_list: {
    assumption: 'A49',
    assumes: 'the list of all vendor-credit refunds holds every refund, each naming its credit',
    longWay: "each credit's own refunds list, a request a credit",
  },
  child_changes_touch_parent: {
    assumption: 'A25',
    assumes: "a change to a record's child list changes the record's last_modified_time",
    longWay: "every parent's child lists on every reconcile, a request per parent and list",
  },
};

export type VerdictState = 'verifying' | 'trusted' | 'refuted';

/** How the checks are drawn (`sync.shortcut_checks`). */
export interface CheckPolicy {
  /** Uses a new connection checks, each, before it trusts the shortcut. */
  newConnection: number;
  /** The share of later uses checked, in percent (every `100 / percent`-th use). */
  samplePercent: number;
  /** At least one check this often, however few uses there are. */
  atLeastEveryMs: number;
}

export function checkPolicy(config: Pick<Config, 'sync'>): CheckPolicy {
  const c = config.sync.shortcut_checks;
  return { newConnection: c.new_connection, samplePercent: c.sample_percent, atLeastEveryMs: c.at_least_every_days * 86_400_000 };
}

type VerdictFacts = Pick<ShortcutRow, 'state' | 'checks' | 'since_check' | 'last_checked_at'>;

/**
 * Whether the next use of a shortcut is checked against the long way, given its verdict, the
 * checks already claimed and not yet recorded (uses under way at once), and now (epoch ms).
 */
export function checkDue(v: VerdictFacts, claimed: number, now: number, policy: CheckPolicy): boolean {
  if (v.state === 'refuted') return false;
  if (v.state === 'verifying') return v.checks + claimed < policy.newConnection;
  if (claimed > 0) return false;
  const every = policy.samplePercent > 0 ? Math.max(1, Math.round(100 / policy.samplePercent)) : Number.POSITIVE_INFINITY;
  if (v.since_check + 1 >= every) return true;
  const last = v.last_checked_at === null ? Number.NaN : Date.parse(v.last_checked_at);
  return policy.atLeastEveryMs > 0 && Number.isFinite(last) && now - last >= policy.atLeastEveryMs;
}

/**
 * The verdict after a check that agreed (`evidence` null) or disagreed. A refuted shortcut stays
 * refuted: a check that began before the refutation and agrees says nothing against it.
 */
export function afterCheck(v: ShortcutRow, at: string, evidence: string | null, policy: CheckPolicy): ShortcutRow {
  if (v.state === 'refuted') return v;
  if (evidence !== null) return { ...v, state: 'refuted', refuted_at: at, evidence, since_check: 0, last_checked_at: at, updated_at: at };
  const checks = v.checks + 1;
  const state: VerdictState = v.state === 'verifying' && checks < policy.newConnection ? 'verifying' : 'trusted';
  return { ...v, state, checks, since_check: 0, first_checked_at: v.first_checked_at ?? at, last_checked_at: at, updated_at: at };
}

/** A refutation, as the run's summary, `svcsync status` and `svcsync plan` tell it. */
export interface ShortcutNote {
  shortcut: ShortcutId;
  assumption: string;
  stream: string;
  refutedAt: string;
  evidence: string;
  /** What reading the long way costs from now on. */
  longWay: string;
}

export function noteOf(row: ShortcutRow): ShortcutNote {
  const id = row.shortcut as ShortcutId;
  const about = SHORTCUTS[id];
  return {
    shortcut: id,
    assumption: about.assumption,
    stream: row.stream,
    refutedAt: row.refuted_at ?? row.updated_at,
    evidence: row.evidence ?? '',
    longWay: about.longWay,
  };
}

/** The warning a refutation logs (once, in the run that finds it). */
export function refutationMessage(note: ShortcutNote): string {
  const about = SHORTCUTS[note.shortcut];
  return (
    `${note.assumption} does not hold for ${note.stream}: svcsync assumed that ${about.assumes}, and ${note.evidence}. ` +
    `The shortcut is off for this organization: svcsync now reads ${note.longWay}, and is reading the records it may have missed now ` +
    `(set sync.shortcuts.${note.shortcut}: trust to take the shortcut anyway)`
  );
}

/**
 * One organization's shortcuts in a run: their verdicts, the checks claimed, and the
 * refutations found. Loaded when the organization's sync starts (`OrgShortcuts.load`).
 */
export class OrgShortcuts {
  private readonly claimed = new Map<string, number>();
  private readonly dirty = new Set<string>();
  /** Writes of the verdicts, one after another: checks judged at once must land in the order they were counted. */
  private writes: Promise<void> = Promise.resolve();
  /** Refuted in this run: the run's summary tells each once. */
  readonly refutedNow: ShortcutNote[] = [];

  private constructor(
    private readonly db: AnyDb,
    private readonly connection: string,
    private readonly organizationId: string,
    private readonly settings: Config['sync']['shortcuts'],
    private readonly policy: CheckPolicy,
    private readonly rows: Map<string, ShortcutRow>,
    private readonly now: () => number,
    private readonly log: Logger,
  ) {}

  static async load(
    db: AnyDb,
    config: Pick<Config, 'sync'>,
    at: { connection: string; organizationId: string; now: () => number; logger: Logger },
  ): Promise<OrgShortcuts> {
    const rows = await loadVerdicts(db, at.connection, at.organizationId);
    const byKey = new Map(rows.map((r) => [keyOf(r.shortcut as ShortcutId, r.stream), r]));
    const log = at.logger.child({ organization_id: at.organizationId });
    return new OrgShortcuts(db, at.connection, at.organizationId, config.sync.shortcuts, checkPolicy(config), byKey, at.now, log);
  }

  /** Whether the shortcut is taken for the stream: not switched off in the configuration, not refuted. */
  uses(id: ShortcutId, stream: string): boolean {
    if (this.settings[id] === 'off') return false;
    return this.settings[id] === 'trust' || this.row(id, stream).state !== 'refuted';
  }

  /** Whether uses of the shortcut are checked: `verify` in the configuration, and not refuted. */
  verifies(id: ShortcutId, stream: string): boolean {
    return this.settings[id] === 'verify' && this.row(id, stream).state !== 'refuted';
  }

  isRefuted(id: ShortcutId, stream: string): boolean {
    return this.settings[id] === 'verify' && this.row(id, stream).state === 'refuted';
  }

  /**
   * Whether the checks found the shortcut to hold for the stream: what lets a cycle that
   * guards it be skipped. Taken unchecked (`trust`), nothing found it to hold, and the cycle stays.
   */
  isTrusted(id: ShortcutId, stream: string): boolean {
    return this.settings[id] === 'verify' && this.row(id, stream).state === 'trusted';
  }

  isVerifying(id: ShortcutId, stream: string): boolean {
    return this.settings[id] === 'verify' && this.row(id, stream).state === 'verifying';
  }

  /**
   * Whether this use is checked: claims the check at once, so uses under way together draw
   * exactly the checks the policy allows. An unchecked use counts towards the next sample.
   */
  claimCheck(id: ShortcutId, stream: string): boolean {
    if (this.settings[id] !== 'verify') return false;
    const key = keyOf(id, stream);
    const row = this.row(id, stream);
    const claimed = this.claimed.get(key) ?? 0;
    if (checkDue(row, claimed, this.now(), this.policy)) {
      this.claimed.set(key, claimed + 1);
      return true;
    }
    if (row.state !== 'refuted') {
      this.rows.set(key, { ...row, since_check: row.since_check + 1 });
      this.dirty.add(key);
    }
    return false;
  }

  /** Checks still to claim for a new connection (uses the caller can draw itself: parents to sample). */
  checksWanted(id: ShortcutId, stream: string): number {
    if (this.settings[id] !== 'verify') return 0;
    const row = this.row(id, stream);
    const claimed = this.claimed.get(keyOf(id, stream)) ?? 0;
    if (row.state === 'verifying') return Math.max(0, this.policy.newConnection - row.checks - claimed);
    return row.state === 'trusted' && claimed === 0 && checkDue(row, 0, this.now(), this.policy) ? 1 : 0;
  }

  /** A check agreed with the shortcut. */
  async agreed(id: ShortcutId, stream: string): Promise<void> {
    await this.record(id, stream, null);
  }

  /**
   * A check disagreed: the shortcut is off for the organization from now on. True the first
   * time (the caller then reads what the shortcut may have missed); false when already refuted.
   */
  async disagreed(id: ShortcutId, stream: string, evidence: string): Promise<boolean> {
    if (this.row(id, stream).state === 'refuted') return false;
    const row = await this.record(id, stream, evidence);
    const note = noteOf(row);
    this.refutedNow.push(note);
    this.log.warn({ shortcut: id, assumption: note.assumption, stream, evidence }, refutationMessage(note));
    return true;
  }

  /** Refuted shortcuts whose missed records have not been queued yet (a run that ended first). */
  unhealed(): ShortcutRow[] {
    const verified = (r: ShortcutRow): boolean => this.settings[r.shortcut as ShortcutId] === 'verify';
    return [...this.rows.values()].filter((r) => r.state === 'refuted' && r.healed_at === null && verified(r));
  }

  /** What a refuted shortcut may have missed is queued: recorded, so no later run queues it again. */
  async healed(id: ShortcutId, stream: string): Promise<void> {
    const key = keyOf(id, stream);
    const at = new Date(this.now()).toISOString();
    this.rows.set(key, { ...this.row(id, stream), healed_at: at, updated_at: at });
    await this.persist(key);
  }

  /** Writes the uses counted since the last write (`since_check`). */
  async flush(): Promise<void> {
    const keys = [...this.dirty];
    this.dirty.clear();
    for (const key of keys) {
      const row = this.rows.get(key);
      if (row) this.rows.set(key, { ...row, updated_at: new Date(this.now()).toISOString() });
      await this.persist(key);
    }
  }

  private async record(id: ShortcutId, stream: string, evidence: string | null): Promise<ShortcutRow> {
    const key = keyOf(id, stream);
    const claimed = this.claimed.get(key) ?? 0;
    if (claimed > 0) this.claimed.set(key, claimed - 1);
    const row = afterCheck(this.row(id, stream), new Date(this.now()).toISOString(), evidence, this.policy);
    this.rows.set(key, row);
    this.dirty.delete(key);
    await this.persist(key);
    return row;
  }

  /**
   * Saves the verdict as it stands when its turn comes. Checks of one stream are judged side by
   * side, and their saves on a pool's separate connections could commit out of order: the last
   * to land, an older count, would win.
   */
  private persist(key: string): Promise<void> {
    const write = this.writes.then(async () => {
      const row = this.rows.get(key);
      if (row) await saveVerdict(this.db, row);
    });
    this.writes = write.catch(() => undefined);
    return write;
  }

  private row(id: ShortcutId, stream: string): ShortcutRow {
    return (
      this.rows.get(keyOf(id, stream)) ?? {
        connection: this.connection,
        organization_id: this.organizationId,
        shortcut: id,
        stream,
        state: 'verifying',
        checks: 0,
        since_check: 0,
        first_checked_at: null,
        last_checked_at: null,
        refuted_at: null,
        evidence: null,
        healed_at: null,
        updated_at: new Date(this.now()).toISOString(),
      }
    );
  }
}

function keyOf(id: ShortcutId, stream: string): string {
  return `${id}\u0000${stream}`;
}

/**
 * Which of `ids` a check samples: `n` of them, the same ones for the same ids and day (FNV-1a of
 * the id and the day), so that a sample rotates from day to day and reruns agree.
 */
export function sampleOf(ids: readonly string[], n: number, day: number): string[] {
  if (n <= 0) return [];
  const hash = (id: string): number => {
    let h = 0x811c9dc5 ^ day;
    for (let i = 0; i < id.length; i++) {
      h ^= id.charCodeAt(i);
      h = Math.imul(h, 0x01000193);
    }
    return h >>> 0;
  };
  return [...ids]
    .map((id) => ({ id, h: hash(id) }))
    .sort((a, b) => a.h - b.h || a.id.localeCompare(b.id))
    .slice(0, n)
    .map((x) => x.id);
}

import { childStreamsOf } from '../catalog/index.js';
import { qualifiedName, type StreamSpec } from '../catalog/types.js';
import type { NormalizedRecord } from '../normalize/normalize.js';
import type { PendingReason } from '../state/pending.js';
import type { StreamKey } from '../state/stream-state.js';
import { commitChildren } from '../state/unit-of-work.js';
import { healShortcut, judgeChildChanges } from './child-checks.js';
import { differenceOf, idsOf, readChildList } from './child-list.js';
import type { SyncContext } from './context.js';
import type { RawRecord } from './pager.js';
import { normalizePage } from './page-records.js';
import { countDeleted, newTally, type StreamTally } from './stream-tally.js';

/** A child stream whose entries a single record carries in full. */
export interface ProvenChildren {
  child: StreamSpec;
  entries: RawRecord[];
}

/** A number sent as a JSON number or as numeric text; null for anything else (an empty string too). */
function amountOf(v: unknown): number | null {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  return null;
}

/** Amounts carry at most three decimals (spec 2.8's currencies): closer than this is equal. */
const SAME_AMOUNT = 0.0005;

/**
 * The child lists a single record proves complete: its embedded array (or a lone object, which
 * some servers send for one entry) whose entries' `amount` add up to the record's total for it.
 * An array cut short, empty while the total is not, missing, or with an entry or a total that
 * is not a number proves nothing, and that child's list is read per parent as usual.
 */
export function provenEmbedded(stream: StreamSpec, raw: RawRecord, wanted: (child: StreamSpec) => boolean): ProvenChildren[] {
  const out: ProvenChildren[] = [];
  for (const e of stream.detail?.embeddedChildren ?? []) {
    const child = childStreamsOf(stream).find((c) => c.name === e.stream);
    if (!child || !wanted(child)) continue;
    const v = raw[e.field];
    const entries: unknown[] = Array.isArray(v) ? v : [v];
    if (!entries.every((x): x is RawRecord => x !== null && typeof x === 'object' && !Array.isArray(x))) continue;
    const total = amountOf(raw[e.total]);
    const amounts = entries.map((x) => amountOf(x['amount']));
    if (total === null || amounts.some((a) => a === null)) continue;
    const sum = amounts.reduce<number>((a, b) => a + b!, 0);
    if (Math.abs(sum - total) < SAME_AMOUNT) out.push({ child, entries });
  }
  return out;
}

/**
 * One parent's proven children, committed as a read of their lists would commit them: from the
 * record, or, when this use of A48 is checked, from the lists themselves, compared with the
 * record. Each child's records, rows changed, deletions, warnings and drift go to its tally in
 * `tallies`; the check's requests to `requests` (the parent stream's, which sends them).
 */
export interface EmbeddedCommit {
  key: StreamKey;
  parent: StreamSpec;
  parentId: string;
  reason: PendingReason;
  proven: readonly ProvenChildren[];
  tallies: Map<string, StreamTally>;
  requests: StreamTally['meter'];
}

export async function commitProvenChildren(ctx: SyncContext, c: EmbeddedCommit): Promise<void> {
  const parentName = qualifiedName(c.parent);
  if (c.proven.length === 0) return;
  if (ctx.shortcuts?.claimCheck('embedded_children', parentName)) {
    await checkEmbedded(ctx, c);
    return;
  }
  for (const p of c.proven) {
    const tally = tallyOf(c.tallies, p.child);
    const records = embeddedRecords(ctx, c, p, tally);
    await commitChildList(ctx, c, p.child, records, tally);
  }
}

function tallyOf(tallies: Map<string, StreamTally>, child: StreamSpec): StreamTally {
  const name = qualifiedName(child);
  const t = tallies.get(name) ?? newTally();
  tallies.set(name, t);
  return t;
}

function embeddedRecords(ctx: SyncContext, c: EmbeddedCommit, p: ProvenChildren, tally: StreamTally): NormalizedRecord[] {
  const parent = { key: p.child.parent!.key, value: c.parentId };
  return normalizePage(ctx, p.child, c.key.organizationId, p.entries, ctx.stamp.next(), parent, tally);
}

/** Commits one parent's child list and counts it in the child's tally; a check item is judged for A25. */
async function commitChildList(
  ctx: SyncContext,
  c: EmbeddedCommit,
  child: StreamSpec,
  records: NormalizedRecord[],
  tally: StreamTally,
): Promise<void> {
  const syncedAt = ctx.stamp.next();
  for (const r of records) r.row['_synced_at'] = syncedAt;
  const key: StreamKey = { ...c.key, stream: qualifiedName(child) };
  const item = { key, child, parent: c.parent, parentId: c.parentId, syncedAt, records, parentGone: false, reason: c.reason };
  const outcome = await commitChildren(ctx, item);
  tally.records += records.length;
  tally.reads += records.length;
  tally.written += outcome.changed;
  countDeleted(tally, outcome.deleted);
  await judgeChildChanges(ctx, key, c.parent, c.parentId, c.reason, outcome, syncedAt);
}

/**
 * A48 checked: each proven child list is read from its own endpoint and compared, by id, with
 * what the record carried. The lists are what is written. A difference switches the shortcut
 * off for the organization and queues every parent's lists, which this run reads next.
 */
async function checkEmbedded(ctx: SyncContext, c: EmbeddedCommit): Promise<void> {
  const differences: string[] = [];
  for (const p of c.proven) {
    const tally = tallyOf(c.tallies, p.child);
    const embedded = idsOf(embeddedRecords(ctx, c, p, newTally()));
    const read = await readChildList(
      ctx,
      p.child,
      c.key.organizationId,
      c.parentId,
      { ...tally, meter: c.requests },
      null,
      ctx.stamp.next(),
    );
    tally.pages += read.pages;
    const differs = differenceOf(idsOf(read.records), embedded, 'the record');
    if (differs)
      differences.push(`${p.child.name} of ${c.parent.name} ${c.parentId}: ${differs} (its own list has ${read.records.length})`);
    await commitChildList(ctx, c, p.child, read.records, tally);
  }
  const parentName = qualifiedName(c.parent);
  if (differences.length === 0) await ctx.shortcuts!.agreed('embedded_children', parentName);
  // What the shortcut skipped is read once the drain is over (`healEmbedded`): a record taken
  // as proof while this check ran would otherwise take its lists off the queue after them.
  else await ctx.shortcuts!.disagreed('embedded_children', parentName, differences.join('; '));
}

/**
 * After a drain of single records in which A48 was found wrong: every credit's child lists are
 * queued, so the drains that follow read what the records were taken to prove.
 */
export async function healEmbedded(ctx: SyncContext, organizationId: string, parent: StreamSpec): Promise<void> {
  const name = qualifiedName(parent);
  const due = ctx.shortcuts?.unhealed().some((r) => r.shortcut === 'embedded_children' && r.stream === name);
  if (due) await healShortcut(ctx, organizationId, 'embedded_children', name, ctx.stamp.next());
}

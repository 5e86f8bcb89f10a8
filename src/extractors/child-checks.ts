import { CompiledQuery } from 'kysely';
import { carriesChildren, childStreamsOf } from '../catalog/index.js';
import { ident } from '../loaders/sql-dialect.js';
import { qualifiedName, tableName, type StreamSpec } from '../catalog/types.js';
import { countPending, enqueueEveryParent, enqueuePending, unqueuedParents, type PendingReason } from '../state/pending.js';
import { loadStreamState, type StreamKey } from '../state/stream-state.js';
import type { ChildrenOutcome } from '../state/unit-of-work.js';
import type { SyncContext } from './context.js';
import { sampleOf, type ShortcutId } from './shortcuts.js';

/**
 * The checks of A25: a change to a record's child list changes the record's change time, so
 * only the changed records' child lists are read. A parent that did not change and whose child
 * list is read all the same (a reconcile's cycle, a backfill, a check's sample: pending reason
 * `check`) shows whether that holds: its children must not have changed either.
 */

const DAY_MS = 86_400_000;

/** Whether the child stream has been read whole before for the organization: only then can a check compare. */
async function childrenReadBefore(ctx: SyncContext, key: StreamKey): Promise<boolean> {
  return (await loadStreamState(ctx.warehouse.db, key)).row?.last_success_at != null;
}

/**
 * A check's verdict on one unchanged parent's child list, as `commitChildren` wrote it: a child
 * new, changed or gone means the parent's change time did not follow its children. On the first
 * such finding the shortcut is off for the organization and every parent's list is queued now.
 */
export async function judgeChildChanges(
  ctx: SyncContext,
  key: StreamKey,
  parent: StreamSpec,
  parentId: string,
  reason: PendingReason,
  outcome: Pick<ChildrenOutcome, 'changed' | 'removed'>,
  healAt: string,
): Promise<void> {
  const book = ctx.shortcuts;
  if (reason !== 'check' || !book || !book.verifies('child_changes_touch_parent', key.stream)) return;
  if (!(await childrenReadBefore(ctx, key))) return;
  if (outcome.changed === 0 && outcome.removed === 0) {
    await book.agreed('child_changes_touch_parent', key.stream);
    return;
  }
  const what = [outcome.changed ? `${outcome.changed} new or changed` : '', outcome.removed ? `${outcome.removed} gone` : '']
    .filter(Boolean)
    .join(' and ');
  const evidence = `${parent.name} ${parentId} did not change, yet its ${key.stream} list had ${what}`;
  if (await book.disagreed('child_changes_touch_parent', key.stream, evidence))
    await healShortcut(ctx, key.organizationId, 'child_changes_touch_parent', key.stream, healAt);
}

/**
 * Queues the child lists a refuted shortcut may have skipped, for every parent of the
 * organization, and records that it did (`healed_at`): A48 those of every credit (its record's
 * lists), A49 and A25 every parent's list of the child stream. A run that ends before it
 * leaves the verdict unhealed, and the next run does it first (`healUnhealed`).
 */
export async function healShortcut(ctx: SyncContext, organizationId: string, id: ShortcutId, stream: string, at: string): Promise<void> {
  const named = ctx.catalog.find((s) => qualifiedName(s) === stream);
  if (!named) return;
  // A48's verdict is the parent's (its record carries every child list); A49's and A25's are a child stream's.
  const pairs: Array<[StreamSpec, StreamSpec]> =
    id === 'embedded_children'
      ? childStreamsOf(named, ctx.catalog).map((c) => [c, named])
      : ctx.catalog.filter((p) => p.family === named.family && p.name === named.parent?.stream).map((p) => [named, p]);
  for (const [child, parent] of pairs) await healEveryParent(ctx, organizationId, child, parent, at);
  await ctx.shortcuts?.healed(id, stream);
}

/** Heals the refuted shortcuts a run before this one could not (it ended first). Nothing is under way yet. */
export async function healUnhealed(ctx: SyncContext, organizationId: string): Promise<void> {
  for (const row of ctx.shortcuts?.unhealed() ?? []) {
    await healShortcut(ctx, organizationId, row.shortcut as ShortcutId, row.stream, ctx.stamp.next());
  }
}

/**
 * Queues the child list of every live parent of the organization (items already queued keep
 * their place), as a reconcile does: what a wrong shortcut skipped is read in this run.
 * `at` must not be later than the start of the queue's drain, or the drain would leave them.
 */
export async function healEveryParent(
  ctx: SyncContext,
  organizationId: string,
  child: StreamSpec,
  parent: StreamSpec,
  at: string,
): Promise<number> {
  const key: StreamKey = { connection: ctx.connection.name, organizationId, stream: qualifiedName(child) };
  const n = await enqueueEveryParent(
    ctx.warehouse.db,
    ctx.warehouse.sql,
    key,
    'children',
    { table: tableName(parent), key: parent.primaryKey },
    'reconcile',
    at,
  );
  ctx.logger.info({ organization_id: organizationId, stream: key.stream, queued: n }, `re-reading ${key.stream} of every ${parent.name}`);
  return n;
}

/**
 * On a new connection (and at least every `at_least_every_days`), when nothing else re-reads
 * unchanged parents' child lists: queues the lists of a few parents that did not change, as
 * checks of A25. Where the parent's single record carries its child lists (A48), its record is
 * queued instead: one request checks both lists.
 */
export async function sampleChildChecks(ctx: SyncContext, organizationId: string, parent: StreamSpec, runStartedAt: string): Promise<void> {
  const book = ctx.shortcuts;
  if (!book || !parent.cursor) return;
  // Work left by earlier runs (a first sync the quota cut short) comes first: checks wait for it.
  const backlog = { connection: ctx.connection.name, organizationId, enqueuedBefore: runStartedAt };
  if ((await countPending(ctx.warehouse.db, { ...backlog, stream: qualifiedName(parent) })) > 0) return;
  const children = childStreamsOf(parent, ctx.catalog);
  const viaRecord = carriesChildren(parent, ctx.catalog) && book.uses('embedded_children', qualifiedName(parent));
  const parentTable = { table: tableName(parent), key: parent.primaryKey };
  const day = Math.floor(ctx.clock.now() / DAY_MS);
  const now = ctx.stamp.next();
  for (const child of children) {
    const key: StreamKey = { connection: ctx.connection.name, organizationId, stream: qualifiedName(child) };
    const wanted = book.verifies('child_changes_touch_parent', key.stream)
      ? book.checksWanted('child_changes_touch_parent', key.stream)
      : 0;
    if (wanted === 0 || !(await childrenReadBefore(ctx, key))) continue;
    if ((await countPending(ctx.warehouse.db, { ...backlog, stream: key.stream })) > 0) continue;
    const through: StreamKey = viaRecord ? { ...key, stream: qualifiedName(parent) } : key;
    const kind = viaRecord ? 'detail' : 'children';
    const candidates = await unqueuedParents(ctx.warehouse.db, ctx.warehouse.sql, through, kind, parentTable);
    // Parents with children first: a changed or deleted child can only show under one.
    const withChildren = await parentsWithChildren(ctx, child, organizationId);
    const ids = [
      ...sampleOf(
        candidates.filter((id) => withChildren.has(id)),
        wanted,
        day,
      ),
      ...sampleOf(
        candidates.filter((id) => !withChildren.has(id)),
        wanted,
        day,
      ),
    ].slice(0, wanted);
    if (ids.length === 0) continue;
    await enqueuePending(ctx.warehouse.db, through, kind, ids, 'check', now);
    ctx.logger.info(
      { organization_id: organizationId, stream: key.stream, parents: ids.length },
      `checking that unchanged ${parent.name} have unchanged ${child.name} (A25): reading ${ids.length}`,
    );
    // One record carries every child list: a sample for the first child checks them all.
    if (viaRecord) return;
  }
}

/** The parents of the organization that have live rows of `child`. */
async function parentsWithChildren(ctx: SyncContext, child: StreamSpec, organizationId: string): Promise<Set<string>> {
  const key = ident(child.parent!.key);
  const p = ctx.warehouse.sql.param(1);
  const result = await ctx.warehouse.db.executeQuery<{ id: unknown }>(
    CompiledQuery.raw(
      `SELECT DISTINCT ${key} AS id FROM ${ident(tableName(child))} WHERE "organization_id" = ${p} AND "_deleted_at" IS NULL`,
      [organizationId],
    ),
  );
  return new Set(result.rows.map((r) => String(r.id)));
}

import pLimit from 'p-limit';
import type { Family } from '../catalog/families.js';
import type { StreamSpec } from '../catalog/types.js';
import { qualifiedName } from '../catalog/types.js';
import { childStreamsOf } from '../catalog/index.js';
import { AuthorizationError, describeError, QuotaExhaustedError, WarehouseError } from '../core/errors.js';
import { LeaseLost } from '../loaders/lease/fence.js';
import { completeChildren, completeDetails } from './completion.js';
import { runAll } from './settle.js';
import { mergeTally, newTally, type StreamTally } from './stream-tally.js';
import type { SyncContext } from './context.js';
import { endsTheRun, raiseIfStopped } from './stop.js';
import type { SyncMode } from './pass-start.js';
import { runStreamPass } from './stream-pass.js';
import { healUnhealed, sampleChildChecks } from './child-checks.js';
import { OrgShortcuts } from './shortcuts.js';
import { counts, outcomeOf, recordStream, type OrganizationOutcome, type OrganizationRun, type StreamOutcome } from './stream-outcome.js';
import { deniedBy, detailsQueued, selectStreams, whySkipped } from './stream-selection.js';

export type { OrganizationOutcome, OrganizationRun, StreamOutcome, StreamStatus } from './stream-outcome.js';
export { selectStreams } from './stream-selection.js';

export interface OrganizationSyncOptions {
  mode: SyncMode;
  since?: string | undefined;
  deep?: boolean | undefined;
  wholeReadCycle?: boolean | undefined;
  streams?: readonly string[] | undefined;
  /** Told the organization's outcome so far when the run is stopped under it (the stop itself propagates). */
  onStopped?: (outcome: OrganizationOutcome) => void;
}

/**
 * Syncs every selected stream of one organization: every top-level stream's list pages first,
 * then their queued single-record reads and child lists (a backfill, tree by tree). A stream
 * that fails is reported and the others carry on; a spent quota stops this organization only;
 * a missing scope stops the streams that need it; a warehouse fault or a lost lease stops them all.
 */
export async function syncOrganization(
  runCtx: SyncContext,
  organizationId: string,
  families: Family[],
  options: OrganizationSyncOptions,
): Promise<OrganizationRun> {
  const run = await OrganizationSync.open(runCtx, organizationId, families, options);
  return run.run();
}

/** A stream under way: its outcome so far, what it spent and committed, when it started. */
interface Started {
  stream: StreamSpec;
  base: StreamOutcome;
  tally: StreamTally;
  startedAt: string;
}

/**
 * One organization's run, step by step (`run`): heal what an earlier run left, read the streams
 * in their order (headers, then details and children), keep what the shortcut checks found, and
 * sum the streams up into the organization's outcome.
 */
export class OrganizationSync {
  private readonly outcome: OrganizationOutcome;
  private readonly log: SyncContext['logger'];
  private readonly top: StreamSpec[];
  private readonly allowed: (s: StreamSpec) => boolean;
  private quota: QuotaExhaustedError | null = null;
  /** A warehouse fault that outlived its retries, or a lost lease: nothing more may be written, so no other stream starts. */
  private ended: WarehouseError | LeaseLost | null = null;
  private readonly denied = { scopes: new Set<string>(), families: new Set<Family>() };
  /**
   * Streams of one organization share its limiter; two at a time keeps a page being
   * written while the next is fetched, without crowding the per-minute window.
   */
  private readonly limit = pLimit(2);
  /** Started and not yet reported: what a stop reports as 'stopped'. */
  private readonly open = new Set<Started>();
  /** Streams whose list pages are in, waiting for their details. */
  private readonly headersRead = new Map<StreamSpec, Started>();

  private constructor(
    private readonly ctx: SyncContext,
    private readonly shortcuts: OrgShortcuts,
    private readonly organizationId: string,
    families: Family[],
    private readonly options: OrganizationSyncOptions,
    private readonly startedAt: string,
  ) {
    this.outcome = { connection: ctx.connection.name, organizationId, families, status: 'ok', streams: [] };
    ({ top: this.top, allowed: this.allowed } = selectStreams(ctx.catalog, families, options.streams));
    this.log = ctx.logger.child({ organization_id: organizationId });
  }

  /** The organization's run with its shortcuts' settings loaded. */
  static async open(
    runCtx: SyncContext,
    organizationId: string,
    families: Family[],
    options: OrganizationSyncOptions,
  ): Promise<OrganizationSync> {
    const shortcuts = await OrgShortcuts.load(runCtx.warehouse.db, runCtx.config, {
      connection: runCtx.connection.name,
      organizationId,
      now: () => runCtx.clock.now(),
      logger: runCtx.logger,
    });
    const ctx: SyncContext = { ...runCtx, shortcuts };
    return new OrganizationSync(ctx, shortcuts, organizationId, families, options, ctx.stamp.next());
  }

  async run(): Promise<OrganizationRun> {
    // What a shortcut found wrong in an earlier run may have missed, if that run ended before queuing it.
    await healUnhealed(this.ctx, this.organizationId);
    await this.readStreams();
    if (!this.ended) await this.shortcuts.flush();
    return { outcome: this.summary(), ended: this.ended };
  }

  /**
   * Phase 1, every header: each top-level stream's list pages. Their single-record reads and
   * child lists wait in `_svcsync_pending` (committed with each page) until phase 2, so a
   * first sync that runs out of quota has delivered every stream's list rows. A backfill goes
   * tree by tree instead: the daemon leaves a tree a backfill has started on to it until it is
   * finished (treesInBackfill), so a backfill that started every tree's list at once would hold
   * back every incremental run of the organization for days.
   */
  private async readStreams(): Promise<void> {
    const phases =
      this.options.mode === 'backfill'
        ? [
            this.top.map((s) => async () => {
              await this.readHeaders(s);
              await this.readDetails(s);
            }),
          ]
        : [this.top.map((s) => () => this.readHeaders(s)), this.top.map((s) => () => this.readDetails(s))];
    try {
      for (const phase of phases) await runAll(this.limit, phase);
    } catch (error) {
      if (endsTheRun(error, this.ctx.signal)) this.stopped();
      throw error;
    }
  }

  private async readHeaders(stream: StreamSpec): Promise<void> {
    const started = this.start(stream);
    if (!started) return;
    const read = await this.attempt(started, (tally) => runStreamPass(this.ctx, this.organizationId, stream, this.options, tally));
    if (read) this.headersRead.set(stream, started);
    else await this.finish(started);
  }

  /**
   * Phase 2, the details: each stream's queued single-record reads (newest record first, see
   * takePending), then its child streams.
   */
  private async readDetails(stream: StreamSpec): Promise<void> {
    const embedded = new Map<string, StreamTally>();
    const started = this.headersRead.get(stream);
    if (started) await this.completeDetails(started, embedded);
    await this.drain(stream, embedded);
  }

  /**
   * A stream's single-record reads. One whose headers are in but whose details are held back
   * (the quota spent, the token refused, the warehouse gone) reports why, with its counts.
   */
  private async completeDetails(started: Started, embedded: Map<string, StreamTally>): Promise<void> {
    const { stream } = started;
    const why = this.blocked(stream);
    if (why === null) {
      await this.attempt(started, async (tally) => {
        // A few unchanged records' children, as checks of A25; a reconcile's cycle re-reads some anyway.
        if (this.options.mode === 'incremental') await sampleChildChecks(this.ctx, this.organizationId, stream, this.startedAt);
        await completeDetails(this.ctx, this.organizationId, stream, tally, this.allowed, embedded);
      });
    } else if (await detailsQueued(this.ctx, this.organizationId, stream)) {
      const quota = this.quota !== null && this.ended === null ? this.quota : null;
      started.base.status = quota ? 'quota' : 'failed';
      started.base.error = quota ? describeError(quota) : why;
    }
    await this.finish(started);
  }

  /** The child streams under `parent`, each after its parent, depth first. */
  private async drain(parent: StreamSpec, embedded: Map<string, StreamTally>): Promise<void> {
    for (const child of childStreamsOf(parent)) {
      if (!this.allowed(child) && !childStreamsOf(child).some(this.allowed)) continue;
      await this.runOne(child, (tally) => {
        // Children the parents' single records carried are this stream's: records, rows changed, warnings and drift.
        const fromParents = embedded.get(qualifiedName(child));
        if (fromParents) mergeTally(tally, fromParents);
        return completeChildren(this.ctx, this.organizationId, child, parent, tally);
      });
      await this.drain(child, embedded);
    }
  }

  private async runOne(stream: StreamSpec, work: (tally: StreamTally) => Promise<unknown>): Promise<void> {
    const started = this.start(stream);
    if (!started) return;
    await this.attempt(started, work);
    await this.finish(started);
  }

  /** What keeps a stream from its next request (see whySkipped), or null. */
  private blocked(stream: StreamSpec): string | null {
    const lost = this.ctx.fence?.lost();
    if (lost) this.ended ??= lost;
    return this.skipped(stream);
  }

  private skipped(stream: StreamSpec): string | null {
    return whySkipped({
      ended: this.ended,
      quota: this.quota !== null,
      halted: this.ctx.halt.authorization !== null,
      denied: deniedBy(stream, this.denied),
    });
  }

  /** Starts a stream, or reports it skipped without a request (null). */
  private start(stream: StreamSpec): Started | null {
    const base = outcomeOf(this.organizationId, stream);
    const skipped = this.skipped(stream);
    if (skipped !== null) {
      this.outcome.streams.push({ ...base, status: 'skipped', error: skipped });
      return null;
    }
    // No new stream starts once a stop is asked for.
    raiseIfStopped(this.ctx);
    const lost = this.ctx.fence?.lost();
    if (lost) {
      this.ended ??= lost;
      this.outcome.streams.push({ ...base, status: 'skipped', error: "the organization's lease was lost" });
      return null;
    }
    const started: Started = { stream, base, tally: newTally(), startedAt: this.ctx.stamp.next() };
    this.open.add(started);
    return started;
  }

  /**
   * One step of a started stream's work. A failure is the stream's (false): it is classified,
   * and a spent quota, a refused token or scope, a warehouse fault or a lost lease holds back
   * the streams after it. A stop propagates.
   */
  private async attempt(started: Started, work: (tally: StreamTally) => Promise<unknown>): Promise<boolean> {
    try {
      await work(started.tally);
      return true;
    } catch (error) {
      if (endsTheRun(error, this.ctx.signal)) throw error;
      const { base, stream } = started;
      base.status = error instanceof QuotaExhaustedError ? 'quota' : 'failed';
      base.error = describeError(error);
      this.holdBack(error, stream);
      this.log.error({ stream: base.stream, err: error }, `stream failed: ${describeError(error)}`);
      return false;
    }
  }

  /** What a stream's failure holds back of the streams after it. */
  private holdBack(error: unknown, stream: StreamSpec): void {
    // A lost lease ends the organization here: nothing more is written for it.
    if (error instanceof WarehouseError || error instanceof LeaseLost) this.ended ??= error;
    if (error instanceof QuotaExhaustedError) this.quota = error;
    if (error instanceof AuthorizationError) {
      // Every stream of the connection shares the token: one message stops them all.
      if (error.reach === 'connection') this.ctx.halt.authorization ??= error;
      else if (error.scope !== undefined) this.denied.scopes.add(error.scope);
      else this.denied.families.add(stream.family);
    }
  }

  /** Reports a started stream: whatever way it ended, what it spent and committed. */
  private async finish(started: Started): Promise<void> {
    const { base, tally, startedAt } = started;
    this.open.delete(started);
    Object.assign(base, counts(tally));
    tally.warnings.log(this.log, { stream: base.stream });
    this.outcome.streams.push(base);
    // The warehouse cannot take the stream's record now, or may no longer (the lease is gone); what it committed is in the summary.
    if (this.ended) return;
    await recordStream(this.ctx, base, tally, startedAt, this.log);
  }

  /** A stop: what each stream under way committed before it is still the run's to report. */
  private stopped(): void {
    for (const { base, tally } of this.open) this.outcome.streams.push({ ...base, ...counts(tally), status: 'stopped' });
    this.open.clear();
    this.options.onStopped?.({ ...this.outcome, status: 'stopped' });
  }

  /** The organization's outcome from its streams': what ended it, or how many failed. */
  private summary(): OrganizationOutcome {
    const { outcome, ended, quota } = this;
    if (this.shortcuts.refutedNow.length) outcome.shortcuts = [...this.shortcuts.refutedNow];
    const failed = outcome.streams.filter((s) => s.status === 'failed' || s.status === 'quota');
    if (ended) {
      outcome.status = 'failed';
      outcome.failure = ended instanceof WarehouseError ? 'warehouse' : 'lease';
      outcome.error = ended.describe();
    } else if (this.ctx.halt.authorization) {
      outcome.status = 'failed';
      outcome.error = this.ctx.halt.authorization.describe();
    } else if (quota) {
      outcome.status = 'quota';
      outcome.resumeAt = quota.resumeAt.toISOString();
      outcome.error = quota.describe();
    } else if (failed.length === outcome.streams.length && failed.length > 0) {
      outcome.status = 'failed';
      outcome.error = failed[0]!.error;
    } else if (failed.length) {
      outcome.status = 'partial';
      outcome.error = `${failed.length} of ${outcome.streams.length} streams failed`;
    }
    return outcome;
  }
}

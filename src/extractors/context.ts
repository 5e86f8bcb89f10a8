import type { ApiClient } from '../api/client.js';
import type { LimiterRegistry } from '../api/limiter.js';
import type { StreamSpec } from '../catalog/types.js';
import type { Config, ConnectionConfig } from '../config/schema.js';
import type { Clock } from '../core/clock.js';
import type { AuthorizationError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { Fence } from '../loaders/lease/fence.js';
import type { TableWriter } from '../loaders/table-writer.js';
import type { Warehouse } from '../loaders/warehouse.js';
import type { HistorySink } from '../loaders/history-sink.js';
import type { RecordBudget } from './record-budget.js';
import type { StopRequest } from './stop.js';
import type { OrgShortcuts } from './shortcuts.js';

/** What a stream reports while it runs; the CLI draws bars on a terminal and logs otherwise. */
export interface ProgressReporter {
  streamStarted(e: { connection: string; organizationId: string; stream: string; kind: string }): void;
  page(e: {
    connection: string;
    organizationId: string;
    stream: string;
    page: number;
    records: number;
    written: number;
    requestsLeftToday: number | null;
  }): void;
  streamFinished(e: {
    connection: string;
    organizationId: string;
    stream: string;
    status: 'ok' | 'failed' | 'partial';
    records: number;
    pages: number;
  }): void;
  /** The organization sends nothing until `until` (epoch ms), for `reason`: a terminal shows it with the time left. */
  waiting?(e: { connection: string; organizationId: string; reason: string; until: number }): void;
}

export const silentProgress: ProgressReporter = {
  streamStarted: () => undefined,
  page: () => undefined,
  streamFinished: () => undefined,
};

/**
 * Instants used as `_synced_at` and pass start times. Strictly increasing within a process
 * (even under a clock that does not move), so "written before this pass started" is a
 * comparison that cannot tie.
 */
export class Stamp {
  private last = 0;
  constructor(private readonly clock: Clock) {}
  next(): string {
    const now = Math.max(this.clock.now(), this.last + 1);
    this.last = now;
    return new Date(now).toISOString();
  }
}

/** Everything a sync needs, passed explicitly; nothing is global. */
export interface SyncContext {
  config: Config;
  connection: ConnectionConfig;
  warehouse: Warehouse;
  writer: TableWriter;
  client: ApiClient;
  limiters: LimiterRegistry;
  catalog: readonly StreamSpec[];
  logger: Logger;
  clock: Clock;
  stamp: Stamp;
  /** Hard stop: abandons the requests in flight (a second SIGTERM, the end of the grace period). */
  signal: AbortSignal;
  /** Cooperative stop: asked before each new page or completion item (src/extractors/stop.ts). */
  stop: StopRequest;
  progress: ProgressReporter;
  runId: string;
  /**
   * Set once for the whole connection when its token is refused for good: streams not yet
   * started are skipped and the run reports one authorization failure, not one per stream.
   */
  halt: { authorization: AuthorizationError | null };
  /**
   * Unknown fields already warned about in this run (`stream` and field path), shared by the
   * contexts of every connection of the run so each field is warned about once per run
   * (src/extractors/drift-report.ts). Absent: once per stream of each organization.
   */
  driftWarned?: Set<string>;
  /**
   * The organization's lease check, run first in each page's transaction (src/loaders/lease/):
   * set by runSync for the organization it holds. Absent (no check) where no lease applies.
   */
  fence?: Fence;
  /** The streams of this connection that keep history, and the writer of versions (src/loaders/history-sink.ts). */
  history?: HistorySink;
  /**
   * The process's cap on records in flight (`sync.max_records_in_flight`), shared by every
   * organization and connection it runs. Absent (no cap) where a test drives one unit alone.
   */
  records?: RecordBudget;
  /** Lists that refused `page`/`per_page` this run (A11, `pages`); absent: each walk finds out anew. */
  pagingRefused?: Set<string>;
  /**
   * The organization's request-saving readings of the API and what checks found of them
   * (src/extractors/shortcuts.ts), set by `syncOrganization`. Absent (a test driving one unit):
   * every shortcut is taken and none is checked.
   */
  shortcuts?: OrgShortcuts;
}

/**
 * Messages between the benchmark driver (bench/run.ts) and its two child processes:
 * the sandbox (bench/sandbox-child.ts) and the svcsync process (bench/sync-child.ts).
 * Each runs in its own process so the API stand-in and svcsync never share an event loop.
 */
import type { RequestLog } from '../sandbox/index.js';

export interface StreamRef {
  family: 'books' | 'inventory' | 'invoice' | 'billing';
  stream: string;
}

export interface SandboxSpec {
  scale: number;
  organizations: number;
  seed: number;
  /** Streams whose sizes the driver needs (per organization) to compute the minimum requests. */
  count: StreamRef[];
}

export type SandboxMessage =
  | {
      type: 'ready';
      url: string;
      credentials: { client_id: string; client_secret: string; refresh_token: string };
      organizations: string[];
      /** organization id -> "family.stream" -> records. */
      counts: Record<string, Record<string, number>>;
      startupMs: number;
    }
  | { type: 'log'; log: RequestLog; cpuUserMs: number; cpuSystemMs: number };

export type SandboxCommand = { type: 'log' } | { type: 'reset' } | { type: 'stop' };

export interface SyncSpec {
  warehouseUrl: string;
  sandboxUrl: string;
  credentials: { client_id: string; client_secret: string; refresh_token: string };
  families: StreamRef['family'][];
  /** Qualified stream names (`family.stream`) for the connection's allowlist. */
  streams: string[];
  perPage: number;
  organizationConcurrency: number;
  /** Requests in flight per organization (the sandbox is unthrottled; the client still gates). */
  concurrency: number;
  sampleMs: number;
  /** Record counts at which to note the RSS (memory-vs-data check). */
  checkpoints: number[];
  /** Bound on the run; the child aborts the sync after this many ms. */
  timeoutMs: number;
  logLevel: string;
  /** Tables whose row counts to report after the sync (checked against the sandbox). */
  tables: string[];
  /** Time every SQLite statement by its shape (diagnostic; adds overhead). */
  sqlStats?: boolean;
  /** Diagnostic experiments applied in the svcsync process only (see sync-child.ts). */
  experiments?: string[];
  /**
   * Re-syncs to run after the first sync, one after the other, with nothing changed at the
   * sandbox: each is timed on its own (`SyncResult.resyncs`).
   */
  resync?: Array<'incremental' | 'reconcile'>;
}

/** A re-sync with nothing changed (SyncSpec.resync). */
export interface ResyncFigure {
  mode: 'incremental' | 'reconcile';
  elapsedMs: number;
  cpuUserMs: number;
  cpuSystemMs: number;
  /** Rows new or changed, summed over streams: 0 when nothing changed. */
  written: number;
}

export interface StreamFigure {
  organizationId: string;
  stream: string;
  status: string;
  pages: number;
  records: number;
  written: number;
  requests: number;
}

export interface Checkpoint {
  records: number;
  atMs: number;
  rssMb: number;
  peakRssMb: number;
  heapUsedMb: number;
  /** V8 heap still in use after a full GC at this point (needs --expose-gc): what the run retains. */
  heapAfterGcMb?: number;
}

export interface SyncResult {
  type: 'result';
  ok: boolean;
  error?: string;
  exitCode: number;
  elapsedMs: number;
  migrateMs: number;
  /** Requests the client says it sent (API calls, token requests excluded). */
  clientRequests: number;
  streams: StreamFigure[];
  peakRssMb: number;
  startRssMb: number;
  endRssMb: number;
  peakHeapUsedMb: number;
  samples: number;
  checkpoints: Checkpoint[];
  /** CPU time of the svcsync process during the sync, ms. */
  cpuUserMs: number;
  cpuSystemMs: number;
  /** Live rows per table after the sync. */
  tableRows: Record<string, number>;
  sqlStats?: SqlStat[];
  resyncs?: ResyncFigure[];
}

export interface SqlStat {
  shape: string;
  count: number;
  prepareMs: number;
  executeMs: number;
}

/** The bare loader's run (bench/bare-child.ts): issue 14's yardstick. */
export interface BareSpec {
  dialect: 'sqlite' | 'postgres';
  /** A SQLite file path, or a Postgres URL. */
  warehouse: string;
  sandboxUrl: string;
  credentials: { client_id: string; client_secret: string; refresh_token: string };
  organizations: string[];
  /** Qualified list-only streams. */
  streams: string[];
  perPage: number;
  /**
   * 'narrow': id, three scalar columns and the raw JSON (issue 14's yardstick as first written).
   * 'same-rows': the tables and rows svcsync writes (every catalog column, one table per child array).
   * 'read-only': the pages fetched and parsed, nothing written: what reading the lists costs any
   * loader, the floor of a re-sync that reads every page.
   */
  shape: 'narrow' | 'same-rows' | 'read-only';
  /** Postgres type of the raw column (svcsync's _raw is jsonb); default 'text'. */
  rawType?: 'text' | 'jsonb';
}

export type BareResult =
  | {
      type: 'bare';
      elapsedMs: number;
      records: number;
      requests: number;
      cpuUserMs: number;
      cpuSystemMs: number;
      peakRssMb: number;
      /** `family_stream` → rows the loader holds at the end. */
      tableRows: Record<string, number>;
      error?: undefined;
    }
  | { type: 'bare'; error: string };

/** The answer server of the http-client scenario (bench/http-answer-server.ts). */
export interface AnswerServerSpec {
  /** One answer of about each size, KB. */
  sizesKb: number[];
}

export interface AnswerServerReady {
  type: 'ready';
  url: string;
  /** Per size asked for, where it is served and its exact length. */
  answers: Array<{ kb: number; path: string; bytes: number }>;
}

/** The HTTP clients the http-client scenario compares: the global `fetch`, and svcsync's `httpGet` over node:http. */
export type HttpClientName = 'fetch' | 'node:http';

/** One client process of the http-client scenario (bench/http-client-child.ts). */
export interface HttpClientSpec {
  client: HttpClientName;
  url: string;
  /** Requests measured, after `warmup` unmeasured ones. */
  requests: number;
  warmup: number;
  inFlight: number;
  /** Each request's time-out, as svcsync's client sets one. */
  timeoutMs: number;
}

export type HttpClientResult =
  | {
      type: 'http-client';
      requests: number;
      /** Body bytes received over the measured requests. */
      bytes: number;
      elapsedMs: number;
      cpuUserMs: number;
      cpuSystemMs: number;
      error?: undefined;
    }
  | { type: 'http-client'; error: string };

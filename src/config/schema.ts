import { CronTime } from 'cron';
import { z } from 'zod';
import { FAMILIES } from '../catalog/families.js';
import { connectionFreshnessSchema, daemonFreshnessSchema } from './freshness.js';
import { PLANS, REGIONS } from './plans.js';

/**
 * The configuration file's schema. Types are derived from it (z.infer); there is no
 * second copy. Every key is documented in config/svcsync.example.yaml.
 */
const nonEmpty = z.string().trim().min(1, 'must not be empty');

const limitsSchema = z
  .object({
    per_minute: z.number().int().positive().optional(),
    per_day: z.number().int().positive().optional(),
    concurrency: z.number().int().positive().optional(),
    window_ms: z.number().int().positive().optional(),
    reserve: z.number().min(0).max(0.95).optional(),
    /**
     * Whom the server's concurrency limit counts (spec 8 does not say, A46): each organization
     * (the default), or the user whose token the connection holds, across all its organizations.
     */
    concurrency_scope: z.enum(['organization', 'user']).optional(),
  })
  .strict();

/** A cron expression (5 fields, or 6 with seconds), or "off" to not schedule the job at all. */
const cronSchema = z
  .string()
  .trim()
  .superRefine((value, ctx) => {
    if (value === 'off') return;
    const check = CronTime.validateCronExpression(value);
    if (!check.valid) {
      ctx.addIssue({
        code: 'custom',
        message: `"${value}" is not a cron expression (${check.error?.message ?? 'invalid'}); expected e.g. "*/15 * * * *" or "off"`,
      });
    }
  });

const timeZoneSchema = z.string().refine((zone) => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}, 'expected an IANA time zone such as UTC or Europe/Berlin');

/** When the daemon runs each kind of job; unset keys fall back to `daemon.schedules`, then the defaults. */
const scheduleFields = {
  /** Incremental sync of transaction streams (and their child and single-record completions). */
  incremental: cronSchema.optional(),
  /**
   * Incremental sync of the trees read whole on every run (a list without a change field with
   * child lists: invoice projects and their tasks); unset, `incremental` if set, else the plan's default.
   */
  whole_read: cronSchema.optional(),
  /** Settings-like streams (`kind: settings`) and organization discovery. */
  settings: cronSchema.optional(),
  /** `--reconcile`: re-read ids to find deleted records. */
  reconcile: cronSchema.optional(),
  /** When a backfill under the daemon may take the day's leftover budget. */
  backfill: cronSchema.optional(),
  time_zone: timeZoneSchema.optional(),
};

const streamScheduleSchema = z
  .object({ incremental: cronSchema.optional(), reconcile: cronSchema.optional(), time_zone: timeZoneSchema.optional() })
  .strict();

const connectionScheduleSchema = z
  .object({
    ...scheduleFields,
    /** Per-stream overrides, keyed `family.stream` (a top-level stream; its child streams follow it). */
    streams: z.record(z.string(), streamScheduleSchema).optional(),
  })
  .strict();

const daemonSchema = z
  .object({
    schedules: z.object(scheduleFields).strict().default({}),
    /** How fresh each stream is kept, in place of cron periods (docs/daemon.md, "Freshness"). */
    freshness: daemonFreshnessSchema.default(daemonFreshnessSchema.parse({})),
    /** Spread a backfill of every stream across days on the leftover budget (same as `daemon --backfill`). */
    backfill: z.boolean().default(false),
    /** Shutdown bound: running jobs get this long to finish their page before they are aborted. */
    shutdown_grace_ms: z.number().int().min(0).default(30_000),
    /** Higher-priority demand still to come today is multiplied by this before backfill may take the rest. */
    budget_safety: z.number().min(1).max(10).default(1.25),
    /** First wait after an organization or connection failed; doubles per failure up to retry_backoff_max_ms. */
    retry_backoff_ms: z.number().int().min(0).default(60_000),
    retry_backoff_max_ms: z.number().int().min(0).default(3_600_000),
    /** Jobs running at once across all organizations. */
    max_concurrent_jobs: z.number().int().min(1).default(4),
    /**
     * One HTTP port for the status page (`/`, `/status.json`), webhooks (`/hooks/...`), `/healthz`,
     * `/healthz/fleet` and `/metrics` (same as --http-port; `metrics_port` is the older name of the same setting).
     */
    http_port: z.number().int().min(0).max(65535).optional(),
    metrics_port: z.number().int().min(0).max(65535).optional(),
    /** Address the HTTP port binds to (same as --http-host); 127.0.0.1 keeps it on this machine. */
    http_host: z.string().optional(),
    metrics_host: z.string().default('127.0.0.1'),
    /** Basic auth for the status page, /status.json and /metrics (hooks use their own secret; the health routes stay open). */
    http_auth: z.object({ username: nonEmpty, password: nonEmpty }).strict().optional(),
    /** Webhook-triggered runs (docs/daemon.md, "Webhooks"). */
    hooks: z
      .object({
        /** Hooks for one organization within this long start one run this long after the first. */
        debounce_ms: z.number().int().min(0).max(3_600_000).default(10_000),
        /** Hooks a minute one address may send before it gets 429. */
        per_address_per_minute: z.number().int().min(1).default(120),
        /** Larger hook bodies get 413. */
        max_body_bytes: z
          .number()
          .int()
          .min(0)
          .max(10 * 1024 * 1024)
          .default(64 * 1024),
      })
      .strict()
      .default({ debounce_ms: 10_000, per_address_per_minute: 120, max_body_bytes: 64 * 1024 }),
    /** What `/healthz/fleet` calls unhealthy (docs/daemon.md, "Health"); `/healthz` is the process's own readiness. */
    health: z
      .object({
        /**
         * `/healthz/fleet` answers 503 when more than this share of the organizations are failing
         * (any failing connection makes it 503 as well). Half: one organization's bad data is not the
         * fleet's health, while most of them failing at once means something they share is wrong.
         */
        max_failing_ratio: z.number().min(0).max(1).default(0.5),
      })
      .strict()
      .default({ max_failing_ratio: 0.5 }),
  })
  .strict();

/** A Postgres schema name svcsync may quote into SQL text: letters, digits and "_", at most 50. */
export const PLAIN_SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,49}$/;

/** `svcsync worker` (docs/scale-out.md): peers coordinated through pg-boss in the Postgres warehouse. */
const workerSchema = z
  .object({
    /** Postgres schema pg-boss keeps its queues, jobs and schedules in (in the warehouse database). */
    schema: z.string().regex(PLAIN_SCHEMA_NAME, 'expected a Postgres schema name: letters, digits and "_", at most 50').default('pgboss'),
    /** Sync jobs this process runs at once. */
    concurrency: z.number().int().min(1).max(64).default(4),
    /** A job syncs for at most this long, then stops between pages and queues its continuation. */
    slice_minutes: z.number().min(0.01).max(60).default(10),
  })
  .strict();

/**
 * Which streams keep history (`{table}_history`, docs/warehouse.md "History"): `all`, `off`, or a
 * list of streams (`family.stream` or a bare name, as `streams:` takes them). A stream's child
 * tables and child streams follow it.
 */
export const historySchema = z.union([z.literal('all'), z.literal('off'), z.array(nonEmpty).min(1)]);
export type HistorySetting = z.infer<typeof historySchema>;

/** How svcsync treats one of its request-saving readings of the API (`sync.shortcuts`). */
export const shortcutSetting = z.enum(['verify', 'off', 'trust']).default('verify');

const connectionSchema = z
  .object({
    name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'expected a label of letters, digits, ".", "_" or "-"'),
    region: z.enum(REGIONS).default('us'),
    accounts_url: z.url().optional(),
    /** Overrides the token response's api_domain (for proxies); normally unset. */
    api_url: z.url({ protocol: /^https?$/ }).optional(),
    client_id: nonEmpty,
    client_secret: nonEmpty,
    refresh_token: nonEmpty,
    redirect_uri: z.string().optional(),
    plan: z.enum(PLANS).default('free'),
    limits: limitsSchema.optional(),
    families: z
      .array(z.enum(FAMILIES))
      .min(1)
      .default([...FAMILIES]),
    organizations: z
      .array(z.union([nonEmpty, z.number().int().transform(String)]))
      .min(1)
      .optional(),
    streams: z.array(nonEmpty).min(1).optional(),
    /** Time zone whose midnight resets the daily quota (the spec does not say; see assumptions). */
    quota_reset_time_zone: z.string().default('UTC'),
    /** The daemon's schedules for this connection (see `daemon.schedules` for the defaults). */
    schedules: connectionScheduleSchema.optional(),
    /** Freshness targets for this connection, over `daemon.freshness`. */
    freshness: connectionFreshnessSchema.optional(),
    /** The secret a webhook caller presents (`?secret=` or `X-Svcsync-Secret`); unset: hooks are off for this connection. */
    webhook_secret: z.string().min(16, 'expected at least 16 characters (use a long random value, e.g. openssl rand -hex 32)').optional(),
    /** Overrides the top-level `history` for this connection. */
    history: historySchema.optional(),
  })
  .strict();

const syncSchema = z
  .object({
    per_page: z.number().int().min(1).max(200).default(200),
    /** Incremental reads go this far behind the cursor, for clock skew and same-second edits. */
    lookback_seconds: z.number().int().min(0).default(300),
    /** Organizations synced at once. */
    organization_concurrency: z.number().int().min(1).default(4),
    /**
     * Records a process holds between their response and their commit, across every organization,
     * stream and connection (src/extractors/record-budget.ts): more work at once waits for room
     * instead of holding more pages, so memory does not grow with organization_concurrency.
     */
    max_records_in_flight: z.number().int().min(1).default(4_000),
    /**
     * The JavaScript heap a sync process aims to stay under (src/core/heap-budget.ts): past it,
     * a full garbage collection runs. 0 leaves collection to V8 alone.
     */
    heap_budget_mb: z.number().int().min(0).default(96),
    /** Fetch each new or changed event's detail (payload, webhooks): one request per event. */
    event_details: z.boolean().default(false),
    /** Fetch each new or changed user's detail (email_ids, cost_rate, is_employee, created_time): one request per user. */
    user_details: z.boolean().default(false),
    request_timeout_ms: z.number().int().positive().default(60_000),
    max_retries: z.number().int().min(0).default(6),
    /**
     * A keep-alive connection to the API left idle this long is closed (src/api/http-get.ts): a
     * server that closes idle connections first makes the next request sent on one fail. Below
     * the shortest server timeout on the way (a Node.js server's 5 s, a load balancer's 60 s).
     */
    idle_socket_timeout_ms: z.number().int().min(100).max(600_000).default(4_000),
    /**
     * The largest API answer read, in MB, as sent and once decoded: a compressed answer may
     * inflate to far more than it weighs. A page of 200 records is well under 1 MB.
     */
    max_answer_mb: z.number().int().min(1).max(1024).default(64),
    /**
     * Envelope codes with which a single-record read or a parent's child list says the record
     * no longer exists (spec 7: 1002): the record is marked deleted. Another code fails the
     * item alone, which waits in the queue behind the others (A4).
     */
    gone_codes: z.array(z.number().int()).min(1).default([1002]),
    /**
     * A reconcile reads every list's pages (deleted records are found that way every time) and
     * re-reads every parent's child lists once in this many days, a share of the parents each day;
     * besides, the changed parents' children are read. 0 re-reads them on every reconcile (A25).
     * Unset: the connection's plan decides (src/config/cycles.ts).
     */
    reconcile_children_every_days: z.number().int().min(0).optional(),
    /**
     * A tree read whole (projects and their tasks) re-reads every parent's child lists once in
     * this many days, a share of the parents each day, besides the parents whose record changed.
     * 0 reads every parent's child lists on every run. Unset: the connection's plan decides.
     */
    whole_read_every_days: z.number().int().min(0).optional(),
    /**
     * The request-saving readings of the API that svcsync checks against the long way
     * (docs/assumptions.md, "Shortcuts that check themselves"): `verify` (the default) takes the
     * shortcut, checks it on a new connection and on a sample, and drops it for an organization
     * where a check disagrees; `off` always reads the long way; `trust` never checks.
     */
    shortcuts: z
      .object({
        embedded_children: shortcutSetting,
        all_children_list: shortcutSetting,
        child_changes_touch_parent: shortcutSetting,
      })
      .strict()
      .default({ embedded_children: 'verify', all_children_list: 'verify', child_changes_touch_parent: 'verify' }),
    /** How the shortcuts are checked: how many uses a new connection checks, then what share, and at least how often. */
    shortcut_checks: z
      .object({
        new_connection: z.number().int().min(0).max(100).default(3),
        sample_percent: z.number().min(0).max(100).default(2),
        at_least_every_days: z.number().min(0).default(7),
      })
      .strict()
      .default({ new_connection: 3, sample_percent: 2, at_least_every_days: 7 }),
  })
  .strict();

/** The organization lease (docs/design.md, "One organization, one owner"). */
const leaseSchema = z
  .object({
    /**
     * How long a process that stopped answering (hung, paused, cut off) keeps its organizations:
     * the lock session's idle timeout on Postgres, the lease row's expiry on SQLite.
     */
    ttl_seconds: z.number().min(2).max(3600).default(30),
    /** How often a holder shows it is alive; well under ttl_seconds. */
    heartbeat_seconds: z.number().min(0.2).max(600).default(5),
  })
  .strict()
  .refine((l) => l.heartbeat_seconds * 3 <= l.ttl_seconds, {
    message: 'heartbeat_seconds must be at most a third of ttl_seconds, or a live holder could lose its lease',
    path: ['heartbeat_seconds'],
  });

/** A Postgres schema of svcsync's warehouse: lower case, so it needs no quoting in a search_path. */
const warehouseSchemaName = z
  .string()
  .regex(/^[a-z_][a-z0-9_]{0,49}$/, 'expected a Postgres schema name: lower-case letters, digits and "_", at most 50');

export const warehouseUrl = z
  .string()
  .regex(/^(sqlite:|postgres:\/\/|postgresql:\/\/)/, 'expected sqlite:PATH or postgres://USER@HOST:PORT/DB');

/**
 * Where the data goes: a URL alone (`warehouse: sqlite:./warehouse.db`), or the URL with the
 * settings for how svcsync meets the warehouse's faults (docs/warehouse.md, "When the warehouse fails").
 */
const warehouseSchema = z
  .union([
    warehouseUrl,
    z
      .object({
        url: warehouseUrl,
        /** How long a transient fault (a lost connection, a restart, another program's lock) is retried before the run fails. */
        retry_s: z.number().min(0).max(3600).default(60),
        /** SQLite: how long one statement waits for another program's write lock before svcsync's own retries. */
        busy_timeout_s: z.number().min(0).max(600).default(10),
        /** SQLite: PRAGMA statements run after svcsync's own when the file is opened (tuning, such as `mmap_size = 268435456`). */
        pragmas: z
          .array(z.string().regex(/^[a-z_]+\s*=\s*-?[A-Za-z0-9_]+$/, 'expected NAME = VALUE, e.g. "mmap_size = 268435456"'))
          .default([]),
        /**
         * Postgres: the schema svcsync's tables (and its own `_svcsync_` tables) live in, made when
         * missing; unset, the connection's current schema (the URL's search_path, else public).
         */
        schema: warehouseSchemaName.optional(),
        /**
         * Postgres: the schema of the `_live` and `report_` views, made when missing; unset, the
         * tables' schema. A BI tool shown only this schema shows only the views (docs/bi.md).
         */
        views_schema: warehouseSchemaName.optional(),
      })
      .strict()
      .superRefine((w, ctx) => {
        if (!w.url.startsWith('sqlite:')) return;
        for (const key of ['schema', 'views_schema'] as const) {
          if (w[key] !== undefined)
            ctx.addIssue({ code: 'custom', path: [key], message: 'applies to a Postgres warehouse only (SQLite has no schemas)' });
        }
      }),
  ])
  .transform((w) => (typeof w === 'string' ? { url: w, retry_s: 60, busy_timeout_s: 10, pragmas: [] } : w));

export const configSchema = z
  .object({
    warehouse: warehouseSchema.default({ url: 'sqlite:./warehouse.db', retry_s: 60, busy_timeout_s: 10, pragmas: [] }),
    log_level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    regions: z.partialRecord(z.enum(REGIONS), z.url()).optional(),
    sync: syncSchema.default(syncSchema.parse({})),
    connections: z.array(connectionSchema).min(1, 'expected at least one connection'),
    daemon: daemonSchema.default(daemonSchema.parse({})),
    worker: workerSchema.default(workerSchema.parse({})),
    leases: leaseSchema.default(leaseSchema.parse({})),
    /** Which streams keep every version svcsync sees (off by default); a connection's own `history` overrides it. */
    history: historySchema.default('off'),
  })
  .strict()
  .superRefine((cfg, ctx) => {
    const seen = new Set<string>();
    cfg.connections.forEach((c, i) => {
      if (seen.has(c.name)) {
        ctx.addIssue({
          code: 'custom',
          path: ['connections', i, 'name'],
          message: `"${c.name}" is used by another connection; names must be unique`,
        });
      }
      seen.add(c.name);
    });
  });

export type Config = z.infer<typeof configSchema>;
export type ConnectionConfig = Config['connections'][number];
export type SyncSettings = Config['sync'];
export type DaemonSettings = Config['daemon'];
export type WorkerSettings = Config['worker'];
export type ScheduleSettings = NonNullable<ConnectionConfig['schedules']>;

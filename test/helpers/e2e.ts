import { expect } from 'vitest';
import { CompiledQuery } from 'kysely';
import { parseConfig } from '../../src/config/load.js';
import type { RecordBudget } from '../../src/extractors/record-budget.js';
import type { StopRequest } from '../../src/extractors/stop.js';
import type { Config } from '../../src/config/schema.js';
import { CapturedLog, createLogger } from '../../src/core/logger.js';
import { SecretRegistry } from '../../src/core/secrets.js';
import { runSync, type SyncSummary } from '../../src/extractors/sync-run.js';
import type { SyncMode } from '../../src/extractors/stream-pass.js';
import { openWarehouse, type Warehouse } from '../../src/loaders/warehouse.js';
import type { Dialect } from '../../src/loaders/sql-dialect.js';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../sandbox/index.js';
import { renderSummary } from '../../src/cli/summary.js';
import { migratedWarehouse, type TestWarehouse } from './dialects.js';
import { ID_FIELDS, type Family } from './stream-ids.js';

export { ID_FIELDS, type Family };

export interface E2E {
  sandbox: Sandbox;
  warehouse: Warehouse;
  config: Config;
  log: CapturedLog;
  secrets: SecretRegistry;
  sync(
    mode?: SyncMode,
    extra?: {
      since?: string;
      streams?: string[];
      organization?: string;
      records?: RecordBudget;
      deep?: boolean;
      cycle?: boolean;
      /** Asked between pages and queued items: a reason stops the run (it throws RunStopped). */
      stop?: StopRequest;
    },
  ): Promise<SyncSummary>;
  /** Live (not deleted) ids of a stream's table for one organization. */
  liveIds(organizationId: string, family: Family, stream: string): Promise<string[]>;
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

export interface E2EOptions {
  /** The warehouse URL svcsync uses, from the test warehouse's own (a proxy in front of Postgres). */
  through?: (url: string) => string;
  /** The warehouse to sync into (one with schemas of its own, say); a fresh one by default. */
  target?: TestWarehouse;
}

export async function startE2E(
  dialect: Dialect,
  sandboxOptions: SandboxOptions = {},
  configExtra: Record<string, unknown> = {},
  options: E2EOptions = {},
): Promise<E2E> {
  const sandboxSettings: SandboxOptions = { seed: 7, scale: 12, organizations: 2, timeScale: 600, ...sandboxOptions };
  const sandbox = await startSandbox(sandboxSettings);
  // svcsync runs on the sandbox's clock, so its request timeout is in sandbox time too: give
  // it 30 real seconds, or a loaded machine turns slow answers into timeouts.
  const requestTimeout = Math.round(30_000 * (sandboxSettings.timeScale ?? 1));
  const tw: TestWarehouse = options.target ?? (await migratedWarehouse(dialect));
  const url = options.through ? options.through(tw.url) : tw.url;
  const warehouse = options.through ? await openWarehouse(url, { poolSize: 4 }) : await tw.open();
  const secrets = new SecretRegistry();
  const log = new CapturedLog();
  const logger = createLogger({ level: 'info', secrets, destination: log });
  const { connection: connectionExtra, sync: syncExtra } = configExtra as {
    connection?: Record<string, unknown>;
    sync?: Record<string, unknown>;
  };
  const config = parseConfig(
    {
      warehouse: url,
      sync: { lookback_seconds: 60, request_timeout_ms: requestTimeout, ...syncExtra },
      connections: [{ name: 'e2e', accounts_url: sandbox.url, ...sandbox.credentials, plan: 'free', ...connectionExtra }],
    },
    { env: {}, secrets },
  );
  const e2e: E2E = {
    sandbox,
    warehouse,
    config,
    log,
    secrets,
    sync: (mode = 'incremental', extra = {}) =>
      runSync({
        config,
        warehouse,
        clock: sandbox.clock,
        logger,
        secrets,
        signal: new AbortController().signal,
        command: mode,
        mode,
        since: extra.since,
        deep: extra.deep,
        wholeReadCycle: extra.cycle,
        streams: extra.streams,
        organization: extra.organization,
        records: extra.records,
        ...(extra.stop ? { stop: extra.stop } : {}),
      }),
    async liveIds(organizationId, family, stream) {
      const id = ID_FIELDS[family][stream]!;
      const p = warehouse.sql.param(1);
      const rows = await e2e.query<{ id: string }>(
        `SELECT "${id}" AS id FROM "${family}_${stream}" WHERE organization_id = ${p} AND _deleted_at IS NULL`,
        [organizationId],
      );
      return rows.map((r) => String(r.id)).sort();
    },
    async query<T>(text: string, params: unknown[] = []) {
      const result = await warehouse.db.executeQuery<T>(CompiledQuery.raw(text, params));
      return result.rows;
    },
    async close() {
      await warehouse.close();
      await tw.drop();
      await sandbox.stop();
    },
  };
  return e2e;
}

/** The truth's ids of a stream, as text exactly as the sandbox holds them. */
export function truthIds(sandbox: Sandbox, organizationId: string, family: Family, stream: string): string[] {
  const id = ID_FIELDS[family][stream]!;
  return sandbox
    .truth(organizationId, family, stream)
    .map((r) => String(r[id]))
    .sort();
}

/** An instant from the API's text, parsed here independently of svcsync's parser. */
export function instant(text: unknown): number {
  const s = String(text).replace(/([+-]\d\d)(\d\d)$/, '$1:$2');
  const ms = Date.parse(s);
  if (Number.isNaN(ms)) throw new Error(`not an instant: ${String(text)}`);
  return ms;
}

/** An instant stored in the warehouse (ISO text in SQLite, Date from Postgres). */
export function stored(value: unknown): number {
  return value instanceof Date ? value.getTime() : Date.parse(String(value));
}

/** Asserts a run's exit code, showing the run's summary (errors and hints) when it differs. */
export function expectExit(summary: SyncSummary, code: number): void {
  if (summary.exitCode !== code) {
    throw new Error(`expected exit ${code}, got ${summary.exitCode}:\n${renderSummary(summary)}`);
  }
}

/**
 * Every non-organization stream of every organization holds exactly the truth's live ids.
 * With ignoreDeletes (before a reconcile), rows of deleted records may still be live, but no
 * record of the truth may be missing.
 */
export async function expectEqualsTruth(e: E2E, opts: { ignoreDeletes?: boolean; families?: readonly Family[] } = {}): Promise<void> {
  for (const org of e.sandbox.organizations()) {
    for (const family of (opts.families ?? Object.keys(ID_FIELDS)) as Family[]) {
      for (const stream of Object.keys(ID_FIELDS[family])) {
        if (stream === 'organizations') continue;
        // Under the orgIdPerFamily variant a business has another organization id in each family.
        const orgId = org.ids[family];
        const expected = truthIds(e.sandbox, orgId, family, stream);
        const actual = await e.liveIds(orgId, family, stream);
        const label = `${family}.${stream} of ${orgId}`;
        if (opts.ignoreDeletes)
          expect(
            expected.filter((id) => !actual.includes(id)),
            `${label}: missing`,
          ).toEqual([]);
        else expect(actual, label).toEqual(expected);
      }
    }
  }
}

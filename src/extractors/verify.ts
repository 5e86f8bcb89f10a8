import pLimit from 'p-limit';
import type { RequestEvent, TokenCacheRegistry } from '../api/client.js';
import type { LimiterRegistry } from '../api/limiter.js';
import { BoundedApiClient, RequestBound, RequestBoundReached } from '../api/request-cap.js';
import type { Family } from '../catalog/families.js';
import { isOrganizationList, qualifiedName, type StreamSpec } from '../catalog/types.js';
import type { Config, ConnectionConfig } from '../config/schema.js';
import type { Clock } from '../core/clock.js';
import { ConfigError, ExitCode, SvcsyncError, describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { SecretRegistry } from '../core/secrets.js';
import type { Warehouse } from '../loaders/warehouse.js';
import { discoverOrganizations } from './discovery.js';
import { selectStreams } from './stream-selection.js';
import { clientFor, setUpRun, type RunSetup } from './run-setup.js';
import { runAll } from './settle.js';
import { endsTheRun, neverStop, type StopRequest } from './stop.js';
import { compareIds } from './verify-compare.js';
import { verifyChildren } from './verify-children.js';
import {
  EXAMPLE_IDS,
  kindOf,
  noteFailure,
  readListIds,
  recordResult,
  unverified,
  warehouseIds,
  type OrganizationBlock,
  type StreamVerification,
  type VerifyContext,
} from './verify-lists.js';

export type { VerifyStatus } from '../state/verify.js';
export { EXAMPLE_IDS, type StreamVerification, type VerifyContext } from './verify-lists.js';

export interface VerifyOptions {
  config: Config;
  warehouse: Warehouse;
  clock: Clock;
  logger: Logger;
  secrets: SecretRegistry;
  signal: AbortSignal;
  /** Asked before each list page; the lists already compared stay recorded. */
  stop?: StopRequest;
  connection?: string | undefined;
  organization?: string | undefined;
  /** `family.stream` or `stream` names; default: the connection's `streams`, else all. */
  streams?: readonly string[] | undefined;
  /** Stop before sending more than this many API requests in all (organization lists included). */
  maxRequests?: number | undefined;
  /** Also check child streams, by reading the child list of every parent (`--children`), or of `sample` parents. */
  children?: boolean | undefined;
  sample?: number | undefined;
  catalog?: readonly StreamSpec[];
  /** Test seams, as for runSync. */
  fetch?: typeof fetch;
  random?: () => number;
  limiters?: LimiterRegistry;
  tokens?: TokenCacheRegistry;
  onRequest?: (e: RequestEvent) => void;
}

export interface SkippedStream {
  stream: string;
  reason: string;
}

export interface VerifyConnectionFailure {
  connection: string;
  kind: SvcsyncError['kind'] | 'unexpected' | 'incomplete';
  error: string;
}

export interface VerifySummary {
  runId: string;
  startedAt: string;
  finishedAt: string;
  streams: StreamVerification[];
  /** Streams selected but not verifiable from a top-level list (read per parent record). */
  skipped: SkippedStream[];
  connectionFailures: VerifyConnectionFailure[];
  /** API requests sent in all (organization lists and list pages, retries included). */
  requests: number;
  maxRequests: number | null;
  exitCode: ExitCode;
}

/** A list read page by page needs nothing but the organization: no `{parent}` in its path. */
export function isTopLevelList(stream: StreamSpec): boolean {
  return !stream.parent && !stream.path.includes('{');
}

/**
 * Which streams of these families to verify, and which of the selected ones cannot be
 * verified from a list of their own (read per parent record). The selection is sync's
 * (`family.stream` or `stream`); a child stream named does not pull in its parent here.
 */
export function verifiableStreams(
  catalog: readonly StreamSpec[],
  families: readonly Family[],
  allow: readonly string[] | undefined,
): { top: StreamSpec[]; skipped: StreamSpec[] } {
  const { allowed } = selectStreams(catalog, families, allow);
  const selected = catalog.filter((s) => families.includes(s.family) && !isOrganizationList(s) && allowed(s));
  return { top: selected.filter(isTopLevelList), skipped: selected.filter((s) => !isTopLevelList(s)) };
}

async function verifyStream(
  ctx: VerifyContext,
  organizationId: string,
  stream: StreamSpec,
  block: OrganizationBlock,
): Promise<StreamVerification> {
  const name = qualifiedName(stream);
  const log = ctx.logger.child({ organization_id: organizationId, stream: name });
  const result = unverified(ctx.connection.name, organizationId, name);
  const stored = async (): Promise<void> => {
    result.warehouseCount = (await warehouseIds(ctx.warehouse, stream, organizationId)).length;
  };
  try {
    if (block.quota) {
      result.error = `not checked: the organization's daily quota is spent; it can continue at ${block.quota.resumeAt.toISOString()}`;
      await stored();
    } else if (block.denied.has(stream.family)) {
      result.status = 'failed';
      result.errorKind = 'authorization';
      result.error = `not checked: not authorized for the ${stream.family} family (see the family's first stream)`;
    } else {
      log.info('verifying: reading every page of the list');
      const ids = await readListIds(ctx, organizationId, stream, result);
      const comparison = compareIds(ids, await warehouseIds(ctx.warehouse, stream, organizationId));
      result.status = comparison.status;
      result.apiCount = comparison.apiCount;
      result.warehouseCount = comparison.warehouseCount;
      result.missingCount = comparison.missing.length;
      result.extraCount = comparison.extra.length;
      result.missing = comparison.missing.slice(0, EXAMPLE_IDS);
      result.extra = comparison.extra.slice(0, EXAMPLE_IDS);
      log.info(
        {
          status: comparison.status,
          api: comparison.apiCount,
          warehouse: comparison.warehouseCount,
          missing: result.missingCount,
          extra: result.extraCount,
        },
        'verified',
      );
    }
  } catch (error) {
    if (endsTheRun(error, ctx.signal)) throw error;
    noteFailure(result, error, block, stream.family, log);
    try {
      await stored();
    } catch {
      // The count is a courtesy; the error above is what the report says.
    }
  }
  result.requests = ctx.client.requestsTo(organizationId, stream.family, stream.path);
  result.verifiedAt = ctx.stamp.next();
  await recordResult(ctx, result);
  return result;
}

/** The exit code a failure of this kind gives when nothing else was checked; any other kind: unexpected. */
const EXIT_CODE_OF_KIND: Partial<Record<VerifyConnectionFailure['kind'], ExitCode>> = {
  authorization: ExitCode.authorization,
  config: ExitCode.config,
  quota: ExitCode.partial,
};

/**
 * The exit code of a verify run: 0 when every stream checked agrees; 4 when any differs or
 * is incomplete, or some failed while others were checked; when nothing could be checked,
 * the failure's own code as elsewhere (3 authorization, 2 configuration, 4 quota, else 1).
 */
export function verifyExitCode(
  streams: readonly Pick<StreamVerification, 'status' | 'errorKind'>[],
  failures: readonly Pick<VerifyConnectionFailure, 'kind'>[],
): ExitCode {
  const failedKinds = [
    ...streams.filter((s) => s.status === 'failed').map((s) => s.errorKind ?? 'unexpected'),
    ...failures.filter((f) => f.kind !== 'incomplete').map((f) => f.kind),
  ];
  const checked = streams.some((s) => s.status !== 'failed') || failures.some((f) => f.kind === 'incomplete');
  if (failedKinds.length > 0) {
    if (checked) return ExitCode.partial;
    const codes = new Set(failedKinds.map((k) => EXIT_CODE_OF_KIND[k] ?? ExitCode.unexpected));
    return codes.size === 1 ? [...codes][0]! : ExitCode.unexpected;
  }
  if (failures.length > 0 || streams.some((s) => s.status !== 'agree')) return ExitCode.partial;
  return ExitCode.ok;
}

/**
 * `svcsync verify`: for each selected top-level stream of each organization, reads every
 * page of the list (ids only; no sorting, no floor, no single-record or child reads) and
 * compares the ids with the warehouse's live rows. Writes no data rows and moves no cursor
 * or pass: its only writes are `_svcsync_verify` rows and, through the limiter, the daily
 * request count in `_svcsync_usage`.
 */
export async function runVerify(options: VerifyOptions): Promise<VerifySummary> {
  checkVerifyOptions(options);
  const setup = await setUpRun(options);
  const { stamp, limiters, connections } = setup;
  const startedAt = stamp.next();
  const bound = new RequestBound(options.maxRequests ?? null);
  const found: Found = { streams: [], skipped: new Map(), connectionFailures: [] };
  try {
    for (const connection of connections) {
      const ctx = verifyContext(setup, options, connection, bound);
      const organizations = await organizationsToVerify(ctx, options, connections.length, found.connectionFailures);
      if (organizations === null) continue;
      const limit = pLimit(options.config.sync.organization_concurrency);
      const allow = options.streams ?? connection.streams;
      await runAll(
        limit,
        [...organizations.entries()].map(([organizationId, families]) => async () => {
          found.streams.push(...(await verifyOrganization(ctx, organizationId, families, allow, options, found.skipped)));
        }),
      );
    }
  } finally {
    await limiters.flush();
  }
  return verifySummary(setup, startedAt, bound, found);
}

/** What a verify run found: each stream's verification, the streams it skipped, the connections that failed. */
interface Found {
  streams: StreamVerification[];
  skipped: Map<string, SkippedStream>;
  connectionFailures: VerifyConnectionFailure[];
}

function checkVerifyOptions(options: VerifyOptions): void {
  if (options.sample !== undefined && (!options.children || !Number.isInteger(options.sample) || options.sample < 1)) {
    throw new ConfigError(`--sample: "${options.sample}" needs --children and a positive whole number of parents`, [], {
      hint: 'For example --children --sample 20.',
    });
  }
  if (options.maxRequests !== undefined && (!Number.isInteger(options.maxRequests) || options.maxRequests < 1)) {
    throw new ConfigError(`--max-requests: "${options.maxRequests}" is not a positive whole number`, [], {
      hint: 'For example --max-requests 500.',
    });
  }
}

function verifyContext(setup: RunSetup, options: VerifyOptions, connection: ConnectionConfig, bound: RequestBound): VerifyContext {
  const client = clientFor(setup, options, connection, (o) => new BoundedApiClient(o, bound));
  return {
    config: options.config,
    connection,
    warehouse: options.warehouse,
    client,
    catalog: setup.catalog,
    logger: options.logger.child({ connection: connection.name, command: 'verify' }),
    clock: options.clock,
    stamp: setup.stamp,
    signal: options.signal,
    stop: options.stop ?? neverStop,
    runId: setup.runId,
  };
}

/**
 * The connection's organizations, the families it could not list noted as failures; null when
 * they could not be listed at all (noted too, or thrown when it is the only connection's configuration).
 */
async function organizationsToVerify(
  ctx: VerifyContext,
  options: VerifyOptions,
  connections: number,
  failures: VerifyConnectionFailure[],
): Promise<Map<string, Family[]> | null> {
  const connection = ctx.connection;
  try {
    // No record: verify writes no data rows.
    const discovery = await discoverOrganizations({ ...ctx, perPage: options.config.sync.per_page }, options.organization);
    for (const { family, error } of discovery.skipped) {
      failures.push({ connection: connection.name, kind: 'authorization', error: `${family} not checked: ${describeError(error)}` });
    }
    return discovery.organizations;
  } catch (error) {
    if (endsTheRun(error, options.signal)) throw error;
    if (error instanceof ConfigError && connections === 1) throw error;
    const incomplete = error instanceof RequestBoundReached;
    ctx.logger.error({ err: error }, `connection ${connection.name}: ${describeError(error)}`);
    failures.push({
      connection: connection.name,
      kind: incomplete ? 'incomplete' : kindOf(error),
      error: incomplete
        ? `organizations not listed: ${describeError(error)}; nothing of this connection was checked`
        : describeError(error),
    });
    return null;
  }
}

/** One organization's top-level lists, then (with --children) its child lists; the child streams not read are noted as skipped. */
async function verifyOrganization(
  ctx: VerifyContext,
  organizationId: string,
  families: Family[],
  allow: readonly string[] | undefined,
  options: VerifyOptions,
  skipped: Map<string, SkippedStream>,
): Promise<StreamVerification[]> {
  const { catalog } = ctx;
  const { top, skipped: perParent } = verifiableStreams(catalog, families, allow);
  const parentOf = (s: StreamSpec): StreamSpec | undefined =>
    catalog.find((p) => p.family === s.family && p.name === s.parent?.stream && isTopLevelList(p));
  const children = options.children ? perParent.filter((s) => parentOf(s) !== undefined) : [];
  for (const s of perParent) {
    const name = qualifiedName(s);
    if (!children.includes(s) && !skipped.has(name))
      skipped.set(name, {
        stream: name,
        reason: `read per ${s.parent?.stream ?? 'parent'} record (${s.path}); \`svcsync verify --children\` reads them`,
      });
  }
  const block: OrganizationBlock = { quota: null, denied: new Set() };
  // Two lists at a time per organization, as sync reads them; child lists after the top-level ones.
  const perOrg = pLimit(2);
  return runAll(perOrg, [
    ...top.map((stream) => () => verifyStream(ctx, organizationId, stream, block)),
    ...children.map((child) => () => verifyChildren(ctx, organizationId, child, parentOf(child)!, block, options.sample ?? null)),
  ]);
}

/** The run's summary: streams in the catalog's order within each connection and organization. */
function verifySummary(setup: RunSetup, startedAt: string, bound: RequestBound, found: Found): VerifySummary {
  const { streams, skipped, connectionFailures } = found;
  const order = new Map(setup.catalog.map((s, i) => [qualifiedName(s), i]));
  streams.sort(
    (a, b) =>
      a.connection.localeCompare(b.connection) ||
      a.organizationId.localeCompare(b.organizationId) ||
      (order.get(a.stream) ?? 0) - (order.get(b.stream) ?? 0),
  );
  return {
    runId: setup.runId,
    startedAt,
    finishedAt: setup.stamp.next(),
    streams,
    skipped: [...skipped.values()].sort((a, b) => (order.get(a.stream) ?? 0) - (order.get(b.stream) ?? 0)),
    connectionFailures,
    requests: bound.sent(),
    maxRequests: bound.max,
    exitCode: verifyExitCode(streams, connectionFailures),
  };
}

import type { BoundedApiClient } from '../api/request-cap.js';
import type { Family } from '../catalog/families.js';
import { qualifiedName, tableName, type StreamSpec } from '../catalog/types.js';
import type { Config, ConnectionConfig } from '../config/schema.js';
import type { Clock } from '../core/clock.js';
import { RequestBoundReached } from '../api/request-cap.js';
import { AuthorizationError, describeError, FatalError, QuotaExhaustedError, SvcsyncError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { Warehouse } from '../loaders/warehouse.js';
import { recordVerification, type VerifyStatus } from '../state/verify.js';
import { toId } from '../normalize/values.js';
import type { Stamp } from './context.js';
import { pages } from './pager.js';
import type { StopRequest } from './stop.js';

/**
 * What `svcsync verify` reads and compares, for top-level lists (verify.ts) and child lists
 * (verify-children.ts) alike: a list's ids, page by page, and the ids of the warehouse's live rows.
 */

/** Example ids kept per list (in the report and in `_svcsync_verify`). */
export const EXAMPLE_IDS = 10;

/** A bound on pages per list, so a server that always says has_more_page cannot loop forever. */
const MAX_PAGES = 100_000;

/** What verifying needs, passed explicitly (one per connection). */
export interface VerifyContext {
  config: Config;
  connection: ConnectionConfig;
  warehouse: Warehouse;
  client: BoundedApiClient;
  catalog: readonly StreamSpec[];
  logger: Logger;
  clock: Clock;
  stamp: Stamp;
  signal: AbortSignal;
  stop: StopRequest;
  runId: string;
}

/** Ids of the organization's live rows in the stream's table, as stored (text); of one parent's rows when `parent` is given. */
export async function warehouseIds(
  warehouse: Warehouse,
  stream: StreamSpec,
  organizationId: string,
  parent?: { column: string; id: string },
): Promise<string[]> {
  let query = warehouse.db
    .selectFrom(tableName(stream))
    .select(`${stream.primaryKey} as id`)
    .where('organization_id', '=', organizationId)
    .where('_deleted_at', 'is', null);
  if (parent) query = query.where(parent.column, '=', parent.id);
  const rows = await query.execute();
  return rows.map((r: { id: unknown }) => String(r.id));
}

/** A list record's id, converted exactly as the normalizer converts it (big numbers stay exact). */
function idOf(stream: StreamSpec, raw: Record<string, unknown>, request: string): string {
  const value = raw[stream.primaryKey];
  const id = value === undefined || value === null ? null : toId(value, { message: null });
  if (typeof id !== 'string' || id === '') {
    throw new FatalError(`${request}: a record has no "${stream.primaryKey}"`, {
      hint: `Every ${qualifiedName(stream)} record should carry its id; report this.`,
      request,
    });
  }
  return id;
}

/**
 * Every page of a list (no sort, no floor), ids only, added to `ids`; counts pages in
 * `progress`. `path` is the stream's, with a parent's id filled in for a child list. Writes nothing.
 */
export async function readListIds(
  ctx: VerifyContext,
  organizationId: string,
  stream: StreamSpec,
  progress: { pages: number },
  path: string = stream.path,
  ids: Set<string> = new Set<string>(),
): Promise<Set<string>> {
  for await (const page of pages({
    client: ctx.client,
    stream,
    organizationId,
    path,
    query: { ...(stream.query ?? {}) },
    perPage: ctx.config.sync.per_page,
    startPage: 1,
    signal: ctx.signal,
    stop: ctx.stop,
    maxPages: MAX_PAGES,
    // The next page only once this one is in: a page requested past the bound would be wasted.
    prefetch: false,
  })) {
    progress.pages++;
    const request = `GET ${stream.family}${path} page ${page.page}`;
    for (const raw of page.records) ids.add(idOf(stream, raw, request));
  }
  return ids;
}

export interface StreamVerification {
  connection: string;
  organizationId: string;
  /** `family.name` */
  stream: string;
  status: VerifyStatus;
  /** Distinct ids the API listed; null when the list was not read to its end. */
  apiCount: number | null;
  /** Live rows (`_deleted_at IS NULL`) of this organization in the stream's table. */
  warehouseCount: number | null;
  missingCount: number | null;
  extraCount: number | null;
  /** Up to EXAMPLE_IDS ids the API lists and the warehouse lacks. */
  missing: string[];
  /** Up to EXAMPLE_IDS ids of live rows the API no longer lists. */
  extra: string[];
  pages: number;
  /** Requests sent for this list (retries included). */
  requests: number;
  verifiedAt: string;
  error?: string;
  /** For a failed stream: the kind of error (authorization, fatal, ...). */
  errorKind?: SvcsyncError['kind'] | 'unexpected';
  /** A child stream checked for a sample of its parents (`verify --children --sample N`): how many. */
  sampledParents?: number;
}

/** A stream's verification before anything was read: incomplete until its list is read to the end. */
export function unverified(connection: string, organizationId: string, stream: string): StreamVerification {
  return {
    connection,
    organizationId,
    stream,
    status: 'incomplete',
    apiCount: null,
    warehouseCount: null,
    missingCount: null,
    extraCount: null,
    missing: [],
    extra: [],
    pages: 0,
    requests: 0,
    verifiedAt: '',
  };
}

/** What stops an organization's later lists: a spent daily quota, a family refused. */
export interface OrganizationBlock {
  /** Set once the organization's daily quota is spent: later streams are not tried. */
  quota: QuotaExhaustedError | null;
  denied: Set<Family>;
}

/** Keeps a list's result in `_svcsync_verify`. */
export async function recordResult(ctx: VerifyContext, result: StreamVerification): Promise<void> {
  const name = result.stream;
  const organizationId = result.organizationId;
  await recordVerification(ctx.warehouse.db, {
    run_id: ctx.runId,
    connection: result.connection,
    organization_id: organizationId,
    stream: name,
    verified_at: result.verifiedAt,
    status: result.status,
    api_count: result.apiCount,
    warehouse_count: result.warehouseCount,
    missing_count: result.missingCount,
    extra_count: result.extraCount,
    missing_examples: result.missingCount === null ? null : JSON.stringify(result.missing),
    extra_examples: result.extraCount === null ? null : JSON.stringify(result.extra),
    requests: result.requests,
    error: result.error ?? null,
  });
}

/**
 * How a list that could not be compared is reported: cut off by `--max-requests` or the daily
 * quota (incomplete, never agreeing), else failed with the error's kind; a refused family
 * stops the organization's other lists of that family, a spent quota all of them.
 */
export function noteFailure(result: StreamVerification, error: unknown, block: OrganizationBlock, family: Family, log: Logger): void {
  if (error instanceof RequestBoundReached) {
    result.status = 'incomplete';
    result.error =
      result.pages === 0 ? `not checked: ${error.message}` : `not checked to the end: ${error.message} after ${result.pages} page(s)`;
  } else if (error instanceof QuotaExhaustedError) {
    block.quota ??= error;
    result.status = 'incomplete';
    result.error = `not checked to the end: the organization's daily quota is spent; it can continue at ${error.resumeAt.toISOString()}`;
  } else {
    result.status = 'failed';
    result.error = describeError(error);
    result.errorKind = kindOf(error);
    if (error instanceof AuthorizationError) block.denied.add(family);
    log.error({ err: error }, `verify failed: ${describeError(error)}`);
  }
}

/** What failed: an svcsync error's kind, else 'unexpected'. */
export function kindOf(error: unknown): SvcsyncError['kind'] | 'unexpected' {
  return error instanceof SvcsyncError ? error.kind : 'unexpected';
}

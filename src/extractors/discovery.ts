import type { ApiClient } from '../api/client.js';
import type { Family } from '../catalog/families.js';
import { isOrganizationList, qualifiedName, type StreamSpec } from '../catalog/types.js';
import type { ConnectionConfig } from '../config/schema.js';
import { AuthorizationError, ConfigError, describeError, FatalError, type SvcsyncError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { TableWriter } from '../loaders/table-writer.js';
import type { Warehouse } from '../loaders/warehouse.js';
import { stateDb } from '../state/tables.js';
import { commitOrganizations } from '../state/unit-of-work.js';
import type { Stamp } from './context.js';
import { pages, type RawRecord } from './pager.js';
import { endsTheRun, raiseIfStopped, type StopRequest } from './stop.js';
import { normalizePage } from './page-records.js';
import { DriftTally, WarningTally } from './stream-tally.js';

/**
 * Discovery: which organizations a connection reaches, in which families. Each family's
 * organization list is walked like any list; a family the token has no scope to list is
 * skipped and reported; a family with no list at all is read for the others' organizations
 * (A13); an inactive organization is read only when named (A22). Sync records what it found;
 * verify and check only read.
 */

/** What discovery needs, and no more: verify and check use it without a sync's context. */
export interface DiscoveryContext {
  connection: ConnectionConfig;
  client: ApiClient;
  catalog: readonly StreamSpec[];
  logger: Logger;
  stamp: Stamp;
  runId: string;
  signal: AbortSignal;
  stop: StopRequest;
  perPage: number;
  /** Lists that refused `page`/`per_page` this run (A11). */
  pagingRefused?: Set<string> | undefined;
  /**
   * Where the organizations listed are written (`{family}_organizations`, `_svcsync_organizations`);
   * absent for verify and check, which write no data rows.
   */
  record?: { warehouse: Warehouse; writer: TableWriter } | undefined;
}

/** More organizations than any account holds, at 200 a page; a bound so a broken server cannot loop. */
const MAX_ORGANIZATION_PAGES = 1_000;

/**
 * Every record of a family's organization list, walked page by page like any other list:
 * spec 1 says lists may carry `page_context`, and an accounting firm's token reaches hundreds of
 * client organizations. One request read as the whole list kept the first page's organizations
 * only, with no warning, once a server paged it (at 200, or at a smaller default of its own).
 */
export async function listOrganizations(
  client: ApiClient,
  stream: StreamSpec,
  opts: {
    signal: AbortSignal;
    perPage: number;
    stop?: StopRequest | undefined;
    pagingRefused?: Set<string> | undefined;
    /** Where the paths of repaired text go (A38), numbered across pages as the records returned are. */
    repaired?: string[];
  },
): Promise<RawRecord[]> {
  const all: RawRecord[] = [];
  for await (const page of pages({
    client,
    stream,
    organizationId: undefined,
    path: stream.path,
    query: { ...(stream.query ?? {}) },
    perPage: opts.perPage,
    startPage: 1,
    signal: opts.signal,
    stop: opts.stop,
    maxPages: MAX_ORGANIZATION_PAGES,
    pagingRefused: opts.pagingRefused,
  })) {
    const offset = all.length;
    for (const path of page.repaired ?? [])
      opts.repaired?.push(path.replace(/^([^.[]*)\[(\d+)\]/, (_, key: string, i: string) => `${key}[${offset + Number(i)}]`));
    all.push(...page.records);
  }
  return all;
}

/** A family's organization list answered 404: the family has none (A13). */
export function hasNoOrganizationList(error: unknown): error is FatalError {
  return error instanceof FatalError && error.status === 404;
}

export interface ReuseInput {
  /** The organization records the families that do have a list listed, by id (an active one wins). */
  listed: ReadonlyMap<string, Record<string, unknown>>;
  /** The ids the connection (or `sync --org`) names; undefined: all. */
  wanted: readonly string[] | undefined;
}

/**
 * The ids a family without an organization list is read for:
 * - ids the connection names that no listing family listed: they can only be meant for the
 *   unlisted family (the businesses whose ids differ per family, A31), so only those;
 * - otherwise the named ids the other families listed, or every active one when the
 *   connection names none (an inactive organization is read only when named; A22).
 */
export function organizationsForUnlistedFamily(input: ReuseInput): string[] {
  const { listed, wanted } = input;
  const active = (id: string): boolean => listed.has(id) && listed.get(id)!['is_org_active'] !== false;
  if (wanted) {
    const onlyHere = wanted.filter((id) => !listed.has(id));
    if (onlyHere.length > 0) return onlyHere;
    return wanted.filter((id) => listed.has(id));
  }
  return [...listed.keys()].filter(active);
}

/**
 * A run for one organization that discovery has already recorded (the daemon's and workers' jobs,
 * `sync --org`) takes its families from `_svcsync_organizations` instead of listing every
 * organization of the connection again: with a thousand organizations that listing, and the
 * upsert of every one of them, was most of each job's cost. Discovery keeps the table current
 * on its own schedule. Null when the organization is not known (or not active) there.
 */
export async function knownOrganization(
  warehouse: Warehouse,
  connection: ConnectionConfig,
  organizationId: string,
): Promise<Map<string, Family[]> | null> {
  const rows = await stateDb(warehouse.db)
    .selectFrom('_svcsync_organizations')
    .select(['family', 'is_active'])
    .where('connection', '=', connection.name)
    .where('organization_id', '=', organizationId)
    .execute();
  if (rows.some((r) => Number(r.is_active ?? 1) === 0)) return null;
  const families = connection.families.filter((f) => rows.some((r) => r.family === f));
  return families.length > 0 ? new Map([[organizationId, families]]) : null;
}

/** Each organization's families, and the families the token has no scope to list. */
export interface Discovery {
  organizations: Map<string, Family[]>;
  skipped: Array<{ family: Family; error: SvcsyncError }>;
}

/**
 * A family whose organization list answered 404 is read for the organizations the other
 * families listed (or the ones the connection names; `organizationsForUnlistedFamily`), and
 * registered for them so the daemon's jobs and `sync --org` find it (A13). It gets no
 * `{family}_organizations` rows: there is no record of its own to hold.
 */
async function reuseForUnlistedFamilies(
  ctx: DiscoveryContext,
  input: {
    unlisted: ReadonlyArray<{ family: Family; error: SvcsyncError }>;
    listedRaw: ReadonlyMap<string, Record<string, unknown>>;
    found: Map<string, Family[]>;
    wanted: readonly string[] | undefined;
  },
): Promise<void> {
  const { unlisted, listedRaw, found, wanted } = input;
  const ids = organizationsForUnlistedFamily({ listed: listedRaw, wanted });
  for (const { family, error } of unlisted) {
    ctx.logger.warn(
      { family, organizations: ids, err: error },
      ids.length > 0
        ? `${family} has no organization list (${error.request ?? 'GET /organizations'} answered 404): ` +
            `reading ${family} for organization(s) ${ids.join(', ')}. ` +
            `If ${family} gives the business another organization id, name that id under the connection's organizations.`
        : `${family} has no organization list (${error.request ?? 'GET /organizations'} answered 404) and no other family ` +
            `listed an organization: name the organization ids under the connection's organizations.`,
    );
    if (ids.length === 0) continue;
    for (const id of ids) {
      const families = found.get(id) ?? [];
      if (!families.includes(family)) families.push(family);
      found.set(id, families);
    }
    if (!ctx.record) continue;
    const raw = ids.map((id) => {
      const seen = listedRaw.get(id);
      return { organization_id: id, name: seen?.['name'], time_zone: seen?.['time_zone'] };
    });
    await commitOrganizations(ctx.record, { connection: ctx.connection.name, family, syncedAt: ctx.stamp.next(), records: [], raw });
  }
}

/**
 * Lists each configured family's organizations, writes them to `{family}_organizations`
 * (unless `record` is false: `svcsync verify` writes no data rows), and returns which
 * families each organization is reachable in. A family the token has no scope for is
 * skipped with a warning; a family without an organization list (404) reuses the others'
 * ids with a warning; if no family answers, the connection fails.
 */
export async function discoverOrganizations(ctx: DiscoveryContext, only: string | undefined): Promise<Discovery> {
  const found = new Map<string, Family[]>();
  const errors: unknown[] = [];
  const skipped: Discovery['skipped'] = [];
  const wanted = only ? [only] : ctx.connection.organizations;
  // Families whose organization list answered 404 (A13), and what the other lists said of each id.
  const unlisted: Array<{ family: Family; error: SvcsyncError }> = [];
  const listedRaw = new Map<string, Record<string, unknown>>();
  const inactive = new Set<string>();
  for (const family of ctx.connection.families) {
    const stream = ctx.catalog.find((s) => s.family === family && isOrganizationList(s));
    if (!stream) continue;
    let records: Record<string, unknown>[];
    const repaired: string[] = [];
    raiseIfStopped(ctx);
    try {
      records = await listOrganizations(ctx.client, stream, {
        signal: ctx.signal,
        perPage: ctx.perPage,
        stop: ctx.stop,
        pagingRefused: ctx.pagingRefused,
        repaired,
      });
    } catch (error) {
      if (endsTheRun(error, ctx.signal)) throw error;
      if (error instanceof AuthorizationError && error.reach === 'family') {
        ctx.logger.warn({ family, err: error }, `cannot list ${family} organizations: ${describeError(error)}`);
        errors.push(error);
        skipped.push({ family, error });
        continue;
      }
      if (hasNoOrganizationList(error)) {
        errors.push(error);
        unlisted.push({ family, error });
        continue;
      }
      throw error;
    }
    const now = ctx.stamp.next();
    // Data-shape warnings of the list, one line per field and kind (the drift of organization lists is not kept).
    const tally = { warnings: new WarningTally(), drift: new DriftTally() };
    const normalized = normalizePage({ ...ctx, warehouse: ctx.record?.warehouse }, stream, '', records, now, undefined, tally, repaired);
    tally.warnings.log(ctx.logger, { stream: qualifiedName(stream) });
    if (ctx.record)
      await commitOrganizations(ctx.record, { connection: ctx.connection.name, family, syncedAt: now, records: normalized, raw: records });
    for (const raw of records) {
      const id = String(raw['organization_id']);
      if (!listedRaw.has(id) || raw['is_org_active'] !== false) listedRaw.set(id, raw);
      if (wanted && !wanted.includes(id)) continue;
      // Named in the configuration or with --org: the user wants it read, whatever the flag says (A22).
      if (raw['is_org_active'] === false && !wanted) {
        inactive.add(id);
        continue;
      }
      const families = found.get(id) ?? [];
      families.push(family);
      found.set(id, families);
    }
  }
  warnInactive(ctx, inactive, found);
  // Only beside a family whose list answered: when every list is a 404, the API's address is
  // more likely wrong than every family without a list, and the connection fails naming the request.
  if (unlisted.length > 0 && errors.length < ctx.connection.families.length) {
    await reuseForUnlistedFamilies(ctx, { unlisted, listedRaw, found, wanted });
  }
  if (found.size === 0 && errors.length > 0 && errors.length === ctx.connection.families.length) throw errors[0];
  if (wanted) checkWanted(ctx, wanted, found);
  return { organizations: found, skipped };
}

/** Organizations listed as inactive and not named: only their organization records are kept. */
function warnInactive(ctx: DiscoveryContext, inactive: ReadonlySet<string>, found: ReadonlyMap<string, Family[]>): void {
  const skippedInactive = [...inactive].filter((id) => !found.has(id));
  if (skippedInactive.length === 0) return;
  ctx.logger.warn(
    { organizations: skippedInactive },
    `organization(s) ${skippedInactive.join(', ')} listed as inactive (is_org_active: false): only their organization ` +
      "records are kept. To read one anyway, name it in this connection's organizations (docs/assumptions.md A22).",
  );
}

/** The organizations named (configured or --org) that no family listed: warned about, and an error when none was. */
function checkWanted(ctx: DiscoveryContext, wanted: readonly string[], found: ReadonlyMap<string, Family[]>): void {
  const missing = wanted.filter((id) => !found.has(id));
  if (missing.length === 0) return;
  ctx.logger.warn(
    { organizations: missing },
    `organization(s) ${missing.join(', ')} not listed by any configured family for this connection`,
  );
  if (found.size === 0) {
    throw new ConfigError(`Organization ${missing.join(', ')} is not reachable through connection ${ctx.connection.name}.`, [], {
      hint: "Check the organization id (svcsync check lists the reachable ones) and the connection's region.",
    });
  }
}

/** What a family skipped for want of a scope tells the user, in the summary and `_svcsync_runs`. */
export function familySkipMessage(family: Family, error: SvcsyncError): string {
  return (
    `${family} skipped, none of its streams read: ${describeError(error)}\n` +
    `  → \`svcsync auth scopes\` prints every scope svcsync needs; or leave ${family} out of this connection's families.`
  );
}

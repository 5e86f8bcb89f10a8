import type { StreamSpec } from '../catalog/types.js';
import { isOrganizationList, tableName } from '../catalog/types.js';
import { listIdentity, normalizeRecord, type ListIdentity, type NormalizedRecord } from '../normalize/normalize.js';
import type { recencyOf } from '../state/pending.js';
import type { SyncContext } from './context.js';
import type { RawRecord } from './pager.js';
import type { StreamTally } from './stream-tally.js';
import { listRepairs, repairMessage } from './text-repairs.js';

/** Whether a stream's single-record reads are enabled: its setting when the config sets it, else the catalog's default. */
export function detailIsEnabled(ctx: Pick<SyncContext, 'config'>, stream: StreamSpec): boolean {
  if (!stream.detail) return false;
  if (stream.detail.setting) {
    const v = (ctx.config.sync as Record<string, unknown>)[stream.detail.setting];
    if (typeof v === 'boolean') return v;
  }
  return stream.detail.defaultEnabled;
}

/** Organization lists are not organization-scoped: each record is its own organization. */
function organizationOf(stream: StreamSpec, raw: RawRecord, organizationId: string): string {
  if (!isOrganizationList(stream)) return organizationId;
  const listed = raw['organization_id'];
  return typeof listed === 'string' || typeof listed === 'number' ? String(listed) : organizationId;
}

/**
 * A list page's records as the comparison with stored rows needs them, and the text the client
 * repaired in them as warnings (of every record on the page, changed or not: the answer held it).
 */
export function identifyPage(
  ctx: Pick<SyncContext, 'logger'> & { warehouse?: Pick<SyncContext['warehouse'], 'dialect'> },
  stream: StreamSpec,
  organizationId: string,
  records: readonly RawRecord[],
  tally: Pick<StreamTally, 'warnings'>,
  repaired: readonly string[] = [],
): ListIdentity[] {
  const listed = records.map((raw) =>
    listIdentity(stream, raw, { organizationId: organizationOf(stream, raw, organizationId), source: 'list' }),
  );
  if (repaired.length) tally.warnings.addAll(listRepairs(tableName(stream), listed, repaired, repairMessage(ctx.warehouse?.dialect)));
  return listed;
}

/**
 * What `recencyOf` reads of every record on a page (its id, change time and `date` column): the
 * rows of those normalized, and for an unchanged record, which is not normalized, its identity
 * and the `date` field as listed.
 */
export function recencyRecords(listed: readonly ListIdentity[], changed: readonly NormalizedRecord[]): Parameters<typeof recencyOf>[1] {
  const rows = new Map(changed.map((n) => [n.id, n]));
  return listed.map((l) => {
    const n = rows.get(l.id);
    if (n) return n;
    const date = l.raw['date'];
    return { id: l.id, changedAt: l.changedAt, row: { date: typeof date === 'string' ? date : null } };
  });
}

/** The new and changed records of a page into rows, warnings and drift going to the tally as in `normalizePage`. */
export function normalizeListed(
  ctx: Pick<SyncContext, 'runId'>,
  stream: StreamSpec,
  listed: readonly ListIdentity[],
  syncedAt: string,
  tally: Pick<StreamTally, 'warnings' | 'drift'>,
): NormalizedRecord[] {
  return listed.map((l) => {
    const opts = { organizationId: l.organizationId, source: 'list' as const, syncedAt, runId: ctx.runId, identity: l };
    const n = normalizeRecord(stream, l.raw, opts);
    tally.warnings.addAll(n.warnings);
    tally.drift.addAll(n.unknown);
    return n;
  });
}

/**
 * A page's raw records into rows. Data-shape warnings go to the tally's `warnings`, counted per
 * field and kind for one line each at the stream's end; without a tally each is logged as it
 * comes. Fields the catalog does not know go to the tally's `drift` (without one, nowhere).
 */
export function normalizePage(
  ctx: Pick<SyncContext, 'runId' | 'logger'> & { warehouse?: Pick<SyncContext['warehouse'], 'dialect'> },
  stream: StreamSpec,
  organizationId: string,
  records: RawRecord[],
  syncedAt: string,
  parent?: { key: string; value: string },
  tally?: Pick<StreamTally, 'warnings' | 'drift'>,
  repaired: readonly string[] = [],
): NormalizedRecord[] {
  const out: NormalizedRecord[] = [];
  for (const raw of records) {
    const orgId = organizationOf(stream, raw, organizationId);
    const n = normalizeRecord(stream, raw, { organizationId: orgId, source: 'list', syncedAt, runId: ctx.runId });
    if (parent && (n.row[parent.key] === null || n.row[parent.key] === undefined) && n.columns.includes(parent.key)) {
      // Child lists do not always repeat their parent's id; the path says it.
      n.row[parent.key] = parent.value;
    }
    if (tally) {
      tally.warnings.addAll(n.warnings);
      tally.drift.addAll(n.unknown);
    } else {
      for (const w of n.warnings) ctx.logger.warn({ table: w.table, record: w.id, field: w.field, kind: w.kind }, w.message);
    }
    out.push(n);
  }
  if (repaired.length) {
    const warnings = listRepairs(tableName(stream), out, repaired, repairMessage(ctx.warehouse?.dialect));
    if (tally) tally.warnings.addAll(warnings);
    else for (const w of warnings) ctx.logger.warn({ table: w.table, record: w.id, field: w.field, kind: w.kind }, w.message);
  }
  return out;
}

import type { StreamSpec } from '../catalog/types.js';
import type { NormalizedRecord } from '../normalize/normalize.js';
import type { SyncContext } from './context.js';
import { fillPath, pages } from './pager.js';
import { isGone } from './queue-drain.js';
import type { Permit } from './record-budget.js';
import { normalizePage } from './page-records.js';
import type { StreamTally } from './stream-tally.js';

const MAX_CHILD_PAGES = 1_000;

/** One parent's child list as read from its own endpoint, page after page. */
export interface ChildList {
  records: NormalizedRecord[];
  /** The API says the parent no longer exists (`sync.gone_codes`). */
  gone: boolean;
  pages: number;
}

/**
 * Reads the whole child list of one parent (`GET …/{parent}/refunds`): every page, each record
 * normalized with the parent's id where the list leaves it out. The records are held together
 * until the caller commits them, so `permit` (the record budget's share) grows with them. The
 * requests count in `tally.meter`, the warnings and drift in the tally.
 */
export async function readChildList(
  ctx: SyncContext,
  child: StreamSpec,
  organizationId: string,
  parentId: string,
  tally: StreamTally,
  permit: Permit | null,
  syncedAt: string,
): Promise<ChildList> {
  const link = child.parent!;
  const out: ChildList = { records: [], gone: false, pages: 0 };
  try {
    for await (const page of pages({
      client: ctx.client,
      stream: child,
      organizationId,
      path: fillPath(child.path, { [link.key]: parentId }),
      query: { ...(child.query ?? {}) },
      perPage: ctx.config.sync.per_page,
      startPage: 1,
      signal: ctx.signal,
      stop: ctx.stop,
      maxPages: MAX_CHILD_PAGES,
      meter: tally.meter,
      pagingRefused: ctx.pagingRefused,
    })) {
      out.pages++;
      const parent = { key: link.key, value: parentId };
      out.records.push(...normalizePage(ctx, child, organizationId, page.records, syncedAt, parent, tally, page.repaired));
      permit?.resizeTo(out.records.length);
    }
  } catch (error) {
    if (!isGone(ctx, error)) throw error;
    out.gone = true;
  }
  return out;
}

/** The ids of a list's records, each once, sorted: what two readings of one list are compared by. */
export function idsOf(records: readonly Pick<NormalizedRecord, 'id'>[]): string[] {
  return [...new Set(records.map((r) => r.id))].sort();
}

/** `2 not in the record (12, 13)`: how two id lists differ, for a check's evidence. */
export function differenceOf(expected: readonly string[], found: readonly string[], where: string): string | null {
  const have = new Set(found);
  const want = new Set(expected);
  const missing = expected.filter((id) => !have.has(id));
  const extra = found.filter((id) => !want.has(id));
  if (missing.length === 0 && extra.length === 0) return null;
  const list = (ids: string[]): string => ids.slice(0, 3).join(', ') + (ids.length > 3 ? ', …' : '');
  const parts: string[] = [];
  if (missing.length) parts.push(`${missing.length} ${where} lacks (${list(missing)})`);
  if (extra.length) parts.push(`${extra.length} only ${where} has (${list(extra)})`);
  return parts.join(' and ');
}

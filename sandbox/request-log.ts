export interface RequestLog {
  total: number;
  /** `GET /inventory/v1/salesorders/{id}` → count; unmatched paths under `GET (unknown)`. */
  byEndpoint: Record<string, number>;
  byOrganization: Record<string, number>;
  byStatus: Record<string, number>;
  rateLimited: { '44': number; '45': number; '1070': number };
  /** Faults injected; `revoked` counts the access tokens revoked by revokeEverySeconds. */
  faults: { '5xx': number; '429': number; truncated: number; latency: number; revoked: number };
  token: { refresh: number; authorization_code: number; revoke: number; errors: number };
  /**
   * Variants at work: valid tokens refused (spurious401Rate), changes made mid-walk
   * (changeWhilePagingEvery), single records sent as an array of one (singleRecordArray), empty
   * list pages sent with a null key (nullEmptyLists).
   */
  variants: { spurious401: number; pagingMutations: number; singleArrays: number; nullLists: number; compressed: number };
  /**
   * Organization-scoped requests (those naming a known organization, whatever the answer) per
   * caller: the User-Agent header as sent, `unknown` when absent or empty.
   */
  byCaller: Record<string, number>;
  /** Token endpoint calls (`/oauth/v2/token`, `/oauth/v2/token/revoke`) per caller; not organization-scoped. */
  tokenByCaller: Record<string, number>;
  /**
   * Two different callers with requests in flight on one organization at the same moment
   * (received, response not yet finished). One entry per request that arrives while another
   * caller has one in flight there, per such caller: `callers` is [the caller already in flight,
   * the caller arriving]; `organizationId` is the books id (one per business, as the limits);
   * `at` is sandbox ms. The first OVERLAPS_KEPT only; `overlapCount` counts all.
   */
  overlaps: Overlap[];
  overlapCount: number;
}

export interface Overlap {
  organizationId: string;
  callers: [string, string];
  at: number;
}

export const OVERLAPS_KEPT = 100;

export function emptyLog(): RequestLog {
  return {
    total: 0,
    byEndpoint: {},
    byOrganization: {},
    byStatus: {},
    rateLimited: { '44': 0, '45': 0, '1070': 0 },
    faults: { '5xx': 0, '429': 0, truncated: 0, latency: 0, revoked: 0 },
    token: { refresh: 0, authorization_code: 0, revoke: 0, errors: 0 },
    variants: { spurious401: 0, pagingMutations: 0, singleArrays: 0, nullLists: 0, compressed: 0 },
    byCaller: {},
    tokenByCaller: {},
    overlaps: [],
    overlapCount: 0,
  };
}

export function bump(map: Record<string, number>, key: string): void {
  map[key] = (map[key] ?? 0) + 1;
}

/** The caller of a request: its User-Agent header as sent, `unknown` when absent or empty. */
export function callerOf(userAgent: string | undefined): string {
  return userAgent === undefined || userAgent === '' ? 'unknown' : userAgent;
}

/**
 * Requests in flight per organization and caller. Lives outside the log: a request in flight
 * when the log is reset is still in flight after, and an overlap with it is still recorded.
 */
export class InFlight {
  private readonly byOrg = new Map<string, Map<string, number>>();

  /**
   * A request of `caller` on `organizationId` is received: records an overlap in `log` with every
   * other caller in flight there. Returns the function that ends it (idempotent).
   */
  begin(log: RequestLog, organizationId: string, caller: string, now: number): () => void {
    let callers = this.byOrg.get(organizationId);
    if (!callers) {
      callers = new Map();
      this.byOrg.set(organizationId, callers);
    }
    for (const [other, n] of callers) {
      if (other === caller || n <= 0) continue;
      log.overlapCount++;
      if (log.overlaps.length < OVERLAPS_KEPT) log.overlaps.push({ organizationId, callers: [other, caller], at: now });
    }
    callers.set(caller, (callers.get(caller) ?? 0) + 1);
    const own = callers;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const n = (own.get(caller) ?? 1) - 1;
      if (n > 0) own.set(caller, n);
      else own.delete(caller);
      if (own.size === 0 && this.byOrg.get(organizationId) === own) this.byOrg.delete(organizationId);
    };
  }
}

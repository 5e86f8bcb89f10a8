export interface RequestLog {
  total: number;
  /** `GET /inventory/v1/salesorders/{id}` → count; unmatched paths under `GET (unknown)`. */
  byEndpoint: Record<string, number>;
  byOrganization: Record<string, number>;
  byStatus: Record<string, number>;
  rateLimited: { '44': number; '45': number; '1070': number };
  faults: { '5xx': number; '429': number; truncated: number; latency: number };
  token: { refresh: number; authorization_code: number; revoke: number; errors: number };
  /** Variants at work: valid tokens refused (spurious401Rate), changes made mid-walk (changeWhilePagingEvery). */
  variants: { spurious401: number; pagingMutations: number };
}

export function emptyLog(): RequestLog {
  return {
    total: 0,
    byEndpoint: {},
    byOrganization: {},
    byStatus: {},
    rateLimited: { '44': 0, '45': 0, '1070': 0 },
    faults: { '5xx': 0, '429': 0, truncated: 0, latency: 0 },
    token: { refresh: 0, authorization_code: 0, revoke: 0, errors: 0 },
    variants: { spurious401: 0, pagingMutations: 0 },
  };
}

export function bump(map: Record<string, number>, key: string): void {
  map[key] = (map[key] ?? 0) + 1;
}

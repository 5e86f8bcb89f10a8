import { ApiClient, type ApiClientOptions, type GetRequest } from './client.js';
import type { Family } from '../catalog/families.js';
import { buildFamilyRequest } from './families.js';

/**
 * A cap on the requests one run may send (`svcsync verify --max-requests`), across every
 * connection's client, and the client that keeps to it.
 */

/** Thrown instead of sending a request past `--max-requests`. */
export class RequestBoundReached extends Error {
  constructor(readonly max: number) {
    super(`--max-requests ${max} reached`);
    this.name = 'RequestBoundReached';
  }
}

/**
 * The run's bound on requests, shared by every connection's client. A call is let through
 * while the requests sent (retries included, as the clients count them) and the calls
 * started are both under the bound; so the bound is exact unless a call in flight retries.
 */
export class RequestBound {
  private started = 0;
  private readonly clients: ApiClient[] = [];
  constructor(readonly max: number | null) {}

  attach(client: ApiClient): void {
    this.clients.push(client);
  }

  sent(): number {
    return this.clients.reduce((a, c) => a + c.stats().requests, 0);
  }

  /** Reserves one call; false when the bound is reached. */
  take(): boolean {
    if (this.max !== null && Math.max(this.started, this.sent()) >= this.max) return false;
    this.started++;
    return true;
  }
}

/**
 * The normal ApiClient (token, limiter, daily budget, retries), refusing calls past the
 * run's request bound and counting the requests sent per organization and endpoint.
 */
export class BoundedApiClient extends ApiClient {
  private readonly sent: Map<string, number>;
  constructor(
    options: ApiClientOptions,
    readonly bound: RequestBound,
  ) {
    const counts = new Map<string, number>();
    const forward = options.onRequest;
    super({
      ...options,
      // One event per HTTP attempt sent (retries included; none for a call the limiter refused).
      onRequest: (e) => {
        const key = `${e.organizationId ?? ''}\u0000${e.endpoint}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
        forward?.(e);
      },
    });
    this.sent = counts;
    bound.attach(this);
  }

  override async get(req: GetRequest): Promise<Record<string, unknown>> {
    if (!this.bound.take()) throw new RequestBoundReached(this.bound.max ?? 0);
    return super.get(req);
  }

  /** Requests sent to one list of one organization, retries included. */
  requestsTo(organizationId: string, family: Family, path: string): number {
    return this.sent.get(`${organizationId}\u0000${buildFamilyRequest('', { family, path }).display}`) ?? 0;
  }
}

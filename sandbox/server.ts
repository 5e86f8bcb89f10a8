/**
 * The HTTP side: routing, authorization, organization identification, limits, faults and
 * the response envelope. Built on node:http directly; list pages are joined from cached
 * per-record JSON so a page costs string concatenation, not serialization.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { CONTROL_ROOT, type ControlAnswer } from './control.js';
import { OrgData, toJson } from './data-store.js';
import { OrgLimiter, type Limits, type Rejection } from './limits.js';
import { OAuthServer, hasScope } from './oauth.js';
import type { Family, OrgInfo } from './organizations.js';
import { Rng, hash4, hashText } from './random.js';
import { InFlight, bump, callerOf, emptyLog, type RequestLog } from './request-log.js';
import { ROOTS, matchRoute, type Route, type RouteMatch } from './routes.js';
import { findStream } from './stream-catalog.js';
import type { SandboxClock } from './sandbox-clock.js';
import type { StreamDef } from './stream-types.js';
import { DEFAULT_VISIBLE, changesWhilePaging, type Variants } from './variants.js';

export interface Faults {
  rate5xx?: number;
  rate429?: number;
  rateTruncated?: number;
  latencyMs?: number;
  /**
   * Sandbox seconds between revocations (0 or absent: none): the first API request with a
   * valid token after each interval finds its access token revoked.
   */
  revokeEverySeconds?: number;
}

const MAX_PER_PAGE = 200;

/**
 * Spec 1: invoice and billing name the organization in a header, books and inventory in the
 * organization_id query parameter. Written from the spec here, not imported from the client's
 * src/api/families.ts, so a wrong name there fails against this server instead of agreeing with it.
 */
const ORG_HEADER: Partial<Record<Family, string>> = {
  invoice: 'X-com-svc-invoice-organizationid',
  billing: 'X-com-svc-subscriptions-organizationid',
};

/** The organization id a request sends, and the header or parameter it belongs in (for messages). */
function organizationIdSent(
  family: Family,
  req: http.IncomingMessage,
  query: URLSearchParams,
  inQuery = false,
): { name: string; header: boolean; value: string | undefined } {
  const header = ORG_HEADER[family];
  if (!header || inQuery) return { name: 'organization_id', header: false, value: query.get('organization_id') ?? undefined };
  // Node lower-cases incoming header names.
  const raw = req.headers[header.toLowerCase()];
  return { name: header, header: true, value: Array.isArray(raw) ? raw[0] : raw };
}

interface Answer {
  status: number;
  body: string | Buffer;
  headers?: Record<string, string>;
}

/** Variant spurious401Rate: where a request stands in its refusals. */
interface SpuriousState {
  /** Arrivals with a valid token so far. */
  arrivals: number;
  /** Arrivals still to refuse in the current run (spurious401Run). */
  refusalsLeft: number;
  /** A run just ended: the next arrival is let through. */
  rest: boolean;
}

const err = (status: number, code: number, message: string, headers?: Record<string, string>): Answer => ({
  status,
  body: JSON.stringify({ code, message }),
  ...(headers ? { headers } : {}),
});

class BadRequest extends Error {}

export interface ServerDeps {
  clock: SandboxClock;
  timeScale: number;
  seed: number;
  orgs: OrgInfo[];
  data: Map<string, OrgData>;
  oauth: OAuthServer;
  limits: Limits;
  unlimited: boolean;
  faults: Faults;
  variants: Variants;
  /** Variant changeWhilePagingEvery: modify one record of the stream and create one, as mutate does. */
  changeWhilePaging(data: OrgData, def: StreamDef): void;
  /** A request under CONTROL_ROOT (control.ts). */
  control(method: string, path: string, query: URLSearchParams, body: string): ControlAnswer;
}

/** Control requests carry a few hundred bytes; anything near this is a mistake. */
const CONTROL_BODY_MAX = 1 << 20;

const DAY_MS = 86_400_000;
const FAMILY_LIST = Object.keys(ROOTS) as Family[];

export class SandboxServer {
  readonly server: http.Server;
  log: RequestLog = emptyLog();
  faults: Faults;
  private readonly limiters = new Map<string, OrgLimiter>();
  private readonly faultRng: Rng;
  /** Variant spurious401Rate: each request's (method, URL, organization header) arrivals with a valid token. */
  private readonly validArrivals = new Map<string, SpuriousState>();
  /** Fault revokeEverySeconds: when the next access token is revoked (sandbox ms); null while off. */
  private nextRevocation: number | null = null;
  /** Organization list pages by `family|page|per_page`. */
  private readonly orgListJson = new Map<string, Answer['body']>();
  /** `family|organization id` → the organization's data (ids may differ per family). */
  private readonly byFamilyId = new Map<string, OrgData>();
  /** Variant changeWhilePagingEvery: list pages served per organization. */
  private readonly pagesServed = new Map<string, number>();
  /** Organization-scoped requests in flight per organization and caller, for `log.overlaps`. */
  private readonly inFlight = new InFlight();
  private v: Variants;
  /** Variant concurrencyPerUser: admitted requests in flight, all organizations together (one user). */
  private userInFlight = 0;

  constructor(private readonly deps: ServerDeps) {
    this.faults = { ...deps.faults };
    this.v = deps.variants;
    this.faultRng = new Rng(hash4(deps.seed, 0xfa, 0x17, 0));
    for (const org of deps.orgs)
      this.limiters.set(org.organization_id, new OrgLimiter(deps.limits, this.v.localQuotaDay ? org.profile.offsetMinutes * 60_000 : 0));
    for (const data of deps.data.values()) for (const family of FAMILY_LIST) this.byFamilyId.set(`${family}|${data.org.ids[family]}`, data);
    this.server = http.createServer({ keepAlive: true, keepAliveTimeout: 30_000 }, (req, res) => this.onRequest(req, res));
  }

  /**
   * Switches the variants that act per request (not those applied when records are
   * generated): a test can stop changes while paging before the run whose result it compares.
   */
  setRequestVariants(v: Partial<Pick<Variants, 'changeWhilePagingEvery' | 'spurious401Rate'>>): void {
    this.v = { ...this.v, ...v };
  }

  listen(host: string, port: number): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => resolve(this.server.address() as AddressInfo));
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  /**
   * `api`: the answer is an API response (not the token endpoint's); `limiterKey` names the
   * organization whose quota the rate-limit headers of variant rateLimitHeaders report.
   */
  private send(
    res: http.ServerResponse,
    answer: Answer,
    endpoint: string,
    org: string | undefined,
    truncate = false,
    api?: { limiterKey: string | undefined },
  ): void {
    this.log.total++;
    bump(this.log.byEndpoint, endpoint);
    bump(this.log.byStatus, String(answer.status));
    if (org) bump(this.log.byOrganization, org);
    let body = typeof answer.body === 'string' ? Buffer.from(answer.body) : answer.body;
    if (truncate) body = body.subarray(0, Math.max(1, Math.floor(body.length / 2)));
    const headers: Record<string, string | number> = {
      'content-type': 'application/json;charset=UTF-8',
      'content-length': body.length,
      ...answer.headers,
    };
    if (api && (this.v.rateLimitHeaders || this.v.localQuotaDay)) Object.assign(headers, this.quotaHeaders(api.limiterKey));
    if (this.v.noRetryAfter) delete headers['retry-after'];
    if (api && this.v.compressAnswers && acceptsGzip(res.req.headers['accept-encoding'])) {
      body = gzipSync(body);
      headers['content-encoding'] = 'gzip';
      headers['content-length'] = body.length;
      this.log.variants.compressed++;
    }
    res.writeHead(answer.status, headers);
    res.end(body);
  }

  /**
   * Variant rateLimitHeaders: the daily quota of the organization (the whole quota when none is
   * known) and when it resets. Variant localQuotaDay: when the organization's day resets, on
   * its answers (an answer that names no organization has no day to tell).
   */
  private quotaHeaders(limiterKey: string | undefined): Record<string, string> {
    const now = this.deps.clock.now();
    const perDay = this.deps.limits.per_day;
    const limiter = limiterKey === undefined ? undefined : this.limiters.get(limiterKey);
    const used = limiter ? limiter.usage(now).day : 0;
    const resetsAt = limiter ? limiter.resetsAt(now) : (Math.floor(now / DAY_MS) + 1) * DAY_MS;
    const reset = { 'x-rate-limit-reset': String(Math.max(1, Math.ceil((resetsAt - now) / 1000))) };
    if (!this.v.rateLimitHeaders) return limiter ? reset : {};
    return {
      'x-rate-limit-limit': String(perDay),
      'x-rate-limit-remaining': String(Math.max(0, perDay - used)),
      ...(limiter || !this.v.localQuotaDay ? reset : {}),
    };
  }

  /**
   * Fault revokeEverySeconds: once the interval has passed, the token this request carries is
   * revoked just before it is checked, and with it every other request that carries it.
   * Spaced in time, not counted in requests, so one retried call meets at most one.
   */
  private revokeWhenDue(authorization: string | undefined, now: number): void {
    const everyMs = (this.faults.revokeEverySeconds ?? 0) * 1000;
    if (everyMs <= 0) {
      this.nextRevocation = null;
      return;
    }
    if (this.nextRevocation === null) this.nextRevocation = now + everyMs;
    if (now < this.nextRevocation || !this.deps.oauth.revokeAccessToken(authorization, now)) return;
    this.log.faults.revoked++;
    this.nextRevocation = now + everyMs;
  }

  /** The answer to a refused token (variant refusedTokenCode). */
  private refusedToken(): Answer {
    const code = this.v.refusedTokenCode;
    return err(401, code, code === 14 ? 'Invalid OAuth token' : 'invalid or expired OAuth token');
  }

  /**
   * Variant spurious401Rate: whether this arrival of a request with a valid token is refused.
   * Drawn from the request and how many times it came with a valid token before, not from
   * the arrival order: each request meets the same refusals whatever runs beside it, and a
   * refusal for an expired or revoked token does not move them. A refusal lasts
   * spurious401Run such arrivals of the request; the one after is let through.
   */
  private spuriouslyRefused(req: http.IncomingMessage, method: string, url: string): boolean {
    const orgHeaders = Object.values(ORG_HEADER).map((h) => req.headers[h.toLowerCase()] ?? '');
    const key = `${method} ${url} ${orgHeaders.join(' ')}`;
    let state = this.validArrivals.get(key);
    if (!state) this.validArrivals.set(key, (state = { arrivals: 0, refusalsLeft: 0, rest: false }));
    const n = state.arrivals++;
    if (state.refusalsLeft === 0 && state.rest) {
      state.rest = false;
      return false;
    }
    if (state.refusalsLeft === 0) {
      if (hash4(this.deps.seed, hashText(key), n, 0x401) / 4294967296 >= this.v.spurious401Rate) return false;
      state.refusalsLeft = this.v.spurious401Run;
    }
    state.refusalsLeft--;
    state.rest = state.refusalsLeft === 0;
    return true;
  }

  /** The organization a request names, if it names a known one, for the rate-limit headers of early answers. */
  private limiterKeyOf(path: string, route: Route | undefined, req: http.IncomingMessage, query: URLSearchParams): string | undefined {
    const family = FAMILY_LIST.find((f) => path.startsWith(ROOTS[f] + '/'));
    if (!family) return undefined;
    const { value } = organizationIdSent(family, req, query, this.orgInQuery(family, route));
    return value ? this.byFamilyId.get(`${family}|${value}`)?.org.organization_id : undefined;
  }

  private onRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const query = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
    const method = req.method ?? 'GET';
    if (path === CONTROL_ROOT || path.startsWith(CONTROL_ROOT + '/')) {
      this.onControl(req, res, path, method, query);
      return;
    }
    if (path === '/oauth/v2/token' || path === '/oauth/v2/token/revoke') {
      this.onToken(req, res, path, method, query);
      return;
    }
    let match: RouteMatch | undefined;
    try {
      match = matchRoute(path);
    } catch {
      match = undefined;
    }
    // Answers before the organization is identified: rate-limit headers (variant) of the organization named, if any.
    const early = this.v.rateLimitHeaders ? { limiterKey: this.limiterKeyOf(path, match?.route, req, query) } : { limiterKey: undefined };
    // Variant noOrganizationList: that family's organization list is an unknown path.
    if (!match || (match.route.kind === 'organizations' && this.v.noOrganizationList.includes(match.route.family))) {
      this.send(res, err(404, 5, 'Invalid URL Passed'), `${method} (unknown)`, undefined, false, early);
      return;
    }
    const { route } = match;
    const endpoint = `${method} ${route.template}`;
    // Organization-scoped: names a known organization (organization lists do not), whatever the answer.
    const scoped = route.kind === 'organizations' ? undefined : this.limiterKeyOf(path, route, req, query);
    if (scoped !== undefined) this.track(req, res, scoped);
    if (method !== 'GET') {
      this.send(
        res,
        err(405, 37, `The HTTP method ${method} is not allowed for the requested resource`, { allow: 'GET' }),
        endpoint,
        undefined,
        false,
        early,
      );
      return;
    }
    const now = this.deps.clock.now();
    this.revokeWhenDue(req.headers.authorization, now);
    const auth = this.deps.oauth.authenticate(req.headers.authorization, now);
    if (!auth.ok) {
      this.send(res, this.refusedToken(), endpoint, undefined, false, early);
      return;
    }
    if (this.v.spurious401Rate > 0 && this.spuriouslyRefused(req, method, url)) {
      // Variant spurious401Rate: a valid token refused anyway; counted toward no limit.
      this.log.variants.spurious401++;
      this.send(res, this.refusedToken(), endpoint, undefined, false, early);
      return;
    }
    if (!hasScope(auth.scopes, route.scope)) {
      this.send(res, err(401, 57, 'You are not authorized to perform this operation'), endpoint, undefined, false, early);
      return;
    }
    if (route.kind === 'organizations') {
      // Organization lists carry no organization and count toward no limit (assumption A14).
      let answer: Answer;
      try {
        answer = this.organizationsPage(route.family, query);
      } catch (e) {
        if (!(e instanceof BadRequest)) throw e;
        answer = err(400, 2, e.message);
      }
      this.send(res, answer, endpoint, undefined, false, early);
      return;
    }
    const orgId = this.organizationOf(route, req, query);
    if (orgId.error) {
      this.send(res, orgId.error, endpoint, undefined, false, early);
      return;
    }
    const data = orgId.data;
    const api = { limiterKey: data.org.organization_id };
    const limiter = this.limiters.get(data.org.organization_id) as OrgLimiter;
    const f = this.faults;
    if (f.rate429 && this.faultRng.next() < f.rate429) {
      this.log.faults['429']++;
      const code = this.faultRng.bool() ? 44 : 1070;
      this.log.rateLimited[code === 44 ? '44' : '1070']++;
      const rejection: Rejection = {
        code,
        message: code === 44 ? 'Access to the API is blocked for this organization.' : 'Too many requests in process.',
        retryAfterMs: 1000,
        limit: code === 44 ? this.deps.limits.per_minute : this.deps.limits.concurrency,
        remaining: 0,
      };
      this.send(res, this.tooMany(rejection), endpoint, orgId.id, false, api);
      return;
    }
    if (!this.deps.unlimited) {
      // Variant concurrencyPerUser: one user's requests in flight across all its organizations.
      const rejection = this.userBusy() ?? limiter.admit(now);
      if (!rejection && this.v.concurrencyPerUser) this.userInFlight++;
      if (rejection) {
        this.log.rateLimited[String(rejection.code) as '44' | '45' | '1070']++;
        this.send(res, this.tooMany(rejection), endpoint, orgId.id, false, api);
        return;
      }
    }
    const finish = (): void => {
      let answer: Answer;
      let truncate = false;
      let served: StreamDef | undefined;
      if (f.rate5xx && this.faultRng.next() < f.rate5xx) {
        this.log.faults['5xx']++;
        answer = this.faultRng.bool() ? err(500, 1000, 'Internal Error') : err(503, 1000, 'Service temporarily unavailable');
      } else {
        try {
          answer = this.answer(match, data, query);
          if (answer.status === 200 && route.kind === 'list') served = findStream(route.family, route.stream);
        } catch (e) {
          answer = e instanceof BadRequest ? err(400, 2, e.message) : err(500, 1000, 'Internal Error');
        }
        if (answer.status === 200 && f.rateTruncated && this.faultRng.next() < f.rateTruncated) {
          this.log.faults.truncated++;
          truncate = true;
        }
      }
      // Released before the response is written, so a client that waits for a full response
      // before its next request can never be refused for concurrency.
      if (!this.deps.unlimited) {
        limiter.release();
        if (this.v.concurrencyPerUser) this.userInFlight--;
      }
      this.send(res, answer, endpoint, orgId.id, truncate, api);
      if (served && this.v.changeWhilePagingEvery > 0 && changesWhilePaging(served)) this.pageServed(data, served);
    };
    if (f.latencyMs && f.latencyMs > 0) {
      this.log.faults.latency++;
      setTimeout(finish, f.latencyMs);
    } else finish();
  }

  /**
   * Counts the request under its caller and holds it in flight on its organization from now
   * until its response has finished (or its connection closed), recording overlaps with other callers.
   */
  private track(req: http.IncomingMessage, res: http.ServerResponse, organizationId: string): void {
    const caller = callerOf(req.headers['user-agent']);
    bump(this.log.byCaller, caller);
    const end = this.inFlight.begin(this.log, organizationId, caller, this.deps.clock.now());
    res.once('finish', end);
    res.once('close', end);
  }

  private tooMany(r: Rejection): Answer {
    // Retry-After is a wait, in real seconds; X-Rate-Limit-Reset counts to the refusing limit's
    // reset on the sandbox's clock, as the quota day does (docs/sandbox.md).
    const realS = Math.max(1, Math.ceil(r.retryAfterMs / this.deps.timeScale / 1000));
    return err(429, r.code, r.message, {
      'retry-after': String(realS),
      'x-rate-limit-limit': String(r.limit),
      'x-rate-limit-remaining': String(r.remaining),
      'x-rate-limit-reset': String(Math.max(1, Math.ceil(r.retryAfterMs / 1000))),
    });
  }

  /** Variant changeWhilePagingEvery: after every Nth list page of an organization, its stream changes. */
  private pageServed(data: OrgData, def: StreamDef): void {
    const key = data.org.organization_id;
    const n = (this.pagesServed.get(key) ?? 0) + 1;
    this.pagesServed.set(key, n);
    if (n % this.v.changeWhilePagingEvery !== 0) return;
    this.log.variants.pagingMutations++;
    this.deps.changeWhilePaging(data, def);
  }

  /**
   * Variant invoiceOrgInQuery (A41): the invoice family's endpoints other than the task ones
   * (whose header spec 4.1 states) take the organization_id query parameter, and only it.
   */
  private orgInQuery(family: Family, route: Route | undefined): boolean {
    return this.v.invoiceOrgInQuery && family === 'invoice' && route?.stream !== 'tasks';
  }

  private organizationOf(
    route: Route,
    req: http.IncomingMessage,
    query: URLSearchParams,
  ): { id: string; data: OrgData; error?: undefined } | { id?: undefined; error: Answer } {
    const family = route.family;
    const { name, header, value } = organizationIdSent(family, req, query, this.orgInQuery(family, route));
    if (value === undefined || value === '') {
      return { error: err(400, 2, `The ${header ? 'header' : 'parameter'} ${name} is required to identify the organization`) };
    }
    const data = this.byFamilyId.get(`${family}|${value}`);
    if (!data) {
      return { error: err(400, 6041, `Invalid value passed for ${name}: no organization ${value} is accessible with this token`) };
    }
    return { id: value, data };
  }

  /**
   * A page of the family's organization list, paged like every list (per_page, default 200);
   * variant organizationPageSize: this many a page whatever per_page asked.
   */
  private organizationsPage(family: Family, query: URLSearchParams): Answer {
    const { page, perPage } = paging(query, { perPageCap: 0, fixedPageSize: this.v.organizationPageSize });
    const key = `${family}|${page}|${perPage}`;
    const hit = this.orgListJson.get(key);
    if (hit) return { status: 200, body: hit };
    const all = [...this.deps.data.values()];
    const orgs = all.slice((page - 1) * perPage, page * perPage).map((d) => {
      const rec = d.g.organizationRecord(family);
      // Variant inactiveOrganizations: the last N listed inactive; their endpoints answer as usual.
      if (d.org.index >= all.length - this.v.inactiveOrganizations) rec['is_org_active'] = false;
      // Variant numericIds: the organization record's currency_id too; organization_id stays a string.
      return this.v.numericIds ? toJson(rec, 'number') : JSON.stringify(rec);
    });
    const answer = this.page('organizations', orgs, page, perPage, all.length, 'Organizations', '', 'A');
    this.orgListJson.set(key, answer.body);
    return answer;
  }

  private answer(match: RouteMatch, data: OrgData, query: URLSearchParams): Answer {
    const { route } = match;
    const def = findStream(route.family, route.stream) as StreamDef;
    switch (route.kind) {
      case 'list':
        return this.list(route, def, data, query);
      case 'detail': {
        const slot = data.slotOfId(def, match.id ?? '');
        if (slot === undefined) return this.missing(def);
        return this.single(route.key, data.detailJson(def, slot));
      }
      case 'children':
      case 'child': {
        const parentDef = data.parentDef(def);
        const parent = data.slotOfId(parentDef, match.id ?? '');
        if (parent === undefined) return this.missing(parentDef);
        if (route.kind === 'child') {
          const rec = data.findChild(def, parent, match.child ?? '');
          if (!rec) return this.missing(def);
          return this.single(route.key, toJson(rec, data.org.idStyle));
        }
        const all = data.children(def, parent);
        // The child lists whose paging the spec does not declare (A11): variants undeclaredPageSize, strictUndeclaredLists.
        const undeclared = UNDECLARED_PAGING.includes(`${route.family}.${route.stream}`);
        if (undeclared && this.v.strictUndeclaredLists) {
          const sent = ['page', 'per_page'].find((p) => query.has(p));
          if (sent !== undefined) return err(400, 2, `Invalid parameter ${sent}: this list takes no paging parameters`);
        }
        const { page, perPage: asked } = paging(query, this.v);
        const perPage = undeclared && this.v.undeclaredPageSize > 0 && !query.has('per_page') ? this.v.undeclaredPageSize : asked;
        const items = all.slice((page - 1) * perPage, page * perPage).map((c) => toJson(data.listShape(def, c), data.org.idStyle));
        // Variant otherListKeys: the books per-credit refunds, whose key spec 4.9 does not show.
        const key = this.v.otherListKeys && route.family === 'books' && route.key === 'vendor_credit_refunds' ? 'refunds' : route.key;
        return this.page(key, items, page, perPage, all.length, def.reportName, '', 'A');
      }
      case 'all-children': {
        const { parents, index } = data.allChildren(def);
        const { page, perPage } = paging(query, this.v);
        const items: string[] = [];
        const end = Math.min(parents.length, page * perPage);
        // Variant allRefundsOmitted: every n-th refund is left out of this list (its credit's own list has it).
        const omitEvery = this.v.allRefundsOmitted > 0 ? Math.max(1, Math.round(1 / this.v.allRefundsOmitted)) : 0;
        for (let i = (page - 1) * perPage; i < end; i++) {
          if (omitEvery > 0 && i % omitEvery === omitEvery - 1) continue;
          const c = data.children(def, parents[i] as number)[index[i] as number];
          // Variant allRefundsWithoutCredit: the entries do not say which credit they refund.
          const entry = c && this.v.allRefundsWithoutCredit ? omit(c, ['vendor_credit_id', 'vendor_credit_number']) : c;
          if (entry) items.push(toJson(data.listShape(def, entry), data.org.idStyle));
        }
        return this.page(route.key, items, page, perPage, parents.length, def.reportName, '', 'A');
      }
      default:
        return err(404, 5, 'Invalid URL Passed');
    }
  }

  /** Variant concurrencyPerUser: the user's limit reached across organizations. */
  private userBusy(): Rejection | undefined {
    const limit = this.deps.limits.concurrency;
    if (!this.v.concurrencyPerUser || this.userInFlight < limit) return undefined;
    return {
      code: 1070,
      message: `You have ${limit} API requests in process across your organizations. Wait for them to finish.`,
      retryAfterMs: 1000,
      limit,
      remaining: 0,
    };
  }

  /** One record under its key; variant singleRecordArray: as an array of one. */
  private single(key: string, json: string): Answer {
    if (!this.v.singleRecordArray) return { status: 200, body: `{"code":0,"message":"success","${key}":${json}}` };
    this.log.variants.singleArrays++;
    return { status: 200, body: `{"code":0,"message":"success","${key}":[${json}]}` };
  }

  private missing(def: StreamDef): Answer {
    // Variant missingRecordCode: the code is 1002 unless told otherwise.
    return err(404, this.v.missingRecordCode, `${def.reportName.replace(/s$/, '')} does not exist.`);
  }

  private list(route: Route, def: StreamDef, data: OrgData, query: URLSearchParams): Answer {
    const { page, perPage } = paging(query, this.v);
    let predicate: ((rec: Record<string, unknown>) => boolean) | undefined;
    let filterKey = '';
    if (def.filter) {
      const given = query.get('filter_by');
      const hide = given === null && this.v.defaultFiltersHide ? DEFAULT_VISIBLE[`${def.family}.${def.stream}`] : undefined;
      if (hide) {
        // Variant defaultFiltersHide: no filter_by, so only active/open records.
        predicate = hide;
        filterKey = '#default-visible';
      } else {
        const value = given ?? def.defaultFilter;
        const p = value === undefined ? undefined : def.filter(value);
        if (p === null) throw new BadRequest(`Invalid value passed for filter_by: ${value}`);
        predicate = p;
        filterKey = p && value ? value : '';
      }
    }
    const productId = def.stream === 'plans' ? query.get('product_id') : null;
    if (productId) {
      const inner = predicate;
      predicate = (rec) => rec['product_id'] === productId && (!inner || inner(rec));
      filterKey += `|product_id=${productId}`;
    }
    let column = def.defaultSort?.column;
    let order = def.defaultSort?.order ?? 'A';
    // Variant ignoreSort: the parameters are not even looked at; the default order answers.
    if (def.sortColumns && !this.v.ignoreSort.includes(`${def.family}.${def.stream}`)) {
      const requested = query.get('sort_column');
      if (requested !== null) {
        if (!def.sortColumns.includes(requested)) throw new BadRequest(`Invalid value passed for sort_column: ${requested}`);
        column = requested;
        order = 'A';
      }
      const o = query.get('sort_order');
      if (o !== null) {
        if (o !== 'A' && o !== 'D') throw new BadRequest(`Invalid value passed for sort_order: ${o}`);
        order = o;
      }
    }
    const pageKey = `${filterKey}|${column ?? ''}|${order}|${page}|${perPage}`;
    const hit = data.cachedPage(def, pageKey);
    if (hit) return { status: 200, body: hit };
    const view = data.view(def, { filterKey, predicate, column, order });
    const end = Math.min(view.length, page * perPage);
    const items: string[] = [];
    for (let i = (page - 1) * perPage; i < end; i++) items.push(data.listJson(def, view[i] as number));
    const answer = this.page(route.key, items, page, perPage, view.length, def.reportName, column ?? '', order);
    const body = Buffer.from(answer.body);
    data.cachePage(def, pageKey, body);
    return { status: 200, body };
  }

  private page(
    key: string,
    items: string[],
    page: number,
    perPage: number,
    total: number,
    report: string,
    sortColumn: string,
    order: string,
  ): Answer {
    // Variant nullEmptyLists: a page without records carries its key as null.
    const nullKey = items.length === 0 && this.v.nullEmptyLists;
    if (nullKey) this.log.variants.nullLists++;
    const list = nullKey ? 'null' : `[${items.join(',')}]`;
    if (this.v.omitPageContext) return { status: 200, body: `{"code":0,"message":"success","${key}":${list}}` };
    const context =
      `{"page":${page},"per_page":${perPage},"has_more_page":${page * perPage < total},` +
      `"report_name":${JSON.stringify(report)},"sort_column":${JSON.stringify(sortColumn)},"sort_order":"${order}"}`;
    return { status: 200, body: `{"code":0,"message":"success","${key}":${list},"page_context":${context}}` };
  }

  /** Control endpoints: not the API, so no token, no limits, no faults and nothing in the request log. */
  private onControl(req: http.IncomingMessage, res: http.ServerResponse, path: string, method: string, query: URLSearchParams): void {
    const chunks: Buffer[] = [];
    let size = 0;
    const reply = (answer: ControlAnswer): void => {
      const body = Buffer.from(answer.body);
      res.writeHead(answer.status, { 'content-type': 'application/json;charset=UTF-8', 'content-length': body.length, ...answer.headers });
      res.end(body);
    };
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= CONTROL_BODY_MAX) chunks.push(c);
    });
    req.on('end', () => {
      if (size > CONTROL_BODY_MAX) {
        reply({ status: 413, body: JSON.stringify({ code: 2, message: `The body is over ${CONTROL_BODY_MAX} bytes` }) });
        return;
      }
      let answer: ControlAnswer;
      try {
        answer = this.deps.control(method, path, query, Buffer.concat(chunks).toString('utf8'));
      } catch (e) {
        answer = { status: 500, body: JSON.stringify({ code: 1000, message: `Internal Error: ${(e as Error).message}` }) };
      }
      reply(answer);
    });
  }

  private onToken(req: http.IncomingMessage, res: http.ServerResponse, path: string, method: string, query: URLSearchParams): void {
    const endpoint = `${method} ${path}`;
    bump(this.log.tokenByCaller, callerOf(req.headers['user-agent']));
    if (method !== 'POST') {
      // Spec 5.2: a GET on the token URL yields a server error.
      this.send(res, err(500, 1000, 'Internal Error'), endpoint, undefined);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const params = new URLSearchParams(query);
      const type = String(req.headers['content-type'] ?? '');
      const text = Buffer.concat(chunks).toString('utf8');
      if (text && !type.includes('json')) for (const [k, v] of new URLSearchParams(text)) params.set(k, v);
      const now = this.deps.clock.now();
      const answer = path.endsWith('/revoke') ? this.deps.oauth.revoke(params) : this.deps.oauth.token(params, now);
      if (answer.grant) this.log.token[answer.grant]++;
      else this.log.token.errors++;
      this.send(res, { status: answer.status, body: JSON.stringify(answer.body) }, endpoint, undefined);
    });
  }
}

/** The page asked for, and its size: per_page as asked, or as variants fixedPageSize / perPageCap make it. */
/** The per-parent lists whose paging the spec does not declare (4.8–4.10; A11). */
const UNDECLARED_PAGING: readonly string[] = [
  'books.vendor_credit_refunds',
  'books.vendor_credit_bills',
  'inventory.vendor_credit_refunds',
  'inventory.contact_comments',
];

function paging(query: URLSearchParams, v: Pick<Variants, 'perPageCap' | 'fixedPageSize'>): { page: number; perPage: number } {
  const asked = intParam(query, 'per_page', 200, MAX_PER_PAGE);
  let perPage = asked;
  if (v.fixedPageSize > 0) perPage = v.fixedPageSize;
  else if (v.perPageCap > 0) perPage = Math.min(asked, v.perPageCap);
  return { page: intParam(query, 'page', 1, Number.MAX_SAFE_INTEGER), perPage };
}

function intParam(query: URLSearchParams, name: string, fallback: number, max: number): number {
  const raw = query.get(name);
  if (raw === null) return fallback;
  if (!/^\d+$/.test(raw)) throw new BadRequest(`Invalid value passed for ${name}: must be an integer between 1 and ${max}`);
  const n = Number(raw);
  if (n < 1 || n > max) throw new BadRequest(`Invalid value passed for ${name}: must be an integer between 1 and ${max}`);
  return n;
}

/** A copy of a record without some fields. */
function omit(rec: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  const out = { ...rec };
  for (const f of fields) delete out[f];
  return out;
}

/** Whether an `Accept-Encoding` header takes gzip (named, or `*`, without `q=0`). */
function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  return header.split(',').some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    const refused = params.some((p) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(p));
    return (coding === 'gzip' || coding === '*') && !refused;
  });
}

import type { ApiClient, RequestMeter } from '../api/client.js';
import { parseAnswer } from '../api/json-bytes.js';
import type { MemoPage } from '../state/page-memo-store.js';
import type { StreamSpec } from '../catalog/types.js';
import { FatalError } from '../core/errors.js';
import { answerHash, type PageMemo } from './page-memo.js';
import type { Permit, RecordBudget } from './record-budget.js';
import { neverStop, raiseIfStopped, type StopRequest } from './stop.js';

export type RawRecord = Record<string, unknown>;

export interface Page {
  page: number;
  records: RawRecord[];
  hasMore: boolean;
  /** The order `page_context` says the page is in (`sort_column`, `sort_order`), when it says. */
  sortedBy?: SortEcho | undefined;
  /** Paths of the answer whose text was repaired (A38), such as `contacts[3].contact_name`. */
  repaired?: readonly string[];
  /** With a memo: the SHA-1 of the answer's bytes (src/extractors/page-memo.ts). */
  bodyHash?: string | undefined;
  /**
   * With a memo: the page answered the bytes it answered when last read and its rows are untouched
   * since. `records` is then empty; this holds the page's ids and newest change.
   */
  unchanged?: MemoPage | undefined;
}

/** What a page's `page_context` reports of its order; a key the server left out or empty is absent. */
export interface SortEcho {
  sort_column?: string;
  sort_order?: string;
}

/** The order a response's `page_context` reports, or undefined when it reports none. */
export function sortEcho(body: Record<string, unknown>): SortEcho | undefined {
  const ctx = body['page_context'];
  if (!ctx || typeof ctx !== 'object' || Array.isArray(ctx)) return undefined;
  const echo: SortEcho = {};
  for (const key of ['sort_column', 'sort_order'] as const) {
    const v = (ctx as Record<string, unknown>)[key];
    if (typeof v === 'string' && v !== '') echo[key] = v;
  }
  return echo.sort_column === undefined && echo.sort_order === undefined ? undefined : echo;
}

export interface PagerRequest {
  client: ApiClient;
  stream: StreamSpec;
  /** Undefined for the organization lists, which name no organization. */
  organizationId: string | undefined;
  /** The list path with parent placeholders already filled in. */
  path: string;
  query: Record<string, string>;
  perPage: number;
  startPage: number;
  signal: AbortSignal;
  /** Asked before each request is sent; a page already asked for is still yielded. */
  stop?: StopRequest | undefined;
  /** A bound on pages, so a server that always says has_more_page cannot loop forever. */
  maxPages: number;
  /** Counts every request sent for this walk, retries included, for the stream's report. */
  meter?: RequestMeter | undefined;
  /**
   * The process's cap on records in flight (src/extractors/record-budget.ts): each page takes
   * `perPage` of it before it is requested and gives it back when the caller asks for the next
   * page (it has committed this one). Absent: no cap (verify, tests).
   */
  budget?: RecordBudget | undefined;
  /**
   * Lists (`family.name`) that refused `page`/`per_page` on a first request this run (A11):
   * asked without them on page 1 from then on. Shared by a run's walks; absent: not remembered.
   */
  pagingRefused?: Set<string> | undefined;
  /** What each page answered when last read (src/extractors/page-memo.ts); absent: every page is parsed. */
  memo?: PageMemo | undefined;
  /**
   * Page N+1 is requested while the caller writes page N. Only for walks that read to the end:
   * one that may stop early would spend a request on a page it never uses.
   */
  prefetch?: boolean | undefined;
}

/** What the client returns for an answer that hashed as its page's recalled one, instead of parsing it. */
const STAND_IN: Readonly<Record<string, unknown>> = Object.freeze({ code: 0 });

/** One answer as requested: its body, the text repaired in it, and with a memo its hash. */
interface Answer {
  body: Record<string, unknown>;
  repaired: string[];
  hash?: string | undefined;
  /** The answer hashed as its page's recalled one: its bytes, decoded and parsed only if its rows were touched since. */
  same?: { recalled: MemoPage; bytes: Uint8Array } | undefined;
}

/** The stream's records in a response, under whichever spelling of the key it uses. */
export function recordsOf(stream: StreamSpec, body: Record<string, unknown>, request: string): RawRecord[] {
  for (const key of stream.recordsKey) {
    const value = body[key];
    if (Array.isArray(value)) return value as RawRecord[];
  }
  // The key sent with null on a successful answer is an empty list, as some of this API's
  // answers write one (spec 4.9: "response `bills` is null").
  if (stream.recordsKey.some((key) => key in body && body[key] === null)) return [];
  // An absent list read as "no records" would make a full refresh mark everything deleted;
  // a response without the expected key is a change in the API, so stop and say so.
  const present = Object.keys(body).filter((k) => k !== 'code' && k !== 'message');
  const quoted = (keys: readonly string[]): string => keys.map((k) => `"${k}"`).join(', ');
  throw new FatalError(
    `${request}: the response has none of the keys ${quoted(stream.recordsKey)} (it has ${quoted(present) || 'no data keys'}).`,
    {
      hint:
        `The API's answer for ${stream.family}.${stream.name} changed shape; ` +
        "add the new key to the stream's recordsKey in src/catalog and report it.",
      request,
    },
  );
}

/** The page size a server uses when none is asked for (spec 1 and 8: default 200). */
export const DEFAULT_PER_PAGE = 200;

/** What a response says about the pages after it. */
export type PageSignal =
  /** `page_context.has_more_page` was sent: authoritative. */
  | { kind: 'declared'; hasMore: boolean }
  /** No `page_context` (lists *may* carry one, spec 1): a full page may have a successor. */
  | { kind: 'inferred'; hasMore: boolean };

/**
 * Reads `page_context` when the server sends it; without it, a page holding as many records
 * as were asked for (or the default page size when none was asked for) may have a successor,
 * so the next page is asked for and a short or empty one ends the walk. That costs at most
 * one request per list, only when its count is an exact multiple of the page size.
 */
export function pageSignal(body: Record<string, unknown>, recordCount: number, pageSize: number): PageSignal {
  const ctx = body['page_context'];
  if (ctx && typeof ctx === 'object' && !Array.isArray(ctx)) {
    const v = (ctx as Record<string, unknown>)['has_more_page'];
    if (typeof v === 'boolean') return { kind: 'declared', hasMore: v };
    if (v === 'true' || v === 'false') return { kind: 'declared', hasMore: v === 'true' };
  }
  return { kind: 'inferred', hasMore: recordCount > 0 && recordCount >= pageSize };
}

/** What the walk does after a page: the pure part of the pager, table-tested. */
export type PageStep =
  | { action: 'yield-and-continue' }
  | { action: 'yield-and-stop' }
  /** The page repeats the one before; yield nothing more. */
  | { action: 'stop-repeated' }
  | { action: 'fail-repeated' }
  | { action: 'fail-max-pages' };

export function advance(input: {
  signal: PageSignal;
  fingerprint: string | null;
  previousFingerprint: string | null;
  walked: number;
  maxPages: number;
}): PageStep {
  const repeated = input.fingerprint !== null && input.fingerprint === input.previousFingerprint;
  if (repeated) {
    // A server that declares paging and repeats a page is broken: say so. One that does not
    // declare it and repeats page 1 ignores the page parameter: page 1 was all there is.
    return input.signal.kind === 'declared' ? { action: 'fail-repeated' } : { action: 'stop-repeated' };
  }
  if (!input.signal.hasMore) return { action: 'yield-and-stop' };
  if (input.walked >= input.maxPages) return { action: 'fail-max-pages' };
  return { action: 'yield-and-continue' };
}

/**
 * A 400 whose message names the paging parameters: the list does not take them (A11).
 * Only the server's own message is read; the request line always carries `page=`.
 */
export function refusesPaging(error: unknown): boolean {
  return error instanceof FatalError && error.status === 400 && /\bpage\b|per_page/i.test(error.serverMessage ?? '');
}

/**
 * Walks a list endpoint page by page, sending `page` and `per_page` from the first request,
 * also to the lists that do not declare them (A11): a server that pages them at a default of
 * its own, without `page_context`, then pages them at `per_page`, and a short page really is
 * the last. A list that refuses the parameters (400 naming them) is asked again without them,
 * and is asked so for the rest of the run (`pagingRefused`); it is then asked for page N only
 * when the previous answer said, or a full page suggested, there is more. A page identical to
 * the one before it, or more pages than maxPages, stops the walk instead of looping.
 */
export async function* pages(req: PagerRequest): AsyncGenerator<Page> {
  const requests = new PageRequests(req);
  let page = req.startPage;
  let previousFingerprint: string | null = null;
  let walked = 0;
  const run = { stop: req.stop ?? neverStop, signal: req.signal };
  raiseIfStopped(run);
  const budget = req.budget;
  // `held` covers the page being read and written; `ahead` the prefetched one.
  let held: Permit | null = null;
  let ahead: Permit | null = null;
  try {
    if (budget) {
      held = await budget.acquire(requests.fullPage(page), req.signal);
      // A stop asked for while waiting for room: no request is sent.
      raiseIfStopped(run);
    }
    let current = requests.first(page);
    for (;;) {
      const request = `GET ${req.stream.family}${req.path} page ${page}`;
      const { body, unchanged, repaired, hash } = await requests.read(await current);
      const records = unchanged ? [] : recordsOf(req.stream, body, request);
      held?.resizeTo(records.length);
      // The same bytes say what they said when kept. Taken as declared, an unchanged page that
      // repeats the one before stops the walk with an error rather than ending a full read early.
      const signal: PageSignal = unchanged
        ? { kind: 'declared', hasMore: unchanged.hasMore }
        : pageSignal(body, records.length, requests.fullPage(page));
      const ids = unchanged ? unchanged.ids : records.map((r) => String(r[req.stream.primaryKey]));
      const fingerprint = ids.length ? ids.join('\u0000') : null;
      walked++;
      const step = advance({ signal, fingerprint, previousFingerprint, walked, maxPages: req.maxPages });
      previousFingerprint = fingerprint;
      if (step.action === 'fail-repeated') throw repeatedPage(request, page);
      if (step.action === 'stop-repeated') {
        // The records were taken with the page before; an empty last page lets the caller finish the pass.
        yield { page, records: [], hasMore: false };
        return;
      }
      const more = step.action !== 'yield-and-stop';
      // A prefetch only takes room that is free now: waiting for it while holding this page could
      // deadlock the cap; without room the next page is asked for after this one is committed.
      const prefetch = more && step.action === 'yield-and-continue' && req.prefetch && !req.signal.aborted && run.stop.reason() === null;
      if (prefetch && budget) ahead = budget.tryAcquire(requests.fullPage(page + 1));
      const next = prefetch && (!budget || ahead) ? requests.fetch(page + 1) : null;
      yield { page, records, hasMore: more, sortedBy: unchanged ? undefined : sortEcho(body), repaired, bodyHash: hash, unchanged };
      if (!more) return;
      if (step.action === 'fail-max-pages') throw tooManyPages(request, walked);
      page++;
      // The caller asked for the next page, so it has committed this one.
      held?.release();
      held = null;
      // A prefetched page was already asked for: it is read and committed before a stop is honoured.
      if (next) {
        req.signal.throwIfAborted();
        [held, ahead] = [ahead, null];
        current = next;
      } else {
        raiseIfStopped(run);
        if (budget) {
          held = await budget.acquire(requests.fullPage(page), req.signal);
          raiseIfStopped(run);
        }
        current = requests.fetch(page);
      }
    }
  } finally {
    held?.release();
    ahead?.release();
  }
}

function repeatedPage(request: string, page: number): FatalError {
  return new FatalError(
    `${request}: the server answered with the same records as page ${page - 1}; it seems to ignore the page parameter.`,
    {
      hint:
        'Nothing past the previous page was committed. ' +
        'Report this; set the stream `paginated` setting in the catalog if the endpoint does not page.',
      request,
    },
  );
}

function tooManyPages(request: string, walked: number): FatalError {
  return new FatalError(`${request}: still more pages after ${walked} pages; stopping so the run cannot loop forever.`, {
    hint: 'The pages read so far are committed and the next run resumes after them.',
    request,
  });
}

/**
 * The requests of one walk: what each page's request sends (with or without the paging
 * parameters), and its answer as the walk reads it (with a memo, a recalled page whose rows stand).
 */
class PageRequests {
  private readonly undeclared: boolean;
  private readonly listName: string;
  /** Page 1 is asked without `page`/`per_page`: the list refused them (A11). */
  private bareFirst: boolean;

  constructor(private readonly req: PagerRequest) {
    this.undeclared = !req.stream.paginated;
    this.listName = `${req.stream.family}.${req.stream.name}`;
    this.bareFirst = this.undeclared && (req.pagingRefused?.has(this.listName) ?? false);
  }

  /** A full page of request n: per_page when it is sent, the server's default page otherwise. */
  fullPage(n: number): number {
    return this.sendsPaging(n) ? this.req.perPage : DEFAULT_PER_PAGE;
  }

  /** The walk's first request: a list that does not declare paging and refuses the parameters is asked again without them. */
  first(page: number): Promise<Answer> {
    if (!(this.undeclared && page === 1 && !this.bareFirst)) return this.fetch(page);
    return this.fetch(page).catch((error: unknown) => {
      if (!refusesPaging(error)) throw error;
      this.bareFirst = true;
      this.req.pagingRefused?.add(this.listName);
      return this.fetch(page);
    });
  }

  fetch(n: number): Promise<Answer> {
    // Nothing to recall (no memo, or no rows yet): the request goes out at once.
    const recalling = this.req.memo?.recall(n) ?? null;
    const pending = recalling === null ? this.send(n, null) : recalling.then((recalled) => this.send(n, recalled));
    // A prefetch the caller never collects (it stopped on an error) must not be an unhandled rejection.
    pending.catch(() => undefined);
    return pending;
  }

  /** An answer as the walk reads it: a recalled page whose rows stand, or the parsed body. */
  async read(answer: Answer): Promise<Answer & { unchanged?: MemoPage }> {
    const same = answer.same;
    if (same === undefined) return answer;
    if (await this.req.memo!.untouched(same.recalled)) return { ...answer, unchanged: same.recalled };
    // The text is the one a success answered before, so it parses and holds no error.
    const repaired: string[] = [];
    return { body: parseAnswer(same.bytes, repaired) as Record<string, unknown>, repaired, hash: answer.hash };
  }

  private sendsPaging(n: number): boolean {
    return n > 1 || !this.bareFirst;
  }

  private send(n: number, recalled: MemoPage | null): Promise<Answer> {
    const { req } = this;
    const query: Record<string, string | number> = { ...req.query };
    if (this.sendsPaging(n)) {
      query['page'] = n;
      query['per_page'] = req.perPage;
    }
    const answer: Answer = { body: STAND_IN, repaired: [] };
    // The same answer as last time need not be parsed: whether its rows still stand is asked when its turn comes.
    const beforeParse = req.memo
      ? (bytes: Uint8Array): Record<string, unknown> | undefined => {
          answer.hash = answerHash(bytes);
          if (recalled === null || answer.hash !== recalled.bodyHash) return undefined;
          answer.same = { recalled, bytes };
          return STAND_IN;
        }
      : undefined;
    return req.client
      .get({
        family: req.stream.family,
        organizationId: req.organizationId,
        path: req.path,
        query,
        signal: req.signal,
        meter: req.meter,
        repaired: answer.repaired,
        beforeParse,
      })
      .then((body) => {
        answer.body = body;
        return answer;
      });
  }
}

/** Substitutes `{key}` placeholders of a path with the parent's values (URL-encoded). */
export function fillPath(path: string, values: Record<string, string>): string {
  return path.replace(/\{([A-Za-z0-9_]+)\}/g, (_m, name: string) => {
    const v = values[name];
    if (v === undefined) throw new FatalError(`Path ${path} needs {${name}} but no value was given.`);
    return encodeURIComponent(v);
  });
}

import type { ApiClient } from '../api/client.js';
import type { StreamSpec } from '../catalog/types.js';
import { FatalError } from '../core/errors.js';

export type RawRecord = Record<string, unknown>;

export interface Page {
  page: number;
  records: RawRecord[];
  hasMore: boolean;
}

export interface PagerRequest {
  client: ApiClient;
  stream: StreamSpec;
  organizationId: string;
  /** The list path with parent placeholders already filled in. */
  path: string;
  query: Record<string, string>;
  perPage: number;
  startPage: number;
  signal: AbortSignal;
  /** A bound on pages, so a server that always says has_more_page cannot loop forever. */
  maxPages: number;
}

/** The stream's records in a response, under whichever spelling of the key it uses. */
export function recordsOf(stream: StreamSpec, body: Record<string, unknown>, request: string): RawRecord[] {
  for (const key of stream.recordsKey) {
    const value = body[key];
    if (Array.isArray(value)) return value as RawRecord[];
  }
  // An empty list read as "no records" would make a full refresh mark everything deleted;
  // a response without the expected key is a change in the API, so stop and say so.
  const present = Object.keys(body).filter((k) => k !== 'code' && k !== 'message');
  throw new FatalError(`${request}: the response has none of the keys ${stream.recordsKey.map((k) => `"${k}"`).join(', ')} (it has ${present.map((k) => `"${k}"`).join(', ') || 'no data keys'}).`, {
    hint: `The API's answer for ${stream.family}.${stream.name} changed shape; add the new key to the stream's recordsKey in src/catalog and report it.`,
    request,
  });
}

function hasMorePages(body: Record<string, unknown>): boolean {
  const ctx = body['page_context'];
  if (!ctx || typeof ctx !== 'object') return false;
  const v = (ctx as Record<string, unknown>)['has_more_page'];
  return v === true || v === 'true';
}

/**
 * Walks a list endpoint page by page. Lists that declare paging get `page` and `per_page`
 * from the start; the others (A11) are asked for page N only when the previous answer said
 * there is more. A page identical to the one before it, or more pages than maxPages, stops
 * the walk with an error instead of looping.
 *
 * With `prefetch`, page N+1 is requested while the caller writes page N. Only for walks that
 * read to the end: one that may stop early would spend a request on a page it never uses.
 */
export async function* pages(req: PagerRequest & { prefetch?: boolean }): AsyncGenerator<Page> {
  let page = req.startPage;
  let previousFingerprint: string | null = null;
  let walked = 0;
  const fetchPage = (n: number): Promise<Record<string, unknown>> => {
    const query: Record<string, string | number> = { ...req.query };
    if (req.stream.paginated || n > 1) {
      query['page'] = n;
      query['per_page'] = req.perPage;
    }
    const pending = req.client.get({ family: req.stream.family, organizationId: req.organizationId, path: req.path, query, signal: req.signal });
    // A prefetch the caller never collects (it stopped on an error) must not be an unhandled rejection.
    pending.catch(() => undefined);
    return pending;
  };
  req.signal.throwIfAborted();
  let current = fetchPage(page);
  for (;;) {
    const request = `GET ${req.stream.family}${req.path} page ${page}`;
    const body = await current;
    const records = recordsOf(req.stream, body, request);
    const hasMore = hasMorePages(body);
    const fingerprint = records.length ? records.map((r) => String(r[req.stream.primaryKey])).join('\u0000') : null;
    if (fingerprint !== null && fingerprint === previousFingerprint) {
      throw new FatalError(`${request}: the server answered with the same records as page ${page - 1}; it seems to ignore the page parameter.`, {
        hint: 'Nothing past the previous page was committed. Report this; set the stream `paginated` setting in the catalog if the endpoint does not page.',
        request,
      });
    }
    previousFingerprint = fingerprint;
    walked++;
    const more = hasMore && walked < req.maxPages;
    const next = more && req.prefetch && !req.signal.aborted ? fetchPage(page + 1) : null;
    yield { page, records, hasMore };
    if (!hasMore) return;
    if (walked >= req.maxPages) {
      throw new FatalError(`${request}: still "has_more_page" after ${walked} pages; stopping so the run cannot loop forever.`, {
        hint: 'The pages read so far are committed and the next run resumes after them.',
        request,
      });
    }
    page++;
    req.signal.throwIfAborted();
    current = next ?? fetchPage(page);
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

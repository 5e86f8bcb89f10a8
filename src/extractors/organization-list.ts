import type { ApiClient } from '../api/client.js';
import type { StreamSpec } from '../catalog/types.js';
import { pages, type RawRecord } from './pager.js';
import type { StopRequest } from './stop.js';

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
  opts: { signal: AbortSignal; perPage: number; stop?: StopRequest | undefined; pagingRefused?: Set<string> | undefined },
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
    all.push(...page.records);
  }
  return all;
}

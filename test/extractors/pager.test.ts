import { describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/client.js';
import { findStream } from '../../src/catalog/index.js';
import type { StreamSpec } from '../../src/catalog/types.js';
import { FatalError } from '../../src/core/errors.js';
import { fillPath, pages, type Page } from '../../src/extractors/pager.js';

const stream = findStream('billing.plans') as StreamSpec;
const unpaged = findStream('books.vendor_credit_refunds') as StreamSpec;

/** A client whose answers are scripted per page; it records each request's query. */
function scripted(answer: (page: number) => Record<string, unknown>): { client: ApiClient; calls: Array<Record<string, unknown>> } {
  const calls: Array<Record<string, unknown>> = [];
  const client = {
    get: async (req: { query?: Record<string, unknown> }) => {
      calls.push({ ...(req.query ?? {}) });
      return answer(Number(req.query?.['page'] ?? 1));
    },
  } as unknown as ApiClient;
  return { client, calls };
}

const body = (page: number, last: number, key = 'plans'): Record<string, unknown> => ({
  code: 0,
  message: 'success',
  [key]: [{ plan_code: `p${page}a` }, { plan_code: `p${page}b` }],
  page_context: { page, per_page: 2, has_more_page: page < last },
});

async function collect(gen: AsyncGenerator<Page>, onPage?: (p: Page) => Promise<void>): Promise<Page[]> {
  const out: Page[] = [];
  for await (const p of gen) {
    out.push(p);
    if (onPage) await onPage(p);
  }
  return out;
}

const base = { organizationId: '1', path: '/plans', query: { filter_by: 'PlanStatus.All' }, perPage: 2, startPage: 1, signal: new AbortController().signal, maxPages: 100 };

describe('pages', () => {
  it('follows has_more_page with page and per_page and stops on the last page', async () => {
    const { client, calls } = scripted((p) => body(p, 3));
    const got = await collect(pages({ ...base, client, stream }));
    expect(got.map((p) => p.page)).toEqual([1, 2, 3]);
    expect(calls).toEqual([1, 2, 3].map((page) => ({ filter_by: 'PlanStatus.All', page, per_page: 2 })));
  });

  it('resumes at the given page', async () => {
    const { client, calls } = scripted((p) => body(p, 4));
    const got = await collect(pages({ ...base, client, stream, startPage: 3 }));
    expect(got.map((p) => p.page)).toEqual([3, 4]);
    expect(calls.map((c) => c['page'])).toEqual([3, 4]);
  });

  it('sends no paging parameters to a list that does not declare them, until the server says there is more', async () => {
    const { client, calls } = scripted((p) => ({ ...body(p, 2, 'vendor_credit_refunds'), vendor_credit_refunds: [{ vendor_credit_refund_id: `r${p}` }] }));
    await collect(pages({ ...base, client, stream: unpaged, query: {} }));
    expect(calls).toEqual([{}, { page: 2, per_page: 2 }]);
  });

  it('stops with an error when the server repeats a page (it ignores page)', async () => {
    const { client } = scripted(() => body(1, 99));
    const error = await collect(pages({ ...base, client, stream })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FatalError);
    expect((error as Error).message).toMatch(/same records as page 1/);
  });

  it('stops with an error after maxPages so has_more_page cannot loop forever', async () => {
    const { client, calls } = scripted((p) => body(p, Number.MAX_SAFE_INTEGER));
    const seen: number[] = [];
    const error = await collect(pages({ ...base, client, stream, maxPages: 5 }), async (p) => void seen.push(p.page)).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/after 5 pages/);
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    expect(calls.length).toBe(5);
  });

  it('refuses a response without the records key instead of reading it as empty', async () => {
    const { client } = scripted(() => ({ code: 0, message: 'success', items: [] }));
    await expect(collect(pages({ ...base, client, stream }))).rejects.toThrow(/none of the keys "plans".*"items"/);
  });

  it('with prefetch asks for the next page while the caller still holds this one, and never past the last', async () => {
    const { client, calls } = scripted((p) => body(p, 3));
    const requestedWhileHolding: number[] = [];
    await collect(pages({ ...base, client, stream, prefetch: true }), async () => void requestedWhileHolding.push(calls.length));
    expect(requestedWhileHolding).toEqual([2, 3, 3]);
    expect(calls.length).toBe(3);
  });

  it('without prefetch asks for nothing until the caller is done with the page', async () => {
    const { client, calls } = scripted((p) => body(p, 3));
    const requestedWhileHolding: number[] = [];
    await collect(pages({ ...base, client, stream }), async () => void requestedWhileHolding.push(calls.length));
    expect(requestedWhileHolding).toEqual([1, 2, 3]);
  });
});

describe('fillPath', () => {
  it('substitutes and encodes parent values', () => {
    expect(fillPath('/contacts/{contact_id}/contactpersons', { contact_id: '46/0 1' })).toBe('/contacts/46%2F0%201/contactpersons');
  });
  it('names a missing placeholder', () => {
    expect(() => fillPath('/projects/{project_id}/tasks', {})).toThrow(/\{project_id\}/);
  });
});

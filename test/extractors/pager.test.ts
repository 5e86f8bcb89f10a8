import { describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/api/client.js';
import { findStream } from '../../src/catalog/index.js';
import type { StreamSpec } from '../../src/catalog/types.js';
import { FatalError } from '../../src/core/errors.js';
import { advance, fillPath, pageSignal, pages, recordsOf, type Page } from '../../src/extractors/pager.js';
import { answerHash, type PageMemo } from '../../src/extractors/page-memo.js';
import { RecordBudget } from '../../src/extractors/record-budget.js';
import type { MemoPage } from '../../src/state/page-memo-store.js';
import { StopFlag, StopRequested } from '../../src/extractors/stop.js';

const stream = findStream('billing.plans') as StreamSpec;
const unpaged = findStream('books.vendor_credit_refunds') as StreamSpec;

/** A client whose answers are scripted per page; it records each request's query. */
function scripted(answer: (page: number) => Record<string, unknown>): { client: ApiClient; calls: Array<Record<string, unknown>> } {
  const calls: Array<Record<string, unknown>> = [];
  const client = {
    get: (req: { query?: Record<string, unknown> }) => {
      calls.push({ ...(req.query ?? {}) });
      return Promise.resolve(answer(Number(req.query?.['page'] ?? 1)));
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

async function collect(gen: AsyncGenerator<Page>, onPage?: (p: Page) => void | Promise<void>): Promise<Page[]> {
  const out: Page[] = [];
  for await (const p of gen) {
    out.push(p);
    if (onPage) await onPage(p);
  }
  return out;
}

const base = {
  organizationId: '1',
  path: '/plans',
  query: { filter_by: 'PlanStatus.All' },
  perPage: 2,
  startPage: 1,
  signal: new AbortController().signal,
  maxPages: 100,
};

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

  it('sends page and per_page from the first request to a list that does not declare them too (A11)', async () => {
    const { client, calls } = scripted((p) => ({
      ...body(p, 2, 'vendor_credit_refunds'),
      vendor_credit_refunds: [{ vendor_credit_refund_id: `r${p}` }],
    }));
    await collect(pages({ ...base, client, stream: unpaged, query: {} }));
    expect(calls).toEqual([
      { page: 1, per_page: 2 },
      { page: 2, per_page: 2 },
    ]);
  });

  it('asks a list that refuses the paging parameters again without them, and so for the rest of the run', async () => {
    const refused = new Set<string>();
    const calls: Array<Record<string, unknown>> = [];
    const client = {
      get: (req: { query?: Record<string, unknown> }) => {
        calls.push({ ...(req.query ?? {}) });
        if (req.query?.['page'] !== undefined && Number(req.query['page']) === 1)
          return Promise.reject(
            new FatalError('GET /vendorcredits/1/refunds?page=1 → HTTP 400 code 2: Invalid parameter page', {
              status: 400,
              code: 2,
              serverMessage: 'Invalid parameter page: this list takes no paging parameters',
            }),
          );
        return Promise.resolve({ code: 0, message: 'success', vendor_credit_refunds: [{ vendor_credit_refund_id: 'r1' }] });
      },
    } as unknown as ApiClient;
    const walk = (): Promise<Page[]> => collect(pages({ ...base, client, stream: unpaged, query: {}, pagingRefused: refused }));
    expect((await walk()).flatMap((p) => p.records)).toEqual([{ vendor_credit_refund_id: 'r1' }]);
    expect(calls).toEqual([{ page: 1, per_page: 2 }, {}]);
    expect([...refused]).toEqual(['books.vendor_credit_refunds']);
    // The next parent's list is asked without them at once.
    await walk();
    expect(calls.slice(2)).toEqual([{}]);
  });

  it('does not take a 400 about something else for a refusal of paging, though the request line carries page=', async () => {
    const client = {
      get: () =>
        Promise.reject(
          new FatalError('GET /vendorcredits/1/refunds?page=1&per_page=2 → HTTP 400 code 2: Invalid value passed for organization_id', {
            status: 400,
            code: 2,
            serverMessage: 'Invalid value passed for organization_id',
          }),
        ),
    } as unknown as ApiClient;
    await expect(collect(pages({ ...base, client, stream: unpaged, query: {}, pagingRefused: new Set() }))).rejects.toThrow(
      /organization_id/,
    );
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
    const error = await collect(pages({ ...base, client, stream, maxPages: 5 }), (p) => void seen.push(p.page)).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/after 5 pages/);
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    expect(calls.length).toBe(5);
  });

  it('refuses a response without the records key instead of reading it as empty', async () => {
    const { client } = scripted(() => ({ code: 0, message: 'success', items: [] }));
    await expect(collect(pages({ ...base, client, stream }))).rejects.toThrow(/none of the keys "plans".*"items"/);
  });

  it('reads the key sent as null as an empty list (spec 4.9 writes an empty answer so), but an absent key stays an error', () => {
    expect(recordsOf(stream, { code: 0, message: 'success', plans: null }, 'GET /plans')).toEqual([]);
    expect(() => recordsOf(stream, { code: 0, message: 'success' }, 'GET /plans')).toThrow(/none of the keys "plans"/);
  });

  it('with prefetch asks for the next page while the caller still holds this one, and never past the last', async () => {
    const { client, calls } = scripted((p) => body(p, 3));
    const requestedWhileHolding: number[] = [];
    await collect(pages({ ...base, client, stream, prefetch: true }), () => void requestedWhileHolding.push(calls.length));
    expect(requestedWhileHolding).toEqual([2, 3, 3]);
    expect(calls.length).toBe(3);
  });

  it('without prefetch asks for nothing until the caller is done with the page', async () => {
    const { client, calls } = scripted((p) => body(p, 3));
    const requestedWhileHolding: number[] = [];
    await collect(pages({ ...base, client, stream }), () => void requestedWhileHolding.push(calls.length));
    expect(requestedWhileHolding).toEqual([1, 2, 3]);
  });
});

describe('pages and a stop request', () => {
  it('sends no request once a stop is asked for, and the walk ends with StopRequested after the page the caller holds', async () => {
    const { client, calls } = scripted((p) => body(p, 5));
    const stop = new StopFlag();
    const seen: number[] = [];
    const walk = collect(pages({ ...base, client, stream, stop }), (p) => {
      seen.push(p.page);
      if (p.page === 2) stop.request('shutdown');
    });
    await expect(walk).rejects.toBeInstanceOf(StopRequested);
    expect(seen).toEqual([1, 2]);
    expect(calls.map((c) => c['page'])).toEqual([1, 2]);
  });

  it('with prefetch, yields the page already asked for before honouring the stop, and asks for none after it', async () => {
    const { client, calls } = scripted((p) => body(p, 5));
    const stop = new StopFlag();
    const seen: number[] = [];
    const walk = collect(pages({ ...base, client, stream, stop, prefetch: true }), (p) => {
      seen.push(p.page);
      // Page 3 was requested while the caller held page 2.
      if (p.page === 2) stop.request('budget');
    });
    await expect(walk).rejects.toThrow(/stopped between pages: budget/);
    expect(seen).toEqual([1, 2, 3]);
    expect(calls.map((c) => c['page'])).toEqual([1, 2, 3]);
  });

  it('asks for nothing at all when the stop came before the walk', async () => {
    const { client, calls } = scripted((p) => body(p, 5));
    const stop = new StopFlag();
    stop.request('shutdown');
    await expect(collect(pages({ ...base, client, stream, stop }))).rejects.toBeInstanceOf(StopRequested);
    expect(calls).toEqual([]);
  });
});

describe('pages without page_context (lists may carry it, spec 1)', () => {
  /** A server that pages `total` records by per_page (default 200) and never sends page_context. */
  function silent(total: number, key = 'plans', id = 'plan_code'): ReturnType<typeof scripted> {
    const calls: Array<Record<string, unknown>> = [];
    const client = {
      get: (req: { query?: Record<string, unknown> }) => {
        calls.push({ ...(req.query ?? {}) });
        const page = Number(req.query?.['page'] ?? 1);
        const size = Number(req.query?.['per_page'] ?? 200);
        const from = (page - 1) * size;
        const ids = Array.from({ length: Math.max(0, Math.min(size, total - from)) }, (_, i) => ({ [id]: `r${from + i}` }));
        return Promise.resolve({ code: 0, message: 'success', [key]: ids });
      },
    } as unknown as ApiClient;
    return { client, calls };
  }

  it.each([
    // [records, per_page, requests]: a short page ends the walk; an exact multiple costs one empty page.
    [0, 2, 1],
    [1, 2, 1],
    [2, 2, 2],
    [3, 2, 2],
    [4, 2, 3],
    [5, 2, 3],
  ])('reads all %i records at per_page %i in %i requests', async (total, perPage, requests) => {
    const { client, calls } = silent(total);
    const got = await collect(pages({ ...base, client, stream, perPage }));
    expect(got.flatMap((p) => p.records.map((r) => r['plan_code']))).toEqual(Array.from({ length: total }, (_, i) => `r${i}`));
    expect(calls.length).toBe(requests);
    expect(got.at(-1)!.hasMore).toBe(false);
  });

  it('asks a child list that refused paging for page 2 when page 1 held the default 200', async () => {
    const { client, calls } = silent(250, 'vendor_credit_refunds', 'vendor_credit_refund_id');
    const refused = new Set(['books.vendor_credit_refunds']);
    const got = await collect(pages({ ...base, client, stream: unpaged, query: {}, perPage: 200, pagingRefused: refused }));
    expect(got.reduce((a, p) => a + p.records.length, 0)).toBe(250);
    expect(calls).toEqual([{}, { page: 2, per_page: 200 }]);
  });

  it('with a record budget, holds one page while the caller writes it and gives it back when asked for the next', async () => {
    const { client } = scripted((p) => body(p, 3));
    const budget = new RecordBudget(2);
    const heldWhileWriting: number[] = [];
    await collect(pages({ ...base, client, stream, budget }), () => void heldWhileWriting.push(budget.inFlight));
    expect(heldWhileWriting).toEqual([2, 2, 2]);
    expect(budget.inFlight).toBe(0);
    expect(budget.peak).toBe(2);
  });

  it('with a record budget, a short page holds only the records it has', async () => {
    const { client } = scripted((p) => ({ code: 0, plans: p === 1 ? [{ plan_code: 'a' }, { plan_code: 'b' }] : [{ plan_code: 'c' }] }));
    const budget = new RecordBudget(10);
    const held: number[] = [];
    await collect(pages({ ...base, client, stream, budget }), () => void held.push(budget.inFlight));
    expect(held).toEqual([2, 1]);
    expect(budget.inFlight).toBe(0);
  });

  it('with a record budget, a page larger than asked for (a server that ignores per_page) is held whole', async () => {
    const { client } = scripted((p) => ({ code: 0, plans: p === 1 ? [{ plan_code: 'a' }, { plan_code: 'b' }, { plan_code: 'c' }] : [] }));
    const budget = new RecordBudget(10);
    const held: number[] = [];
    await collect(pages({ ...base, client, stream, budget }), () => void held.push(budget.inFlight));
    expect(held).toEqual([3, 0]);
    expect(budget.inFlight).toBe(0);
  });

  it('with a record budget, prefetches only into room that is free, and otherwise asks after the commit', async () => {
    // Room for one page: no prefetch can be taken, so every page is asked for after the one before is done.
    const tight = scripted((p) => body(p, 3));
    const one = new RecordBudget(2);
    const requestedWhileHolding: number[] = [];
    await collect(
      pages({ ...base, client: tight.client, stream, budget: one, prefetch: true }),
      () => void requestedWhileHolding.push(tight.calls.length),
    );
    expect(requestedWhileHolding).toEqual([1, 2, 3]);
    expect(one.peak).toBe(2);
    // Room for two: the next page is asked for while the caller holds this one.
    const roomy = scripted((p) => body(p, 3));
    const two = new RecordBudget(4);
    const ahead: number[] = [];
    await collect(pages({ ...base, client: roomy.client, stream, budget: two, prefetch: true }), () => void ahead.push(roomy.calls.length));
    expect(ahead).toEqual([2, 3, 3]);
    expect(two.peak).toBe(4);
    expect(two.inFlight).toBe(0);
  });

  it('with a record budget, a stop asked for while waiting for room sends no request', async () => {
    const { client, calls } = scripted((p) => body(p, 3));
    const budget = new RecordBudget(2);
    const other = await budget.acquire(2);
    const stop = new StopFlag();
    const walk = collect(pages({ ...base, client, stream, budget, stop }));
    await new Promise((resolve) => setImmediate(resolve));
    stop.request('shutting down');
    other.release();
    await expect(walk).rejects.toBeInstanceOf(StopRequested);
    expect(calls).toEqual([]);
    expect(budget.inFlight).toBe(0);
  });

  it('with a record budget, gives everything back when the caller stops early or a page fails', async () => {
    const budget = new RecordBudget(4);
    const { client } = scripted((p) => body(p, 5));
    for await (const p of pages({ ...base, client, stream, budget, prefetch: true })) if (p.page === 2) break;
    expect(budget.inFlight).toBe(0);
    const failing = scripted((p) => (p === 2 ? { code: 0, message: 'success' } : body(p, 5)));
    await expect(collect(pages({ ...base, client: failing.client, stream, budget, prefetch: true }))).rejects.toThrow();
    expect(budget.inFlight).toBe(0);
  });

  it('prefetches the next page only while pages are full', async () => {
    const { client, calls } = silent(5);
    await collect(pages({ ...base, client, stream, perPage: 2, prefetch: true }));
    expect(calls.map((c) => c['page'])).toEqual([1, 2, 3]);
  });

  it('keeps page_context authoritative where it is sent: a full last page ends the walk', async () => {
    const { client, calls } = scripted((p) => body(p, 2));
    await collect(pages({ ...base, client, stream }));
    expect(calls.length).toBe(2);
  });

  it('ends the walk, without an error, when a list without page_context ignores the page parameter', async () => {
    const client = {
      get: () => Promise.resolve({ code: 0, message: 'success', plans: [{ plan_code: 'a' }, { plan_code: 'b' }] }),
    } as unknown as ApiClient;
    const got = await collect(pages({ ...base, client, stream }));
    expect(got.map((p) => p.records.length)).toEqual([2, 0]);
    expect(got.at(-1)!.hasMore).toBe(false);
  });
});

describe('pageSignal and advance', () => {
  it.each([
    [{ page_context: { has_more_page: true } }, 0, 200, { kind: 'declared', hasMore: true }],
    [{ page_context: { has_more_page: 'false' } }, 200, 200, { kind: 'declared', hasMore: false }],
    [{ page_context: { page: 1 } }, 200, 200, { kind: 'inferred', hasMore: true }],
    [{}, 200, 200, { kind: 'inferred', hasMore: true }],
    [{}, 199, 200, { kind: 'inferred', hasMore: false }],
    [{}, 0, 200, { kind: 'inferred', hasMore: false }],
    [{ page_context: null }, 50, 50, { kind: 'inferred', hasMore: true }],
  ])('%j with %i records of %i reads as %j', (b, n, size, expected) => {
    expect(pageSignal(b as Record<string, unknown>, n, size)).toEqual(expected);
  });

  it.each([
    [{ kind: 'declared', hasMore: true }, 'a', 'a', 1, 'fail-repeated'],
    [{ kind: 'inferred', hasMore: true }, 'a', 'a', 2, 'stop-repeated'],
    [{ kind: 'declared', hasMore: true }, 'b', 'a', 2, 'yield-and-continue'],
    [{ kind: 'declared', hasMore: false }, 'b', 'a', 2, 'yield-and-stop'],
    [{ kind: 'inferred', hasMore: true }, 'b', null, 5, 'fail-max-pages'],
    [{ kind: 'inferred', hasMore: false }, null, null, 5, 'yield-and-stop'],
  ] as const)('%j, page %s after %s, %i walked of 5 → %s', (signal, fingerprint, previousFingerprint, walked, action) => {
    expect(advance({ signal, fingerprint, previousFingerprint, walked, maxPages: 5 }).action).toBe(action);
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

describe('pages with a memo of what each page answered (src/extractors/page-memo.ts)', () => {
  /** A client that answers each page's text through the caller's beforeParse, as the real client does. */
  function texts(answer: (page: number) => string): { client: ApiClient; parsed: number[] } {
    const parsed: number[] = [];
    const client = {
      get: (req: { query?: Record<string, unknown>; beforeParse?: (bytes: Uint8Array) => Record<string, unknown> | undefined }) => {
        const page = Number(req.query?.['page'] ?? 1);
        const text = answer(page);
        const standIn = req.beforeParse?.(new TextEncoder().encode(text));
        if (standIn) return Promise.resolve(standIn);
        parsed.push(page);
        return Promise.resolve(JSON.parse(text) as Record<string, unknown>);
      },
    } as unknown as ApiClient;
    return { client, parsed };
  }
  const text = (page: number): string => JSON.stringify(body(page, 3));
  const kept = (page: number, bodyText: string): MemoPage => ({
    connection: 'c',
    organizationId: '1',
    stream: 'billing.plans',
    query: '[]',
    page,
    bodyHash: answerHash(bodyText),
    ids: [`p${page}a`, `p${page}b`],
    hasMore: page < 3,
    maxChanged: null,
    syncedAt: '2026-11-01T00:00:00.000Z',
  });

  it('hashes every answer, and takes a page that answers its kept text, rows untouched, as read without parsing it', async () => {
    const { client, parsed } = texts(text);
    const asked: number[] = [];
    const memo: PageMemo = {
      recall: (n) => Promise.resolve(n === 2 ? kept(2, text(2)) : null),
      untouched: (p) => {
        asked.push(p.page);
        return Promise.resolve(true);
      },
    };
    const got = await collect(pages({ ...base, client, stream, memo }));
    expect(parsed).toEqual([1, 3]);
    expect(asked).toEqual([2]);
    expect(got.map((p) => [p.page, p.records.length, p.hasMore, p.unchanged?.ids ?? null])).toEqual([
      [1, 2, true, null],
      [2, 0, true, ['p2a', 'p2b']],
      [3, 2, false, null],
    ]);
    expect(got.map((p) => p.bodyHash)).toEqual([1, 2, 3].map((n) => answerHash(text(n))));
  });

  it('parses a page whose kept text matches when its rows were touched since, and one whose text differs', async () => {
    const { client } = texts(text);
    const memo: PageMemo = {
      recall: (n) => Promise.resolve(n === 1 ? kept(1, text(1)) : kept(n, 'another answer')),
      untouched: () => Promise.resolve(false),
    };
    const got = await collect(pages({ ...base, client, stream, memo }));
    expect(got.map((p) => [p.page, p.records.map((r) => r['plan_code']), p.unchanged ?? null])).toEqual([
      [1, ['p1a', 'p1b'], null],
      [2, ['p2a', 'p2b'], null],
      [3, ['p3a', 'p3b'], null],
    ]);
    expect(got[0]!.bodyHash).toBe(answerHash(text(1)));
  });

  it('asks whether a page still stands only after the caller is done with the page before it', async () => {
    const { client } = texts(text);
    const events: string[] = [];
    const memo: PageMemo = {
      recall: (n) => Promise.resolve(kept(n, text(n))),
      untouched: (p) => {
        events.push(`untouched ${p.page}`);
        return Promise.resolve(true);
      },
    };
    await collect(pages({ ...base, client, stream, memo, prefetch: true }), (p) => {
      events.push(`committed ${p.page}`);
    });
    expect(events).toEqual(['untouched 1', 'committed 1', 'untouched 2', 'committed 2', 'untouched 3', 'committed 3']);
  });
});

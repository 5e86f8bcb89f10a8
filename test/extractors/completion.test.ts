import { afterEach, describe, expect, it } from 'vitest';
import type { ApiClient, GetRequest } from '../../src/api/client.js';
import { LimiterRegistry } from '../../src/api/limiter.js';
import { MemoryUsageStore } from '../../src/api/usage-store.js';
import { CATALOG, findStream } from '../../src/catalog/index.js';
import type { StreamSpec } from '../../src/catalog/types.js';
import { parseConfig } from '../../src/config/load.js';
import { FakeClock } from '../../src/core/clock.js';
import { FatalError, QuotaExhaustedError, RetriableError } from '../../src/core/errors.js';
import { createLogger } from '../../src/core/logger.js';
import { SecretRegistry } from '../../src/core/secrets.js';
import { completeDetails, singleRecord } from '../../src/extractors/completion.js';
import { Stamp, silentProgress, type SyncContext } from '../../src/extractors/context.js';
import { neverStop, StopFlag, StopRequested } from '../../src/extractors/stop.js';
import { newTally } from '../../src/extractors/stream-tally.js';
import { migrateToLatest } from '../../src/loaders/migrate.js';
import { TableWriter } from '../../src/loaders/table-writer.js';
import type { Warehouse } from '../../src/loaders/warehouse.js';
import { enqueuePending } from '../../src/state/pending.js';
import { migratedWarehouse } from '../helpers/dialects.js';

const stream = findStream('inventory.sales_orders') as StreamSpec;
const ORG = '700';
const IDS = ['S1', 'S2', 'S3', 'S4', 'S5', 'S6', 'S7', 'S8'];

/**
 * A client whose detail answers are scripted by id: a record, or the daily quota spent. Each
 * call bumps the request meter as the real client does for every request it sends.
 */
function scriptedClient(clock: FakeClock, spent: ReadonlySet<string>): { client: ApiClient; asked: string[] } {
  const asked: string[] = [];
  const client = {
    get: (req: GetRequest) => {
      const id = decodeURIComponent(req.path.split('/').pop()!);
      asked.push(id);
      if (spent.has(id)) {
        const resumeAt = new Date(clock.now() + 3_600_000);
        return Promise.reject(new QuotaExhaustedError(`organization ${ORG}: daily budget used`, { resumeAt }));
      }
      if (req.meter) req.meter.requests++;
      return Promise.resolve({
        code: 0,
        message: 'success',
        salesorder: { salesorder_id: id, salesorder_number: `SO-${id}`, line_items: [{ line_item_id: `${id}-L1`, rate: 5 }] },
      });
    },
  } as unknown as ApiClient;
  return { client, asked };
}

describe('detail completion (rule: every fetched item commits)', () => {
  let warehouse: Warehouse | undefined;
  afterEach(async () => {
    await warehouse?.close();
    warehouse = undefined;
  });

  async function context(client: ApiClient, clock: FakeClock): Promise<SyncContext> {
    const tw = await migratedWarehouse('sqlite');
    warehouse = await tw.open();
    await migrateToLatest(warehouse);
    const secrets = new SecretRegistry();
    const logger = createLogger({ level: 'silent', secrets });
    const config = parseConfig(
      {
        warehouse: tw.url,
        connections: [{ name: 'c', client_id: 'id', client_secret: 'secret', refresh_token: 'refresh', region: 'us', plan: 'free' }],
      },
      { env: {}, secrets },
    );
    return {
      config,
      connection: config.connections[0]!,
      warehouse,
      writer: new TableWriter(warehouse.sql),
      client,
      limiters: new LimiterRegistry({ clock, store: new MemoryUsageStore(), logger }),
      catalog: CATALOG,
      logger,
      clock,
      stamp: new Stamp(clock),
      signal: new AbortController().signal,
      progress: silentProgress,
      runId: 'r1',
      stop: neverStop,
      halt: { authorization: null },
    };
  }

  it('keeps every record fetched before the quota ran out and leaves only the unfetched ids queued', async () => {
    const clock = new FakeClock(Date.UTC(2026, 10, 20, 8));
    // The budget runs out at the fifth id: ids 5 to 8 were never fetched.
    const { client, asked } = scriptedClient(clock, new Set(['S5', 'S6', 'S7', 'S8']));
    const ctx = await context(client, clock);
    const key = { connection: 'c', organizationId: ORG, stream: 'inventory.sales_orders' };
    await enqueuePending(ctx.warehouse.db, key, 'detail', IDS, 'changed', new Date(clock.now()).toISOString());

    const tally = newTally();
    const error = await completeDetails(ctx, ORG, stream, tally).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QuotaExhaustedError);

    const fetched = asked.filter((id) => !['S5', 'S6', 'S7', 'S8'].includes(id));
    const rows = await ctx.warehouse.db.selectFrom('inventory_sales_orders').select('salesorder_id').orderBy('salesorder_id').execute();
    expect(rows.map((r): unknown => r.salesorder_id)).toEqual(fetched.sort());
    expect(fetched.length).toBe(4);
    const lines = await ctx.warehouse.db.selectFrom('inventory_sales_orders__line_items').select('line_item_id').execute();
    expect(lines).toHaveLength(4);
    const queued = await ctx.warehouse.db.selectFrom('_svcsync_pending').select('item_id').orderBy('item_id').execute();
    expect(queued.map((q): unknown => q.item_id)).toEqual(['S5', 'S6', 'S7', 'S8']);
    // Rule 4: the stream's report counts what it fetched and committed, though it ended on the quota.
    expect(tally.meter.requests).toBe(4);
    // Single-record reads of records its list pages counted: reads, not more records.
    expect(tally.reads).toBe(4);
    expect(tally.records).toBe(0);
  });

  it('sets aside an item the API refuses for good, completes the others (a lone record in an array too), names the count', async () => {
    const clock = new FakeClock(Date.UTC(2026, 10, 20, 8));
    const { client: inner, asked } = scriptedClient(clock, new Set());
    const client = {
      get: async (req: GetRequest) => {
        const id = decodeURIComponent(req.path.split('/').pop()!);
        if (id === 'S2') {
          asked.push(id);
          throw new FatalError('GET /inventory/v1/salesorders/S2: 404', { status: 404, code: 2, request: 'GET /salesorders/S2' });
        }
        const body = await (inner as unknown as { get: (r: GetRequest) => Promise<Record<string, unknown>> }).get(req);
        // Spec 4.2 and 4.3 show single records in an array of one; S3 comes that way.
        return id === 'S3' ? { ...body, salesorder: [body['salesorder']] } : body;
      },
    } as unknown as ApiClient;
    const ctx = await context(client, clock);
    const key = { connection: 'c', organizationId: ORG, stream: 'inventory.sales_orders' };
    const enqueuedAt = new Date(clock.now()).toISOString();
    await enqueuePending(ctx.warehouse.db, key, 'detail', IDS, 'changed', enqueuedAt);

    const error = await completeDetails(ctx, ORG, stream).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FatalError);
    expect((error as FatalError).message).toMatch(
      /^1 single-record reads of inventory\.sales_orders could not be read; the others were\. The first, S2:/,
    );
    expect((error as FatalError).hint).toContain('add 2 to sync.gone_codes');
    expect(asked.filter((id) => id === 'S2')).toHaveLength(1);
    const rows = await ctx.warehouse.db.selectFrom('inventory_sales_orders').select('salesorder_id').orderBy('salesorder_id').execute();
    expect(rows.map((r): unknown => r.salesorder_id)).toEqual(IDS.filter((id) => id !== 'S2'));
    const queued = await ctx.warehouse.db.selectFrom('_svcsync_pending').select(['item_id', 'enqueued_at']).execute();
    expect(queued.map((q): unknown => q.item_id)).toEqual(['S2']);
    // Behind anything queued before it, so the next run starts with the others.
    expect(queued[0]!.enqueued_at > enqueuedAt).toBe(true);
  });

  it('a failure that ends the pass (retries spent) still moves its item to the back of the queue', async () => {
    const clock = new FakeClock(Date.UTC(2026, 10, 20, 8));
    const client = {
      get: () => Promise.reject(new RetriableError('GET /salesorders/S1: 500', { status: 500, reason: 'server' })),
    } as unknown as ApiClient;
    const ctx = await context(client, clock);
    const key = { connection: 'c', organizationId: ORG, stream: 'inventory.sales_orders' };
    const enqueuedAt = new Date(clock.now() - 60_000).toISOString();
    await enqueuePending(ctx.warehouse.db, key, 'detail', ['S1'], 'changed', enqueuedAt);
    expect(await completeDetails(ctx, ORG, stream).catch((e: unknown) => e)).toBeInstanceOf(RetriableError);
    const queued = await ctx.warehouse.db.selectFrom('_svcsync_pending').select(['item_id', 'enqueued_at']).execute();
    expect(queued.map((q): unknown => q.item_id)).toEqual(['S1']);
    expect(queued[0]!.enqueued_at > enqueuedAt).toBe(true);
  });

  it('fetches only the ids still queued when it runs again', async () => {
    const clock = new FakeClock(Date.UTC(2026, 10, 20, 8));
    const first = scriptedClient(clock, new Set(['S7', 'S8']));
    const ctx = await context(first.client, clock);
    const key = { connection: 'c', organizationId: ORG, stream: 'inventory.sales_orders' };
    await enqueuePending(ctx.warehouse.db, key, 'detail', IDS, 'changed', new Date(clock.now()).toISOString());
    await completeDetails(ctx, ORG, stream).catch(() => undefined);
    const second = scriptedClient(clock, new Set());
    await completeDetails({ ...ctx, client: second.client }, ORG, stream);
    expect(second.asked.sort()).toEqual(['S7', 'S8']);
    const rows = await ctx.warehouse.db.selectFrom('inventory_sales_orders').select('salesorder_id').execute();
    expect(rows).toHaveLength(8);
  });

  it('on a stop request fetches no further item: what was asked for commits, the rest stays queued', async () => {
    const clock = new FakeClock(Date.UTC(2026, 10, 20, 8));
    const { client: inner, asked } = scriptedClient(clock, new Set());
    const stop = new StopFlag();
    const client = {
      get: async (req: GetRequest) => {
        stop.request('shutdown');
        return (inner as unknown as { get: (r: GetRequest) => Promise<unknown> }).get(req);
      },
    } as unknown as ApiClient;
    const ctx = { ...(await context(client, clock)), stop };
    const key = { connection: 'c', organizationId: ORG, stream: 'inventory.sales_orders' };
    await enqueuePending(ctx.warehouse.db, key, 'detail', IDS, 'changed', new Date(clock.now()).toISOString());

    const error = await completeDetails(ctx, ORG, stream).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StopRequested);
    // The items already under way when the stop came (up to the fan-out) finish; no new one starts.
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.length).toBeLessThan(IDS.length);
    const rows = await ctx.warehouse.db.selectFrom('inventory_sales_orders').select('salesorder_id').orderBy('salesorder_id').execute();
    expect(rows.map((r): unknown => r.salesorder_id)).toEqual([...asked].sort());
    const queued = await ctx.warehouse.db.selectFrom('_svcsync_pending').select('item_id').orderBy('item_id').execute();
    expect(queued.map((q): unknown => q.item_id)).toEqual(IDS.filter((id) => !asked.includes(id)));
  });
});

describe('singleRecord', () => {
  const keys = ['salesorder', 'sales_order'];
  const order = { salesorder_id: 'S1' };
  it.each([
    ['an object under the first key', { salesorder: order }, order],
    ['an object under another spelling', { sales_order: order }, order],
    ['an array holding one object (spec 4.2, 4.3)', { salesorder: [order] }, order],
  ])('reads %s', (_what, body, expected) => {
    expect(singleRecord({ code: 0, ...body }, keys, 'GET /salesorders/S1', 'inventory.sales_orders')).toEqual(expected);
  });
  it.each([
    ['an array of two', { salesorder: [order, order] }, /"salesorder" is an array of 2, not one record/],
    ['null', { salesorder: null }, /"salesorder" is null, not one record/],
    ['no key at all', { other: order }, /none of the keys "salesorder", "sales_order"/],
  ])('refuses %s, saying what came', (_what, body, message) => {
    expect(() => singleRecord({ code: 0, ...body }, keys, 'GET /salesorders/S1', 'inventory.sales_orders')).toThrow(message);
  });
});

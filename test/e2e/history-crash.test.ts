import { CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATALOG } from '../../src/catalog/index.js';
import { historyPlan, historyTables, type HistoryTable } from '../../src/loaders/derived/history-tables.js';
import { openWarehouse, type Warehouse } from '../../src/loaders/warehouse.js';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { runCliKilledAfterPages, writeKilledRunConfig, type KilledRun } from '../helpers/cli-process.js';
import { DIALECTS, freshWarehouse, type TestWarehouse } from '../helpers/dialects.js';

/**
 * History syncs killed with SIGKILL at several points, then run to the end: the history tables
 * hold no version twice and leave none open that a later one follows, on both dialects and both
 * presets (test/e2e/crash.test.ts does the same for the tables themselves).
 */

type Rec = Record<string, unknown>;

const TABLES = historyTables(historyPlan(CATALOG, 'all'));
const NOT_CONTENT = new Set(['_synced_at', '_run_id', '_deleted_at', '_valid_from', '_valid_to', '_change']);

const ms = (v: unknown): number => (v instanceof Date ? v.getTime() : Date.parse(String(v)));

async function rows(w: Warehouse, text: string): Promise<Rec[]> {
  return (await w.db.executeQuery<Rec>(CompiledQuery.raw(text))).rows;
}

/** Problems of one history table against its table; none expected. */
async function historyProblems(w: Warehouse, t: HistoryTable): Promise<string[]> {
  const problems: string[] = [];
  const keyOf = (r: Rec): string => t.key.map((k) => String(r[k])).join('|');
  const versions = await rows(w, `SELECT * FROM "${t.history}"`);
  const byKey = new Map<string, Rec[]>();
  for (const v of versions) byKey.set(keyOf(v), [...(byKey.get(keyOf(v)) ?? []), v]);
  for (const [key, list] of byKey) {
    list.sort((a, b) => ms(a['_valid_from']) - ms(b['_valid_from']));
    const open = list.filter((v) => v['_valid_to'] === null);
    if (open.length > 1) problems.push(`${t.history} ${key}: ${open.length} open versions`);
    for (let i = 1; i < list.length; i++) {
      const [a, b] = [list[i - 1]!, list[i]!];
      // Versions of a record follow one another without gap or overlap; a child row may lapse (a line removed, then back).
      if (a['_valid_to'] === null) problems.push(`${t.history} ${key}: version ${i - 1} open under a later one`);
      else if (t.def.parentTable === undefined && ms(a['_valid_to']) !== ms(b['_valid_from']))
        problems.push(`${t.history} ${key}: version ${i - 1} ends where version ${i} does not begin`);
      const same = Object.keys(b).every((c) => NOT_CONTENT.has(c) || JSON.stringify(a[c]) === JSON.stringify(b[c]));
      // A record read in two requests (its list entry, then its single-record read in the next run) is one version.
      if (t.changeColumn !== null && ms(a['_valid_to']) - ms(a['_valid_from']) <= 1)
        problems.push(`${t.history} ${key}: version ${i - 1} lasted a millisecond`);
      // A child row's version follows its record's even when the row itself did not change.
      if (
        t.def.parentTable === undefined &&
        same &&
        a['_change'] !== 'deleted' &&
        b['_change'] !== 'deleted' &&
        ms(a['_valid_to']) === ms(b['_valid_from'])
      )
        problems.push(`${t.history} ${key}: version ${i} repeats version ${i - 1}`);
    }
  }
  // What is open is what the table holds: a live row's version, or a deleted record's deletion.
  const current = await rows(w, `SELECT * FROM "${t.table}"`);
  const live = new Set(current.filter((r) => r['_deleted_at'] === null).map(keyOf));
  const openLive = new Set(versions.filter((v) => v['_valid_to'] === null && v['_change'] !== 'deleted').map(keyOf));
  if (t.def.parentTable === undefined) {
    const missing = [...live].filter((k) => !openLive.has(k));
    const extra = [...openLive].filter((k) => !live.has(k));
    if (missing.length) problems.push(`${t.history}: live rows without an open version: ${missing.slice(0, 3).join(', ')}`);
    if (extra.length) problems.push(`${t.history}: open versions of rows not live: ${extra.slice(0, 3).join(', ')}`);
  } else {
    const extra = [...openLive].filter((k) => !live.has(k));
    if (extra.length) problems.push(`${t.history}: open versions of rows not live: ${extra.slice(0, 3).join(', ')}`);
  }
  return problems;
}

const CASES = DIALECTS.flatMap((dialect) => (['default', 'hostile'] as const).map((preset) => ({ dialect, preset })));

// Concurrent, as test/e2e/crash.test.ts: each case its own sandbox and warehouse, any kill point valid.
describe.concurrent.each(CASES)('a history sync killed with SIGKILL on $dialect against the $preset sandbox', ({ dialect, preset }) => {
  let sandbox: Sandbox;
  let tw: TestWarehouse;
  let configPath: string;
  beforeAll(async () => {
    sandbox = await startSandbox({
      seed: 13,
      scale: 30,
      organizations: 2,
      unlimited: true,
      faults: { latencyMs: 8 },
      preset,
      variants: { changeWhilePagingEvery: 0 },
    });
    tw = await freshWarehouse(dialect);
    configPath = writeKilledRunConfig(sandbox, tw.url, {
      prefix: 'svcsync-history-crash-',
      secretEnv: 'HISTORY_CRASH_SECRET',
      extra: ['history: all'],
    });
  });
  afterAll(async () => {
    await sandbox?.stop();
    await tw?.drop();
  });

  it('leaves no version twice and none open that a later one follows', async () => {
    const kills: KilledRun[] = [];
    for (const pages of [3, 12, 30]) kills.push(await runCliKilledAfterPages(['sync', '--config', configPath], pages));
    const first = await runCliKilledAfterPages(['sync', '--config', configPath]);
    expect(first.code, first.stderr + first.stdout).toBe(0);
    sandbox.mutate({ modify: '20%', create: 2, delete: 2 });
    for (const pages of [4, 15]) kills.push(await runCliKilledAfterPages(['sync', '--reconcile', '--config', configPath], pages));
    expect(kills.filter((k) => k.signal === 'SIGKILL').length).toBeGreaterThan(2);
    const final = await runCliKilledAfterPages(['sync', '--reconcile', '--config', configPath]);
    expect(final.code, final.stderr + final.stdout).toBe(0);
    const warehouse = await openWarehouse(tw.url);
    try {
      const problems: string[] = [];
      for (const t of TABLES) problems.push(...(await historyProblems(warehouse, t)));
      expect(problems).toEqual([]);
      // The changes made it in: updated and deleted versions of sales orders exist.
      const kinds = await rows(warehouse, `SELECT DISTINCT "_change" AS c FROM inventory_sales_orders_history`);
      expect(kinds.map((k) => k['c']).sort()).toEqual(['created', 'deleted', 'updated']);
    } finally {
      await warehouse.close();
    }
  }, 240_000);
});

/**
 * What the sandbox's history costs in memory: the same mutation rounds at scale 1000 (three
 * organizations, as `svcsync sandbox` serves by default), once keeping every past version and
 * once keeping none (maxVersions 0). The difference in heap is what the versions take.
 *
 *   npm run build && node --expose-gc dist/bench/sandbox-versions.js [rounds] [modify] [create] [delete]
 *   (defaults: 100 rounds of --modify 5% --create 3% --delete 2%)
 */
import { pathToFileURL } from 'node:url';
import { startSandbox, type Amount } from '../sandbox/index.js';

export interface VersionsRow {
  round: number;
  versions: number;
  records: number;
  heapWithHistoryMb: number;
  heapWithoutHistoryMb: number;
  historyMb: number;
  bytesPerVersion: number;
}

const gc = (globalThis as { gc?: () => void }).gc;

function heapMb(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed / 1_048_576;
}

async function run(rounds: number, checkpoints: Set<number>, amounts: Record<'modify' | 'create' | 'delete', Amount>, maxVersions: number) {
  const sb = await startSandbox({ scale: 1000, organizations: 3, unlimited: true, timeScale: 1e-9, maxVersions });
  const orgs = sb.organizations();
  const base = heapMb();
  const out = new Map<number, { heap: number; versions: number; records: number }>();
  for (let round = 1; round <= rounds; round++) {
    sb.advanceClock(60_000);
    sb.mutate(amounts);
    if (!checkpoints.has(round)) continue;
    let records = 0;
    for (const o of orgs) for (const [f, s] of TOP) records += sb.count(o.ids[f], f, s);
    out.set(round, { heap: heapMb() - base, versions: sb.historyStats().versions, records });
  }
  await sb.stop();
  return out;
}

const TOP = [
  ['books', 'users'],
  ['books', 'vendor_credits'],
  ['books', 'webhooks'],
  ['inventory', 'contacts'],
  ['inventory', 'sales_orders'],
  ['inventory', 'vendor_credits'],
  ['invoice', 'projects'],
  ['billing', 'plans'],
  ['billing', 'recurring_expenses'],
  ['billing', 'events'],
] as const;

export async function measureVersions(rounds = 100, amounts = { modify: '5%', create: '3%', delete: '2%' } as Record<string, Amount>) {
  const checkpoints = new Set([1, 10, 25, 50, 100, 200, 500].filter((r) => r <= rounds).concat(rounds));
  const a = amounts as Record<'modify' | 'create' | 'delete', Amount>;
  const kept = await run(rounds, checkpoints, a, Number.MAX_SAFE_INTEGER);
  const none = await run(rounds, checkpoints, a, 0);
  const rows: VersionsRow[] = [];
  for (const round of [...checkpoints].sort((x, y) => x - y)) {
    const k = kept.get(round)!;
    const n = none.get(round)!;
    const historyMb = k.heap - n.heap;
    rows.push({
      round,
      versions: k.versions,
      records: k.records,
      heapWithHistoryMb: round2(k.heap),
      heapWithoutHistoryMb: round2(n.heap),
      historyMb: round2(historyMb),
      bytesPerVersion: k.versions ? Math.round((historyMb * 1_048_576) / k.versions) : 0,
    });
  }
  return rows;
}

const round2 = (x: number): number => Math.round(x * 100) / 100;

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  if (!gc) process.stderr.write('run with node --expose-gc for steady heap figures\n');
  const [rounds, modify, create, del] = process.argv.slice(2);
  const amount = (raw: string | undefined, fallback: Amount): Amount => {
    if (raw === undefined) return fallback;
    return /%$/.test(raw) ? (raw as `${number}%`) : Number(raw);
  };
  const rows = await measureVersions(Number(rounds ?? 100), {
    modify: amount(modify, '5%'),
    create: amount(create, '3%'),
    delete: amount(del, '2%'),
  });
  console.table(rows);
}

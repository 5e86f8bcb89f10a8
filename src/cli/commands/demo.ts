import { rmSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { Command } from 'commander';
import { CompiledQuery } from 'kysely';
import { parseConfig } from '../../config/load.js';
import { createLogger } from '../../core/logger.js';
import { SecretRegistry } from '../../core/secrets.js';
import { runSync } from '../../extractors/sync-run.js';
import type { Warehouse } from '../../loaders/warehouse.js';
import type { SqlValue } from '../../normalize/values.js';
import { startSandbox } from '../../../sandbox/index.js';
import { createProgress } from '../progress.js';
import { stopOnSignals, logLevelFor, openConfiguredWarehouse, type Cli } from '../runtime.js';
import { renderSummary, type SummaryTime } from '../summary.js';

/** Queries a BI user might start from, shown with their answers. */
export const EXAMPLE_QUERIES: Array<{ title: string; sql: string }> = [
  {
    title: 'Sales orders and their total per organization and currency',
    sql: `SELECT organization_id, currency_code, COUNT(*) AS orders, ROUND(SUM(total), 2) AS total
FROM inventory_sales_orders WHERE _deleted_at IS NULL
GROUP BY organization_id, currency_code ORDER BY organization_id`,
  },
  {
    title: 'Best-selling items by quantity (from sales-order line items)',
    sql: `SELECT li.name, SUM(li.quantity) AS quantity, COUNT(DISTINCT li.salesorder_id) AS orders
FROM inventory_sales_orders__line_items li
WHERE li._deleted_at IS NULL
GROUP BY li.name ORDER BY quantity DESC LIMIT 5`,
  },
  {
    title: 'Unbilled hours per project (task hours arrive as "hh:mm" text and are stored as numbers)',
    sql: `SELECT project_name, ROUND(SUM(un_billed_hours), 2) AS unbilled_hours, COUNT(*) AS tasks
FROM invoice_tasks WHERE _deleted_at IS NULL
GROUP BY project_name ORDER BY unbilled_hours DESC LIMIT 5`,
  },
  {
    title: 'Sales-order lines in the base currency (the report_sales_order_lines view: live rows only, joins done)',
    sql: `SELECT salesorder_number, customer_name, item_name, quantity, currency_code, item_total,
  ROUND(item_total_bcy, 2) AS item_total_bcy
FROM report_sales_order_lines ORDER BY item_total_bcy DESC LIMIT 5`,
  },
];

function table(rows: Array<Record<string, SqlValue>>): string {
  if (rows.length === 0) return '  (no rows)\n';
  const cols = Object.keys(rows[0]!);
  const cells = rows.map((r) => cols.map((c) => (r[c] === null || r[c] === undefined ? '' : String(r[c]))));
  const widths = cols.map((c, i) => Math.min(40, Math.max(c.length, ...cells.map((row) => row[i]!.length))));
  const line = (vals: string[]): string => '  ' + vals.map((v, i) => v.slice(0, 40).padEnd(widths[i]!)).join('  ');
  return [line(cols), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n') + '\n';
}

export async function runExampleQueries(warehouse: Warehouse): Promise<string> {
  let out = '';
  for (const q of EXAMPLE_QUERIES) {
    const result = await warehouse.db.executeQuery<Record<string, SqlValue>>(CompiledQuery.raw(q.sql));
    out += `\n${q.title}:\n${q.sql
      .split('\n')
      .map((l) => `  ${l}`)
      .join('\n')}\n\n${table(result.rows)}`;
  }
  return out;
}

/** How much faster the demo's sandbox clock runs than the wall's. */
export const DEMO_TIME_SCALE = 60;

/**
 * The demo's summary in the user's time: svcsync ran on the sandbox's clock (60 times faster,
 * from a fixed day), so the run's own instants would give a 2-second run as 2 minutes and a
 * quota reset on a day long past. The run takes what the wall clock measured, and an instant
 * of the sandbox (a quota reset) is told as the wall-clock instant it comes at.
 */
export function demoTime(at: { sandboxNow: number; wallNow: number }, wallElapsedMs: number): SummaryTime {
  return {
    elapsedMs: wallElapsedMs,
    instant: (iso) => {
      const wall = at.wallNow + (Date.parse(iso) - at.sandboxNow) / DEMO_TIME_SCALE;
      return new Date(Math.round(wall / 1000) * 1000).toISOString();
    },
  };
}

export function demoCommand(cli: Cli): Command {
  return new Command('demo')
    .description('start the sandbox in-process, sync it into ./svcsync-demo.db and show what landed (no credentials needed)')
    .option('--db <path>', 'SQLite file to create (replaced if it exists)', './svcsync-demo.db')
    .option('--scale <n>', 'records per stream per organization', (v) => Number.parseInt(v, 10), 20)
    .option('--seed <n>', 'sandbox data seed', (v) => Number.parseInt(v, 10), 42)
    .action(async (flags: { db: string; scale: number; seed: number }) => {
      const started = Date.now();
      const file = resolve(flags.db);
      for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(file + suffix, { force: true });
      // The sandbox's clock runs 60 times faster, and svcsync runs on it: the free plan's
      // per-minute limit is honoured in sandbox time without a long wait in real time.
      const sandbox = await startSandbox({ seed: flags.seed, scale: flags.scale, timeScale: DEMO_TIME_SCALE, plan: 'free' });
      const secrets = new SecretRegistry();
      const logger = createLogger({ level: logLevelFor(cli.global(), undefined), secrets });
      const { signal, stop, dispose } = stopOnSignals(logger);
      const progress = createProgress(logger);
      let warehouse: Warehouse | undefined;
      try {
        const config = parseConfig(
          {
            warehouse: `sqlite:${file}`,
            connections: [{ name: 'demo', accounts_url: sandbox.url, ...sandbox.credentials, plan: 'free' }],
          },
          { env: {}, secrets, source: 'demo configuration' },
        );
        process.stderr.write(
          `svcsync demo: sandbox at ${sandbox.url} ` +
            `(${sandbox.organizations().length} organizations, ${flags.scale} records per stream, free plan), syncing into ${file}\n`,
        );
        warehouse = await openConfiguredWarehouse(config);
        const summary = await runSync({
          config,
          warehouse,
          clock: sandbox.clock,
          logger,
          secrets,
          signal,
          stop,
          progress,
          command: 'demo',
          mode: 'incremental',
        });
        progress.stop();
        const wallNow = Date.now();
        process.stdout.write(renderSummary(summary, demoTime({ sandboxNow: sandbox.clock.now(), wallNow }, wallNow - started)));
        process.stdout.write(
          `  The sandbox's clock runs ${DEMO_TIME_SCALE}× faster than yours: requests stayed within the free plan's ` +
            "per-minute limits in its time, and the data's instants are the sandbox's.\n",
        );
        process.stdout.write(await runExampleQueries(warehouse));
        // Installed, the command is `svcsync`; in a checkout, the script.
        const self = basename(process.argv[1] ?? '') === 'svcsync.js' ? 'node bin/svcsync.js' : 'svcsync';
        process.stdout.write(`\nThe warehouse is ${file}. Try: sqlite3 ${flags.db} '.tables'   or   ${self} schema\n`);
        cli.exit(summary.exitCode);
      } finally {
        progress.stop();
        dispose();
        await warehouse?.close();
        await sandbox.stop();
      }
    });
}

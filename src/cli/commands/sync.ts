import { Command, Option } from 'commander';
import { ConfigError, ExitCode } from '../../core/errors.js';
import { isStreamName } from '../../catalog/index.js';
import { RunStopped, runSync, type SyncSummary } from '../../extractors/sync-run.js';
import type { SyncMode } from '../../extractors/stream-pass.js';
import { parseInstant } from '../../normalize/values.js';
import { createProgress } from '../progress.js';
import { stopOnSignals, loadRuntime, withWarehouse, type Cli, type GlobalOptions } from '../runtime.js';
import { renderSummary } from '../summary.js';
import { jsonOutput } from '../json-output.js';
import { authorizationsOfRun } from '../../scheduler/surface/health.js';
import { recordAuthorization } from '../../state/connection-auth.js';

interface SyncFlags {
  connection?: string;
  org?: string;
  stream?: string[];
  reconcile?: boolean;
  deep?: boolean;
  cycle?: boolean;
  since?: string;
  json?: boolean;
  wait?: boolean;
}

/** Checks --stream values against the catalog so a typo is an error, not an empty run. */
export function checkStreamNames(names: readonly string[] | undefined): void {
  if (!names) return;
  const unknown = names.filter((n) => !isStreamName(n));
  if (unknown.length) {
    throw new ConfigError(`--stream: unknown stream ${unknown.map((u) => `"${u}"`).join(', ')}`, [], {
      hint: 'Use family.stream or stream; `svcsync schema` lists them (e.g. inventory.sales_orders).',
    });
  }
}

function parseSince(since: string | undefined): string | undefined {
  if (since === undefined) return undefined;
  const text = /^\d{4}-\d{2}-\d{2}$/.test(since) ? `${since}T00:00:00Z` : since;
  const ms = parseInstant(text);
  if (ms === null)
    throw new ConfigError(`--since: "${since}" is not a date`, [], {
      hint: 'Use yyyy-mm-dd or an ISO-8601 instant such as 2026-01-31T00:00:00Z.',
    });
  return new Date(ms).toISOString();
}

export async function runSyncCommand(global: GlobalOptions, flags: SyncFlags, mode: SyncMode, command: string): Promise<number> {
  checkStreamNames(flags.stream);
  const since = parseSince(flags.since);
  const rt = loadRuntime(global);
  const { signal, stop, stopped, dispose } = stopOnSignals(rt.logger);
  const progress = createProgress(rt.logger, Boolean(process.stderr.isTTY) && !flags.json);
  let summary: SyncSummary;
  try {
    summary = await withWarehouse(rt, async (warehouse) => {
      const run = await runSync({
        config: rt.config,
        warehouse,
        clock: rt.clock,
        logger: rt.logger,
        secrets: rt.secrets,
        signal,
        stop,
        progress,
        command,
        mode,
        since,
        deep: flags.deep ?? false,
        wholeReadCycle: flags.cycle ?? false,
        connection: flags.connection,
        organization: flags.org,
        streams: flags.stream,
        waitForLease: flags.wait ?? false,
      });
      // A run from cron is the only one a laptop user has: `svcsync status` shows its verdict on each connection, as a daemon's.
      const asked = rt.config.connections.map((c) => c.name).filter((name) => !flags.connection || name === flags.connection);
      for (const seen of authorizationsOfRun(run, asked, rt.clock.now()))
        await recordAuthorization(warehouse.db, seen).catch((err: unknown) =>
          rt.logger.warn({ err, connection: seen.connection }, "could not record the connection's authorization result"),
        );
      return run;
    });
  } catch (error) {
    if (!stopped()) throw error;
    progress.stop();
    process.stderr.write(
      `svcsync: ${command} stopped. Every committed page is kept; run the same command again to continue where it stopped.\n`,
    );
    // What the run committed before it stopped, as a finished run reports it.
    if (error instanceof RunStopped) process.stdout.write(flags.json ? jsonOutput(error.summary) : renderSummary(error.summary));
    return ExitCode.partial;
  } finally {
    progress.stop();
    dispose();
  }
  process.stdout.write(flags.json ? jsonOutput(summary) : renderSummary(summary));
  return summary.exitCode;
}

const collect = (value: string, previous: string[] = []): string[] => [
  ...previous,
  ...value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean),
];

/** The options that narrow a run, shared by sync and backfill. */
function scoped(command: Command): Command {
  return command
    .option('--connection <name>', 'only this connection')
    .option('--org <id>', 'only this organization')
    .addOption(new Option('--stream <names>', 'only these streams (family.stream or stream; repeat or comma-separate)').argParser(collect))
    .option('--json', 'print the run summary as JSON')
    .option('--wait', 'wait for an organization another svcsync process is syncing, instead of skipping it');
}

export function syncCommands(cli: Cli): Command[] {
  const sync = scoped(new Command('sync').description('run one incremental sync of everything configured (or the parts named)'))
    .option('--reconcile', 're-read every list of incremental streams and mark the records the API no longer has as deleted')
    .option(
      '--deep',
      "with --reconcile (implied): re-read every parent's child lists too, not only when sync.reconcile_children_every_days is due",
    )
    .option(
      '--cycle',
      "trees read whole (projects and their tasks) re-read a share of their parents' child lists a day, as the daemon does " +
        '(sync.whole_read_every_days)',
    )
    .action(async (flags: SyncFlags) => {
      const reconcile = flags.reconcile === true || flags.deep === true;
      let command = reconcile ? 'sync --reconcile' : 'sync';
      if (flags.deep) command += ' --deep';
      if (flags.cycle) command += ' --cycle';
      cli.exit(await runSyncCommand(cli.global(), flags, reconcile ? 'reconcile' : 'incremental', command));
    });
  const backfill = scoped(new Command('backfill').description('re-read history ignoring cursors; resumable, it continues where it stopped'))
    .option('--since <date>', 'only records changed since this date (yyyy-mm-dd or ISO instant)')
    .action(async (flags: SyncFlags) => {
      cli.exit(await runSyncCommand(cli.global(), flags, 'backfill', 'backfill'));
    });
  return [sync, backfill];
}

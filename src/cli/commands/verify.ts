import { Command, InvalidArgumentError, Option } from 'commander';
import { ExitCode } from '../../core/errors.js';
import { runVerify, type StreamVerification, type VerifySummary } from '../../extractors/verify.js';
import { stopOnSignals, loadRuntime, withWarehouse, type Cli } from '../runtime.js';
import { checkStreamNames } from './sync.js';
import { jsonOutput } from '../json-output.js';

interface VerifyFlags {
  connection?: string;
  org?: string;
  stream?: string[];
  maxRequests?: number;
  children?: boolean;
  sample?: number;
  json?: boolean;
}

const collect = (value: string, previous: string[] = []): string[] => [
  ...previous,
  ...value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean),
];

function positiveInteger(what: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1)
      throw new InvalidArgumentError(`expected a positive whole number of ${what}.`);
    return n;
  };
}

const count = (n: number | null): string => (n === null ? '—' : String(n));

function examples(label: string, total: number | null, ids: readonly string[]): string | null {
  if (!total) return null;
  const more = total > ids.length ? `, … ${total - ids.length} more` : '';
  return `      ${label} (${total}): ${ids.join(', ')}${more}`;
}

const RESULT: Record<number, string> = {
  0: 'the warehouse agrees with the API for everything checked',
  1: 'failed',
  2: 'configuration error',
  3: 'authorization error',
};

/** What a partial run (exit 4) found: differences first, then lists not read through, else failed checks. */
function partialResult(summary: VerifySummary): string {
  if (summary.streams.some((s) => s.status === 'differ')) return 'differences found';
  if (summary.streams.some((s) => s.status === 'incomplete') || summary.connectionFailures.some((f) => f.kind === 'incomplete'))
    return 'not everything was checked';
  return 'some checks failed';
}

/** The report as a table per organization, with up to ten example ids per list. */
export function renderVerify(summary: VerifySummary): string {
  const lines: string[] = [`svcsync verify ${summary.runId}: the ids each list returns against the warehouse's live rows`];
  const groups = new Map<string, StreamVerification[]>();
  for (const s of summary.streams) {
    const key = `${s.connection} / ${s.organizationId}`;
    groups.set(key, [...(groups.get(key) ?? []), s]);
  }
  const width = Math.max(30, ...summary.streams.map((s) => s.stream.length));
  for (const [org, streams] of groups) {
    lines.push('', org);
    lines.push(
      `  ${'stream'.padEnd(width)}  ${'status'.padEnd(10)} ${'api'.padStart(8)} ${'warehouse'.padStart(9)} ` +
        `${'missing'.padStart(8)} ${'extra'.padStart(8)} ${'requests'.padStart(8)}`,
    );
    for (const s of streams) {
      lines.push(
        `  ${s.stream.padEnd(width)}  ${s.status.padEnd(10)} ${count(s.apiCount).padStart(8)} ${count(s.warehouseCount).padStart(9)} ` +
          `${count(s.missingCount).padStart(8)} ${count(s.extraCount).padStart(8)} ${String(s.requests).padStart(8)}`,
      );
      for (const line of [examples('missing', s.missingCount, s.missing), examples('extra', s.extraCount, s.extra)])
        if (line) lines.push(line);
      if (s.sampledParents !== undefined) lines.push(`      the child lists of ${s.sampledParents} sampled parents`);
      if (s.error) lines.push(`      ${s.error.split('\n').join('\n      ')}`);
    }
  }
  for (const f of summary.connectionFailures) lines.push('', `connection ${f.connection}: ${f.error.split('\n').join('\n  ')}`);
  if (summary.streams.length === 0 && summary.connectionFailures.length === 0) lines.push('', 'No stream was checked.');
  if (summary.skipped.length) {
    lines.push('', 'Not checked (read per parent record, no list of their own; they do not change the exit code, --children checks them):');
    for (const s of summary.skipped) lines.push(`  ${s.stream}: ${s.reason}`);
  }
  const tally = (status: string): number => summary.streams.filter((s) => s.status === status).length;
  lines.push(
    '',
    `Streams: ${tally('agree')} agree, ${tally('differ')} differ, ${tally('incomplete')} incomplete, ${tally('failed')} failed.`,
  );
  lines.push(
    `Requests: ${summary.requests}${summary.maxRequests === null ? '' : ` (at most ${summary.maxRequests})`}, organization lists included.`,
  );
  if (summary.streams.some((s) => s.status === 'differ')) {
    lines.push('missing: the API lists the record and the warehouse has no live row; extra: a live row the API no longer lists.');
    lines.push(
      '`svcsync sync --reconcile` re-reads every list and heals both (child streams: `sync --reconcile --deep`, ' +
        "which re-reads every parent's); run verify again afterwards.",
    );
  }
  if (summary.streams.some((s) => s.status === 'incomplete'))
    lines.push('incomplete: not every page was read (request bound or daily quota); nothing is known about those lists.');
  const result = summary.exitCode === ExitCode.partial ? partialResult(summary) : (RESULT[summary.exitCode] ?? 'failed');
  lines.push(`Result: ${result} (exit ${summary.exitCode})`);
  return `${lines.join('\n')}\n`;
}

export function verifyCommand(cli: Cli): Command {
  return new Command('verify')
    .description("prove the warehouse complete: compare every list's ids with the live rows (reads list pages only, writes no data)")
    .option('--connection <name>', 'only this connection')
    .option('--org <id>', 'only this organization')
    .addOption(new Option('--stream <names>', 'only these streams (family.stream or stream; repeat or comma-separate)').argParser(collect))
    .addOption(
      new Option('--max-requests <n>', 'send at most this many API requests; lists not read to the end are reported incomplete').argParser(
        positiveInteger('requests'),
      ),
    )
    .option('--children', "also check child streams (no list of their own) by reading every parent's child list")
    .addOption(new Option('--sample <n>', 'with --children: read the child lists of n parents only').argParser(positiveInteger('parents')))
    .option('--json', 'print the report as JSON')
    .action(async (flags: VerifyFlags) => {
      checkStreamNames(flags.stream);
      const rt = loadRuntime(cli.global());
      const { signal, stop, stopped, dispose } = stopOnSignals(rt.logger);
      let summary: VerifySummary;
      try {
        summary = await withWarehouse(rt, (warehouse) =>
          runVerify({
            config: rt.config,
            warehouse,
            clock: rt.clock,
            logger: rt.logger,
            secrets: rt.secrets,
            signal,
            stop,
            connection: flags.connection,
            organization: flags.org,
            streams: flags.stream,
            maxRequests: flags.maxRequests,
            children: flags.children,
            sample: flags.sample,
          }),
        );
      } catch (error) {
        if (!stopped()) throw error;
        process.stderr.write('svcsync: verify stopped; the lists it finished are in _svcsync_verify. Nothing else was written.\n');
        cli.exit(ExitCode.partial);
        return;
      } finally {
        dispose();
      }
      process.stdout.write(flags.json ? jsonOutput(summary) : renderVerify(summary));
      cli.exit(summary.exitCode);
    });
}

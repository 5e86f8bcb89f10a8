import { relative, resolve } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { CONFIG_ENV } from '../../config/locate.js';
import { REFERENCE_RECORDS } from '../../scheduler/planning/estimate.js';
import { loadPlanOrganizations, planOrganization } from '../../scheduler/planning/plan.js';
import { renderPlan } from '../../scheduler/planning/plan-render.js';
import { fitConnection } from '../../scheduler/planning/schedule-fit.js';
import { fitFreshness, renderFreshnessFit } from '../../scheduler/planning/freshness-fit.js';
import { renderFitConfig, renderFitCron, renderFitSummary } from '../../scheduler/planning/schedule-fit-render.js';
import { jsonOutput } from '../json-output.js';
import { loadRuntime, withWarehouseToRead, type Cli } from '../runtime.js';

interface PlanFlags {
  backfill?: boolean;
  json?: boolean;
  fit?: boolean;
  records?: number;
  cronCommand?: string;
}

const wholeNumber = (text: string): number => {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number');
  return n;
};

/** How a cron line starts svcsync: from this directory, with this command file and configuration. */
function defaultCronCommand(config: string | undefined): string {
  const cwd = process.cwd();
  const bin = process.argv[1] ? relative(cwd, resolve(process.argv[1])) : 'bin/svcsync.js';
  const file = bin.startsWith('..') ? resolve(process.argv[1]!) : bin;
  // cron's environment has no SVCSYNC_CONFIG: a file it named is named on the line.
  const named = config ?? process.env[CONFIG_ENV];
  const cfg = named ? ` --config ${named}` : '';
  return `cd ${cwd} && node ${file}${cfg}`;
}

export function planCommand(cli: Cli): Command {
  return new Command('plan')
    .description(
      "print what the daemon's schedule costs per organization on its busiest quota day, against its budget; " +
        '--fit proposes schedules that fit (no API calls)',
    )
    .option('--backfill', 'include a daemon backfill in the plan')
    .option('--fit', 'propose per-stream schedules that fit every organization, as svcsync.yaml schedules and as cron lines')
    .option(
      '--records <n>',
      `records a list is assumed to hold where the warehouse has not synced it (default ${REFERENCE_RECORDS})`,
      wholeNumber,
    )
    .option('--cron-command <text>', 'how the cron lines start svcsync (default: cd to this directory and run this svcsync)')
    .option('--json', 'as JSON')
    .action(async (flags: PlanFlags) => {
      const global = cli.global();
      const rt = loadRuntime(global);
      const referenceRecords = flags.records ?? REFERENCE_RECORDS;
      const now = rt.clock.now();
      // Planning reads the warehouse and changes nothing in it: no file, table or migration is made.
      const orgs = await withWarehouseToRead(rt, 'plan', (w) => loadPlanOrganizations(rt.config, w, { referenceRecords, now }));
      if (!flags.fit) {
        const plans = orgs.map((o) => planOrganization(rt.config, o, now, { backfill: flags.backfill }));
        process.stdout.write(flags.json ? jsonOutput({ organizations: plans }) : renderPlan(plans, referenceRecords));
        return;
      }
      const fits = rt.config.connections.map((c) =>
        fitConnection(
          rt.config,
          c.name,
          orgs.filter((o) => o.connection === c.name),
          now,
        ),
      );
      const cron = renderFitCron(fits, { command: flags.cronCommand ?? defaultCronCommand(global.config) });
      const fresh = rt.config.daemon.freshness.enabled ? orgs.map((o) => fitFreshness(rt.config, o, now)) : [];
      if (flags.json) {
        process.stdout.write(jsonOutput({ connections: fits, cron, freshness: fresh }));
        return;
      }
      if (fresh.length > 0) process.stdout.write(renderFreshnessFit(fresh) + '\n');
      const unknown = orgs.filter((o) => o.reference);
      process.stdout.write(
        [
          "Schedules that fit each organization's daily budget",
          ...(unknown.length
            ? [
                `No organization of ${[...new Set(unknown.map((o) => o.connection))].join(', ')} has been synced yet: ` +
                  `planned for lists of ${referenceRecords} records each (--records N for another size; ` +
                  'run `svcsync sync` once, then plan again, for your own).',
              ]
            : []),
          '',
          renderFitSummary(fits, rt.config.daemon.budget_safety, referenceRecords),
          '# For svcsync daemon: these schedules go under each connection in svcsync.yaml',
          renderFitConfig(fits),
          '# For cron (crontab -e): the same schedules as single syncs',
          ...cron,
          '',
        ].join('\n'),
      );
    });
}

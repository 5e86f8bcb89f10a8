import { Command } from 'commander';
import { migrateToLatest } from '../../loaders/migrate.js';
import { planNextDay, renderPlan } from '../../scheduler/plan.js';
import { loadRuntime, withWarehouse, type Cli } from '../runtime.js';
import { jsonOutput } from '../json-output.js';

export function planCommand(cli: Cli): Command {
  return new Command('plan')
    .description("print what the daemon's schedule will cost per organization on the next quota day, against its budget (no API calls)")
    .option('--backfill', 'include a daemon backfill in the plan')
    .option('--json', 'as JSON')
    .action(async (flags: { backfill?: boolean; json?: boolean }) => {
      const rt = loadRuntime(cli.global());
      const plans = await withWarehouse(rt, async (w) => {
        await migrateToLatest(w);
        return planNextDay(rt.config, w, rt.clock.now(), { backfill: flags.backfill });
      });
      process.stdout.write(flags.json ? jsonOutput({ organizations: plans }) : renderPlan(plans));
    });
}

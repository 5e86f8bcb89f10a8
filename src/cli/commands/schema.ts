import { Command, Option } from 'commander';
import { CATALOG, renderDictionary, tableDefinitions, type Dialect } from '../../catalog/index.js';
import { migrateToLatest, migrationStatus } from '../../loaders/migrate.js';
import { loadRuntime, withWarehouse, type Cli } from '../runtime.js';

export function schemaCommand(): Command {
  return new Command('schema')
    .description('print the data dictionary: every table and column, its type and the API field it comes from')
    .option('--json', 'as JSON')
    .addOption(new Option('--dialect <dialect>', 'column types for this warehouse').choices(['sqlite', 'postgres']).default('sqlite'))
    .action((flags: { json?: boolean; dialect: Dialect }) => {
      process.stdout.write(renderDictionary(tableDefinitions(CATALOG), flags.dialect, flags.json ? 'json' : 'text'));
      if (!flags.json) process.stdout.write('\n');
    });
}

export function migrateCommand(cli: Cli): Command {
  return new Command('migrate')
    .description('create or upgrade the warehouse tables (sync does this by itself)')
    .action(async () => {
      const rt = loadRuntime(cli.global());
      await withWarehouse(rt.config.warehouse, async (w) => {
        const report = await migrateToLatest(w);
        const status = await migrationStatus(w);
        process.stdout.write(`${w.displayUrl}: ${report.applied.length ? `applied ${report.applied.join(', ')}` : 'already up to date'} (${status.length} migrations)\n`);
      });
    });
}

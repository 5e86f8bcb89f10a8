import { writeFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { CompiledQuery } from 'kysely';
import { renderDbtSources, type DbtPlacement } from '../../catalog/dbt.js';
import { historyTableDefinitions } from '../../catalog/history.js';
import { CATALOG, renderDictionary, tableDefinitions, type Dialect } from '../../catalog/index.js';
import { viewDefinitions } from '../../catalog/views.js';
import { existingHistoryTables } from '../../loaders/derived/ensure-history.js';
import type { Warehouse } from '../../loaders/warehouse.js';
import { migrateToLatest, migrationStatus, type MigrationReport } from '../../loaders/migrate.js';
import { createReadonlyRole, readonlyRoleHint, sqliteHasNoRoles, validateRoleName } from '../../loaders/readonly-role.js';
import { svcsyncVersion } from '../../core/version.js';
import { jsonOutput } from '../json-output.js';
import { loadRuntime, withWarehouse, type Cli } from '../runtime.js';
import { collectDrift, renderDrift } from './drift.js';

export function schemaCommand(cli: Cli): Command {
  return new Command('schema')
    .description('print the data dictionary: every table, view and column, its type, the API field it comes from and what it means')
    .option('--json', 'as JSON')
    .option('--drift', 'instead, the fields the API sent that the catalog does not know (reads the warehouse: needs the config)')
    .addOption(new Option('--dialect <dialect>', 'column types for this warehouse').choices(['sqlite', 'postgres']).default('sqlite'))
    .option(
      '--dbt [file]',
      'instead, a dbt sources file for the configured warehouse (its schemas and types), to stdout or to FILE (needs the config)',
    )
    .action(async (flags: { json?: boolean; drift?: boolean; dialect: Dialect; dbt?: string | boolean }) => {
      if (flags.dbt !== undefined) {
        const rt = loadRuntime(cli.global());
        const { placement, history } = await withWarehouse(rt, async (w) => ({
          placement: await dbtPlacement(w),
          history: new Set(await existingHistoryTables(w.db, w.dialect, CATALOG)),
        }));
        const text = renderDbtSources(tableDefinitions(CATALOG), viewDefinitions(CATALOG), placement, {
          history: historyTableDefinitions(CATALOG).filter((h) => history.has(h.name)),
        });
        if (typeof flags.dbt === 'string') {
          writeFileSync(flags.dbt, text);
          process.stderr.write(`wrote ${flags.dbt}: dbt sources for ${placement.dialect} schema ${placement.schema}\n`);
        } else process.stdout.write(text);
        return;
      }
      if (flags.drift) {
        const rt = loadRuntime(cli.global());
        const fields = await withWarehouse(rt, collectDrift);
        process.stdout.write(flags.json ? jsonOutput({ fields }) : renderDrift(fields));
        return;
      }
      process.stdout.write(
        renderDictionary(
          tableDefinitions(CATALOG),
          flags.dialect,
          flags.json ? 'json' : 'text',
          viewDefinitions(CATALOG),
          { version: svcsyncVersion() },
          historyTableDefinitions(CATALOG),
        ),
      );
      if (!flags.json) process.stdout.write('\n');
    });
}

/** Where the configured warehouse keeps its tables and views, as dbt names them. */
async function dbtPlacement(w: Warehouse): Promise<DbtPlacement> {
  if (w.dialect === 'sqlite' || w.schemas === undefined) return { dialect: 'sqlite', schema: 'main', viewsSchema: 'main' };
  const r = await w.db.executeQuery<{ database: string }>(CompiledQuery.raw('SELECT current_database() AS database'));
  return { dialect: 'postgres', database: r.rows[0]!.database, schema: w.schemas.tables, viewsSchema: w.schemas.views };
}

/** What `migrate` says of the views and the dictionary (src/loaders/derived/). */
const DERIVED: Record<MigrationReport['derived'], string> = {
  applied: 'rebuilt from the catalog',
  current: 'current',
  newer: 'left as a newer svcsync made them',
};

export function migrateCommand(cli: Cli): Command {
  return new Command('migrate')
    .description('create or upgrade the warehouse tables, views and data dictionary (sync does this by itself)')
    .option(
      '--create-readonly-role <name>',
      'Postgres: also create a NOLOGIN role that may only read the warehouse (or re-apply its grants); see docs/bi.md',
    )
    .action(async (flags: { createReadonlyRole?: string }) => {
      const role = flags.createReadonlyRole === undefined ? undefined : validateRoleName(flags.createReadonlyRole);
      const rt = loadRuntime(cli.global());
      if (role !== undefined && rt.config.warehouse.url.startsWith('sqlite:')) throw sqliteHasNoRoles(rt.config.warehouse.url);
      await withWarehouse(rt, async (w) => {
        const report = await migrateToLatest(w);
        const status = await migrationStatus(w);
        const applied = report.applied.length ? `applied ${report.applied.join(', ')}` : 'already up to date';
        process.stdout.write(
          `${w.displayUrl}: ${applied} (${status.length} migrations); views and dictionary ${DERIVED[report.derived]}\n`,
        );
        if (role === undefined) return;
        const result = await createReadonlyRole(w, role);
        const what = result.created ? 'created' : 'exists; grants re-applied';
        const on = result.viewsSchema === undefined ? `schema ${result.schema}` : `schemas ${result.schema}, ${result.viewsSchema}`;
        process.stdout.write(`read-only role ${result.role} (${what}) on ${on}:\n`);
        for (const statement of result.statements) process.stdout.write(`  ${statement};\n`);
        process.stdout.write(`${readonlyRoleHint(result.role, result)}\n`);
      });
    });
}

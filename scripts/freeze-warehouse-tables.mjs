#!/usr/bin/env node
// Prints a migration that creates the catalog's tables that no earlier migration creates
// (a new stream's table and its child tables); the tables already frozen are left out.
// Usage: npm run build && node scripts/freeze-warehouse-tables.mjs "what changed" > migrations/<timestamp>-<name>.ts
// then list it in migrations/index.ts. For a change to existing tables, write an ALTER
// migration by hand instead; test/loaders/warehouse-schema.test.ts shows what differs.
import * as prettier from 'prettier';
import { MIGRATIONS } from '../dist/migrations/index.js';
import { CATALOG, tableDefinitions } from '../dist/src/catalog/index.js';
import { freezeTables, missingTables, renderTablesMigration, tablesFrozenIn } from '../dist/src/loaders/frozen-schema.js';

const missing = missingTables(tableDefinitions(CATALOG), tablesFrozenIn(MIGRATIONS));
if (missing.length === 0) {
  process.stderr.write(
    'Every catalog table is created by an earlier migration: nothing to freeze (delete the empty file the output went to).\n' +
      'A changed table needs an ALTER migration written by hand; test/loaders/warehouse-schema.test.ts shows what differs.\n',
  );
  process.exit(1);
}
const names = missing.map((t) => t.name).join(', ');
process.stderr.write(`Freezing ${missing.length} table(s) no earlier migration creates: ${names}\n`);
const comment = process.argv[2] ?? `Tables new in the catalog: ${names}.`;
const text = renderTablesMigration(freezeTables(missing), comment);
// Formatted as `npm run lint` expects a file in migrations/ to be, with the repository's Prettier config.
const options = await prettier.resolveConfig(new URL('../migrations/index.ts', import.meta.url));
process.stdout.write(await prettier.format(text, { ...options, parser: 'typescript' }));

#!/usr/bin/env node
// Prints a migration that creates the catalog's tables as they stand now.
// Usage: npm run build && node scripts/freeze-warehouse-tables.mjs "what changed" > migrations/<timestamp>-<name>.ts
// then list it in migrations/index.ts. For a change to existing tables, write an ALTER
// migration by hand instead; test/loaders/warehouse-schema.test.ts shows what differs.
import { CATALOG, tableDefinitions } from '../dist/src/catalog/index.js';
import { freezeTables, renderTablesMigration } from '../dist/src/loaders/frozen-schema.js';

const comment = process.argv[2] ?? 'The warehouse tables: one per stream, one per array of objects inside a record.';
process.stdout.write(renderTablesMigration(freezeTables(tableDefinitions(CATALOG)), comment));

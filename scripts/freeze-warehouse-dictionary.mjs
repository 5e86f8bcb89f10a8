#!/usr/bin/env node
// Prints a migration that (re)writes the warehouse dictionary from the catalog as it stands:
// `_svcsync_tables`, `_svcsync_columns`, and on Postgres the comments and the child tables'
// foreign keys. Run it after any catalog change that test/loaders/warehouse-dictionary.test.ts
// reports (descriptions, references, new tables or columns, after their own migrations).
// Usage: npm run build && node scripts/freeze-warehouse-dictionary.mjs "what changed" > migrations/<timestamp>-<name>.ts
// then list it in migrations/index.ts.
import * as prettier from 'prettier';
import { CATALOG, relationships, tableDefinitions } from '../dist/src/catalog/index.js';
import { freezeDictionary, renderDictionaryMigration } from '../dist/src/loaders/frozen-dictionary.js';

const comment = process.argv[2] ?? 'The warehouse dictionary as the catalog describes it.';
const text = renderDictionaryMigration(freezeDictionary(tableDefinitions(CATALOG), relationships(CATALOG)), comment);
// Formatted as `npm run lint` expects a file in migrations/ to be, with the repository's Prettier config.
const options = await prettier.resolveConfig(new URL('../migrations/index.ts', import.meta.url));
process.stdout.write(await prettier.format(text, { ...options, parser: 'typescript' }));

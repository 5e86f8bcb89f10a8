#!/usr/bin/env node
// Prints a migration that (re)creates every view the catalog generates (src/catalog/views.ts):
// the `_live` view of each table and the modelled `report_` views. The previous views migration's
// views are dropped first. Run it whenever test/loaders/frozen-views.test.ts says the views changed
// (a column added to a table, a stream added), and list the file in migrations/index.ts.
// Usage: npm run build && node scripts/freeze-views.mjs "what changed" > migrations/<timestamp>-views.ts
import * as prettier from 'prettier';
import { MIGRATIONS } from '../dist/migrations/index.js';
import { CATALOG } from '../dist/src/catalog/index.js';
import { viewDefinitions } from '../dist/src/catalog/views.js';
import { freezeViews, renderViewsMigration, viewsFrozenIn } from '../dist/src/loaders/frozen-views.js';

const previous = viewsFrozenIn(MIGRATIONS);
const views = freezeViews(viewDefinitions(CATALOG));
if (previous && JSON.stringify(previous.views) === JSON.stringify(views)) {
  process.stderr.write(`The views of ${previous.migration} are what the catalog generates: nothing to freeze.\n`);
  process.exit(1);
}
const replaces = previous ? previous.views.map((v) => v.name) : [];
process.stderr.write(`Freezing ${views.length} view(s)${previous ? `, replacing those of ${previous.migration}` : ''}\n`);
const comment = process.argv[2] ?? 'The views of the catalog: a `_live` view per table and the modelled `report_` views.';
const text = renderViewsMigration(views, replaces, comment);
// Formatted as `npm run lint` expects a file in migrations/ to be, with the repository's Prettier config.
const options = await prettier.resolveConfig(new URL('../migrations/index.ts', import.meta.url));
process.stdout.write(await prettier.format(text, { ...options, parser: 'typescript' }));

#!/usr/bin/env node
// Regenerates the table reference at the end of docs/warehouse.md from the catalog.
// Usage: npm run build && node scripts/write-warehouse-doc.mjs
import { readFileSync, writeFileSync } from 'node:fs';
import { CATALOG, renderWarehouseMarkdown, tableDefinitions } from '../dist/src/catalog/index.js';
import { historyTableDefinitions } from '../dist/src/catalog/history.js';
import { viewDefinitions } from '../dist/src/catalog/views.js';

const path = new URL('../docs/warehouse.md', import.meta.url);
const MARKER = '<!-- Everything below is generated';
const text = readFileSync(path, 'utf8');
const at = text.indexOf(MARKER);
if (at < 0) throw new Error('docs/warehouse.md has lost its generated-section marker');
const head = text.slice(0, text.indexOf('\n', at) + 1);
writeFileSync(
  path,
  `${head}\n${renderWarehouseMarkdown(tableDefinitions(CATALOG), viewDefinitions(CATALOG), historyTableDefinitions(CATALOG))}`,
);

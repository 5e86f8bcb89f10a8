#!/usr/bin/env node
// Copies the files of src/ that are not TypeScript (the status page's script and style) to the same
// place under dist/src/, where the built code reads them beside its modules: tsc emits only what it
// compiles. Run by `npm run build`, after tsc.
import { cpSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const from = join(root, 'src');
const to = join(root, 'dist', 'src');

for (const entry of readdirSync(from, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || entry.name.endsWith('.ts')) continue;
  const path = join(entry.parentPath, entry.name);
  cpSync(path, join(to, relative(from, path)));
}

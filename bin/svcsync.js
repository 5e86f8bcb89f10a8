#!/usr/bin/env node
// The compiled CLI lives in dist/ (built by `npm install` through the prepare script).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
const entry = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('svcsync is not built yet: run `npm install` (or `npm run build`) in the svcsync folder first.\n');
  process.exit(1);
}
const { main } = await import(entry.href);
// Exit explicitly: timers left by a finished run (rate-limit windows returning their slots)
// must not hold the process open. Writes to stdout/stderr are synchronous on Linux.
process.exit(await main(process.argv));

#!/usr/bin/env node
// The compiled CLI lives in dist/ (built by `npm install` through the prepare script).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
const entry = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('svcsync is not built yet: run `npm install` (or `npm run build`) in the svcsync folder first.\n');
  process.exit(1);
}
// A reader that stops early (`svcsync schema | head`) closes the pipe: not an error of ours.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error) => {
    if (error.code === 'EPIPE') process.exit(0);
    throw error;
  });
}
const { main } = await import(entry.href);
const code = await main(process.argv);
// Writes to a pipe are asynchronous: wait until both streams have handed everything over
// (`svcsync schema --json | jq` must get the whole document), then exit explicitly so timers
// left by a finished run (rate-limit windows returning their slots) do not hold the process.
await Promise.all([process.stdout, process.stderr].map((s) => new Promise((resolve) => s.write('', resolve))));
process.exit(code);

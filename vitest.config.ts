import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';

const ROOTS = ['test', 'sandbox/test'];

/** Every test file under the roots, as a path from the repository's root. */
function testFiles(): string[] {
  return ROOTS.flatMap((root) =>
    readdirSync(root, { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.test.ts'))
      .map((name) => join(root, name)),
  );
}

/**
 * What makes a test file an integration test: it opens a warehouse (SQLite file or Postgres), starts
 * a process (the CLI from dist/, a Postgres server, a browser), or reads the build. The rest (pure
 * functions, the in-process sandbox, nock) form the unit project: no database, no build, no global
 * setup, so `npm run test:unit` runs it alone in a fraction of the suite's time.
 */
const INTEGRATION =
  /helpers\/(dialects|e2e|cli-process|legacy-warehouse|private-postgres|process-config|commit-cutting-proxy|minimum)\.js|node:child_process|openWarehouse|dist\/|playwright|better-sqlite3|from 'pg'/;

const files = testFiles();
const integration = files.filter((file) => INTEGRATION.test(readFileSync(file, 'utf8')));
const unit = files.filter((file) => !integration.includes(file));
/**
 * Files that patch shared state: nock's interception of node:http, and module mocks. Without
 * isolation another file's copy of the modules they patch wins (requests reach the network, a
 * mocked module is the real one), so they keep a module graph of their own (the `-isolated`
 * projects); the rest share one per worker, which saves importing src, kysely and the sandbox
 * once a file (half the unit project's time, a fifth of the suite's).
 */
const PATCHING = /from 'nock'|vi\.mock\(|from '\.\/helpers\.js'|api\/helpers\.js'/;
const patching = new Set(files.filter((file) => PATCHING.test(readFileSync(file, 'utf8'))));
const shared = (list: string[]): string[] => list.filter((file) => !patching.has(file));
const isolated = (list: string[]): string[] => list.filter((file) => patching.has(file));

export default defineConfig({
  test: {
    // The four-process fleet test (about a minute) times processes coordinating through Postgres on
    // the machine's two cores, so `npm test` runs it alone, after the rest (a second `vitest run`):
    // beside other files its takeovers overran their bound on a loaded machine. The Node 22/24
    // lines skip it (.ci/node-lines sets SVCSYNC_SKIP_FLEET): it tests processes, not the Node line.
    exclude: [...configDefaults.exclude, ...(process.env['SVCSYNC_SKIP_FLEET'] ? ['test/e2e/worker-fleet.test.ts'] : [])],
    environment: 'node',
    fileParallelism: true,
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
    // `npm test` runs every project; `npm run test:unit` (vitest run --project 'unit*') the two unit ones alone.
    projects: [
      { extends: true, test: { name: 'unit', include: shared(unit), isolate: false } },
      { extends: true, test: { name: 'unit-isolated', include: isolated(unit) } },
      // The run's database, and the warehouses migrated once that tests copy (test/helpers/templates.ts).
      {
        extends: true,
        test: {
          name: 'integration',
          include: shared(integration),
          isolate: false,
          globalSetup: ['test/global-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'integration-isolated',
          include: isolated(integration),
          globalSetup: ['test/global-setup.ts'],
        },
      },
    ],
  },
});

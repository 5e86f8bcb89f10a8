import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'sandbox/test/**/*.test.ts'],
    // The four-process fleet test (issue 12, about a minute) runs on the machine's Node in CI; the
    // Node 22/24 lines skip it (.ci/node-lines sets SVCSYNC_SKIP_FLEET): it tests processes
    // coordinating through Postgres, not the Node line, and CI must stay under 30 minutes.
    exclude: [...configDefaults.exclude, ...(process.env['SVCSYNC_SKIP_FLEET'] ? ['test/e2e/worker-fleet.test.ts'] : [])],
    globalSetup: ['test/global-setup.ts'],
    environment: 'node',
    // End-to-end suites share one Postgres database; files run one at a time there.
    fileParallelism: true,
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});

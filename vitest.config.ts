import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The e2e tests spawn the CLI built once here instead of through tsx each time (SEEDLINE_TEST_CLI=tsx to keep tsx).
    globalSetup: ['test/helpers/build-cli.ts'],
    // Each test file's temporary files under a directory of its own, removed after the file.
    setupFiles: ['test/helpers/temp-root.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Postgres and DuckDB tests share one local server; files run in parallel, tests within a file in order.
    fileParallelism: true,
    pool: 'forks',
    // Vitest's default is one worker per core less one: a single worker on 2 cores. Much of an e2e
    // file is spent waiting (on CLI children, Postgres, a sandbox's virtual clock), so two workers
    // there took the whole suite from ~5m50s to ~4m50s; on bigger machines the default stands.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});

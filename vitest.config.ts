import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The e2e tests spawn the CLI built once here instead of through tsx each time (SEEDLINE_TEST_CLI=tsx to keep tsx).
    globalSetup: ['test/helpers/build-cli.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Postgres and DuckDB tests share one local server; files run in parallel, tests within a file in order.
    fileParallelism: true,
    pool: 'forks',
  },
});

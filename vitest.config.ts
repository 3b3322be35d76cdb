import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Postgres and DuckDB tests share one local server; files run in parallel, tests within a file in order.
    fileParallelism: true,
    pool: 'forks',
  },
});

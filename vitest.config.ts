import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { TEST_TIME_LIMITS, timeLimit } from './test/helpers/time-limits.js';

/** One project per kind of test (`npm test` runs all three; `npm run test:unit` and the like run one). */
function project(name: keyof typeof TEST_TIME_LIMITS, extra: { globalSetup?: string[]; isolate?: boolean } = {}) {
  const limit = timeLimit(TEST_TIME_LIMITS[name]);
  return {
    extends: true as const,
    test: { name, include: [`test/${name}/**/*.test.ts`], testTimeout: limit, hookTimeout: limit, ...extra },
  };
}

export default defineConfig({
  test: {
    // Each test file's temporary files under a directory of its own, removed after the file.
    setupFiles: ['test/helpers/temp-root.ts'],
    // Postgres and DuckDB tests share one local server; files run in parallel, tests within a file in order.
    fileParallelism: true,
    pool: 'forks',
    // Vitest's default is one worker per core less one: a single worker on 2 cores. Much of an e2e
    // file is spent waiting (on CLI children, Postgres, a sandbox's virtual clock), so two workers
    // there took the whole suite from ~5m50s to ~4m50s; on bigger machines the default stands.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      // Files share their worker's modules (isolate: false): each file no longer evaluates src/, zod
      // schemas and the manifests again, which took unit and integration from ~213 to ~132 CPU s
      // (126 s to 87 s wall) on 2 cores, e2e from ~299 to ~274. A test must not rely on module state
      // another file may have left (a config warning is logged once per process; secrets seen stay redacted).
      project('unit', { isolate: false }),
      project('integration', { isolate: false }),
      // The e2e tests spawn the CLI built once here instead of through tsx each time (SEEDLINE_TEST_CLI=tsx to keep tsx).
      project('e2e', { globalSetup: ['test/helpers/build-cli.ts'], isolate: false }),
    ],
  },
});

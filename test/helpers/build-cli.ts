import { rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import type { TestProject } from 'vitest/node';

const ROOT = resolve(import.meta.dirname, '../..');
const BANNER =
  "import { createRequire as seedlineCreateRequire } from 'node:module'; const require = seedlineCreateRequire(import.meta.url);";

declare module 'vitest' {
  export interface ProvidedContext {
    /**
     * The `seedline` CLI entry point the e2e tests spawn with plain `node`: src/ and schemas/
     * bundled once per test run by esbuild, or '' to spawn `node --import tsx src/cli/main.ts`
     * (`SEEDLINE_TEST_CLI=tsx`, and in watch mode, where src/ changes while the run lasts).
     */
    cliEntry: string;
  }
}

/**
 * Global setup of the e2e project, which starts the CLI a few hundred times. A tsx start costs
 * about a second of CPU more than compiled code, and even compiled, file by file, a start spends
 * ~0.25 s in Node's module loader resolving and reading some 700 files (ours, kysely's, zod's).
 * One esbuild bundle (code split at each command's `await import()`) takes ~0.6 s to build and
 * cuts a short sync's CPU by ~16%.
 *
 * Kept outside the bundle: libduckdb's native bindings, pg (its optional pg-native), pino (its
 * worker-thread transports resolve files of their own) and node-cron (it finds a file of its own
 * from `import.meta.url`). The output goes to
 * `.e2e-build-cli-<pid>/` in the repository (git-ignored, removed at teardown), so packageRoot(),
 * the stream manifests and node_modules resolve as they do from src/; every chunk lands in
 * src/engine/, beside the page-shaping worker's entry, which the pool finds "beside this module".
 * The banner gives the bundled CommonJS packages the `require` an ES module lacks.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // In watch mode the setup runs once while src/ changes under it: keep tsx, which reads src/ at each start.
  if (process.env.SEEDLINE_TEST_CLI === 'tsx' || project.vitest.config.watch) {
    project.provide('cliEntry', '');
    return async () => undefined;
  }
  const outdir = join(ROOT, `.e2e-build-cli-${process.pid}`);
  await build({
    entryPoints: [join(ROOT, 'src/cli/main.ts'), join(ROOT, 'src/engine/batch/page-shaping-worker.ts')],
    outdir,
    outbase: ROOT,
    bundle: true,
    splitting: true,
    chunkNames: 'src/engine/[name]-[hash]',
    external: ['@duckdb/*', 'pg', 'pg-copy-streams', 'pg-native', 'pino', 'node-cron'],
    banner: { js: BANNER },
    format: 'esm',
    platform: 'node',
    target: 'node20',
    tsconfig: join(ROOT, 'tsconfig.json'),
    logLevel: 'warning',
  });
  project.provide('cliEntry', join(outdir, 'src/cli/main.js'));
  return async () => {
    await rm(outdir, { recursive: true, force: true });
  };
}

import { readdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import type { TestProject } from 'vitest/node';

const ROOT = resolve(import.meta.dirname, '../..');

declare module 'vitest' {
  export interface ProvidedContext {
    /**
     * The `seedline` CLI entry point the e2e tests spawn with plain `node`: src/ and schemas/
     * transformed once per test run, file by file, by esbuild (the transform tsx applies on every
     * start), or '' to spawn `node --import tsx src/cli/main.ts` (`SEEDLINE_TEST_CLI=tsx`, and in
     * watch mode, where src/ changes while the run lasts).
     */
    cliEntry: string;
  }
}

async function typescriptFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => join(e.parentPath, e.name));
}

/**
 * Global setup: a tsx start of the CLI costs about a second of CPU more than a start of the same
 * code already transformed (hooks in a loader thread, a transform-cache lookup per module), and the
 * e2e tests start the CLI a few hundred times. The output goes to `.e2e-build-cli-<pid>/` in the
 * repository (git-ignored, removed at teardown), so packageRoot(), the stream manifests and
 * node_modules resolve as they do from src/.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // In watch mode the setup runs once while src/ changes under it: keep tsx, which reads src/ at each start.
  if (process.env.SEEDLINE_TEST_CLI === 'tsx' || project.vitest.config.watch) {
    project.provide('cliEntry', '');
    return async () => undefined;
  }
  const outdir = join(ROOT, `.e2e-build-cli-${process.pid}`);
  const entryPoints = [
    ...(await typescriptFiles(join(ROOT, 'src'))),
    ...(await typescriptFiles(join(ROOT, 'schemas'))),
  ];
  await build({
    entryPoints,
    outdir,
    outbase: ROOT,
    bundle: false,
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

import { spawn } from 'node:child_process';
import { cp, mkdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempWorkspace } from '../helpers/cli.js';

const ROOT = resolve(import.meta.dirname, '../..');

/** Runs `node <args>`; resolves with its exit code, its stdout, and both streams for messages. */
function node(args: readonly string[], cwd = ROOT): Promise<{ code: number | null; stdout: string; output: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, args, {
      cwd,
      env: { ...process.env, FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => ((stdout += chunk.toString()), (output += chunk.toString())));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, output }));
  });
}

describe('the built package (npm run build, the `seedline` bin)', () => {
  let workspace: string | null = null;
  // Its own output folder inside the repository (node_modules and package.json are found from there), not dist/,
  // which a benchmark may be running from.
  const outDir = join(ROOT, `.e2e-build-${process.pid}`);
  afterAll(async () => {
    if (workspace) await rm(workspace, { recursive: true, force: true });
    await rm(outDir, { recursive: true, force: true });
  });

  it('given the build, when its bin syncs the demo config from another folder, then it finds its stream manifests and loads', async () => {
    // The build's JavaScript (the same bytes but for the source-map comments) and no more: no type
    // check (`npm run typecheck` checks the same sources), no .d.ts or source maps, no type files of
    // node_modules read (--noResolve: src/ and schemas/ are all in the build's file list). tsc took
    // ~8.3 CPU s instead of ~13.7, the costliest single process of the e2e run.
    const build = await node([
      join(ROOT, 'node_modules/typescript/bin/tsc'),
      '-p',
      'tsconfig.build.json',
      '--noCheck',
      '--noResolve',
      '--declaration',
      'false',
      '--sourceMap',
      'false',
      '--outDir',
      outDir,
    ]);
    expect(build.code, build.output).toBe(0);
    workspace = await tempWorkspace();
    await cp(join(ROOT, 'config'), join(workspace, 'config'), { recursive: true });
    // As in a clone: the demo's warehouse goes to data/, a folder seedline never creates itself.
    await mkdir(join(workspace, 'data'));
    const bin = join(outDir, 'src/cli/main.js');
    const sync = await node([bin, 'sync', '--config', 'config/demo.yaml'], workspace);
    expect(sync.code, sync.output).toBe(0);
    const query = await node(
      [
        bin,
        'query',
        '--config',
        'config/demo.yaml',
        '--format',
        'json',
        'select count(*) as n from seedline.companies',
      ],
      workspace,
    );
    expect(query.code, query.output).toBe(0);
    expect(JSON.parse(query.stdout)).toEqual([{ n: 10 }]);
  });
});

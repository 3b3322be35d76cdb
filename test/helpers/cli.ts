import { spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';

const ROOT = resolve(import.meta.dirname, '../..');

/** What a CLI run printed and how it exited. */
export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the real `seedline` CLI (TypeScript through tsx) as a child process. */
export function runCli(args: readonly string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<CliResult> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), ...args], {
      cwd: options.cwd ?? ROOT,
      env: { ...process.env, ...options.env, FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', fail);
    child.on('close', (code, signal) => done({ code, signal, stdout, stderr }));
  });
}

/** A temp folder for one test's config, seeds and DuckDB file. */
export async function tempWorkspace(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'seedline-e2e-'));
}

/** Writes a config object as YAML into the workspace; returns its path. */
export async function writeConfig(dir: string, config: unknown, name = 'seedline.yaml'): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, stringify(config));
  return path;
}

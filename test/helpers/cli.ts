import { spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { inject } from 'vitest';
import { stringify } from 'yaml';

const ROOT = resolve(import.meta.dirname, '../..');

/**
 * Node arguments that start the `seedline` CLI: the entry point bundled once for this test run
 * (test/helpers/build-cli.ts), or `--import tsx src/cli/main.ts` when there is none
 * (`SEEDLINE_TEST_CLI=tsx`, or a run without the global setup).
 */
export function cliNodeArgs(): string[] {
  const built = inject('cliEntry');
  return built ? [built] : ['--import', 'tsx', join(ROOT, 'src/cli/main.ts')];
}

/** What a CLI run printed and how it exited. */
export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the real `seedline` CLI as a child process (see {@link cliNodeArgs}). */
export function runCli(
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<CliResult> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [...cliNodeArgs(), ...args], {
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

/** A long-running CLI child (`schedule`, `serve`): its output so far and its exit. */
export interface RunningCli {
  child: ReturnType<typeof spawn>;
  /** Everything printed on stdout so far. */
  readonly stdout: string;
  /** Everything printed on stderr so far. */
  readonly stderr: string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

/** Starts the real `seedline` CLI and returns at once; stop it with `child.kill(...)`. */
export function spawnCli(args: readonly string[], options: { env?: NodeJS.ProcessEnv } = {}): RunningCli {
  const child = spawn(process.execPath, [...cliNodeArgs(), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...options.env, FORCE_COLOR: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
  return {
    child,
    get stdout() {
      return output.stdout;
    },
    get stderr() {
      return output.stderr;
    },
    exited,
  };
}

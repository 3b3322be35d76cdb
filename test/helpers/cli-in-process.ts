import { buildProgram } from '../../src/cli/program.js';
import type { CliResult } from './cli.js';

/** Thrown by the in-process `exit`: commander wanted to end the process with `code`. */
class ExitRequested extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

let queue: Promise<unknown> = Promise.resolve();

/**
 * Runs a `seedline` command line in this test process, the way `runCli` runs it in a child: the
 * same program, options, exit code, stdout and stderr (plain log lines), without a process start.
 * For tests about what a command does, not about processes: signals, kill -9, JSON log lines on
 * fd 2 and the process's exit stay with `runCli`. Runs one at a time (stdout, stderr, environment
 * and `process.exitCode` are the process's own); `env` is set for the run and restored after it.
 * What a process keeps stays between runs: a config warning is logged once, secrets seen stay redacted.
 */
export function runCliInProcess(
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv } = {},
): Promise<CliResult> {
  const run = queue.then(() => runOnce(args, options.env ?? {}));
  queue = run.catch(() => undefined);
  return run;
}

async function runOnce(args: readonly string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  // A crash point kills its own process: here that would be the test worker.
  if (env.SEEDLINE_TEST_CRASH_AT)
    throw new Error('runCliInProcess: a run with SEEDLINE_TEST_CRASH_AT needs runCli (a process of its own)');
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  const restoreOutput = [capture(process.stdout, stdout), capture(process.stderr, stderr)];
  const restoreEnv = setEnv({ FORCE_COLOR: '0', ...env });
  process.exitCode = undefined;
  let code: number;
  try {
    await buildProgram((exitCode) => {
      throw new ExitRequested(exitCode);
    }).parseAsync(['node', 'seedline', ...args]);
    code = Number(process.exitCode ?? 0);
  } catch (error) {
    if (!(error instanceof ExitRequested)) throw error;
    code = error.code;
  } finally {
    process.exitCode = undefined;
    restoreEnv();
    for (const restore of restoreOutput) restore();
  }
  // Decoded once at the end: a character split across two writes stays whole.
  return { code, signal: null, stdout: Buffer.concat(stdout).toString(), stderr: Buffer.concat(stderr).toString() };
}

/** Keeps what is written to `stream` in `chunks` instead; returns the undo. */
function capture(stream: NodeJS.WriteStream, chunks: Buffer[]): () => void {
  const write = stream.write;
  stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const encoding = typeof rest[0] === 'string' ? (rest[0] as BufferEncoding) : undefined;
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, encoding) : Buffer.from(chunk));
    const done = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined;
    if (done) process.nextTick(done);
    return true;
  }) as typeof stream.write;
  return () => {
    stream.write = write;
  };
}

/** Sets environment variables; returns the undo. */
function setEnv(values: NodeJS.ProcessEnv): () => void {
  const before = Object.fromEntries(Object.keys(values).map((key) => [key, process.env[key]]));
  Object.assign(process.env, values);
  return () => {
    for (const [key, value] of Object.entries(before)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  };
}

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
  const captured = { stdout: '', stderr: '' };
  const restoreOutput = [
    capture(process.stdout, (text) => (captured.stdout += text)),
    capture(process.stderr, (text) => (captured.stderr += text)),
  ];
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
  return { code, signal: null, ...captured };
}

/** Sends what is written to `stream` to `sink` instead; returns the undo. */
function capture(stream: NodeJS.WriteStream, sink: (text: string) => void): () => void {
  const write = stream.write;
  stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    sink(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
    const done = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined;
    done?.();
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

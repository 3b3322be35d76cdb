import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import type { FaultRates, SandboxOptions } from '../sandbox/index.js';
import { parsePort } from './listen-options.js';
import { runCommand } from './run-command.js';
import { helpExamples } from './help-examples.js';

function integer(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0) throw new InvalidArgumentError('expected a non-negative integer');
  return parsed;
}

function positiveNumber(value: string): number {
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed <= 0) throw new InvalidArgumentError('expected a positive number');
  return parsed;
}

/** `MIN-MAX` (or a single value) in milliseconds. */
export function parseLatency(value: string): [number, number] {
  const match = /^(\d+)(?:-(\d+))?$/.exec(value.trim());
  if (!match) throw new InvalidArgumentError('expected MIN-MAX in milliseconds, e.g. 2000-8000');
  const min = Number(match[1]);
  const max = Number(match[2] ?? match[1]);
  if (max < min) throw new InvalidArgumentError('MIN must not exceed MAX');
  return [min, max];
}

/** `429=0.05,500=0.02,504=0.02,upstream_error=0.01`. */
export function parseFaults(value: string): FaultRates {
  const faults: FaultRates = {};
  for (const pair of value.split(',').filter((p) => p.trim() !== '')) {
    const [name, rate] = pair.split('=').map((s) => s.trim());
    const parsed = Number(rate);
    if (
      !['429', '500', '504', 'upstream_error'].includes(name ?? '') ||
      !Number.isFinite(parsed) ||
      parsed < 0 ||
      parsed > 1
    ) {
      throw new InvalidArgumentError(
        `bad fault ${JSON.stringify(pair)}: use 429|500|504|upstream_error=<rate from 0 to 1>`,
      );
    }
    faults[name as keyof FaultRates] = parsed;
  }
  return faults;
}

/** Registers `seedline sandbox`: serves the local emulator until interrupted; a port it cannot listen on is one error line (exit 1). */
export function registerSandboxCommand(program: Command): void {
  program
    .command('sandbox')
    .description(
      'Run the local emulator of the service (fixtures, billing, limits, faults, webhooks) for trying seedline offline',
    )
    .option('--port <port>', 'port to listen on (0 picks a free one)', parsePort, 8787)
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--seed <n>', 'fixture and fault seed', integer, 1)
    .option('--latency <min-max>', 'simulated scrape latency in ms, e.g. 2000-8000', parseLatency)
    .option('--time-scale <factor>', 'multiplier applied to the latency, e.g. 0.01', positiveNumber)
    .option('--faults <list>', 'fault rates, e.g. 429=0.05,500=0.02,504=0.02,upstream_error=0.01', parseFaults)
    .option('--rpm <n>', 'requests per minute per key', integer)
    .option('--concurrent-batch-jobs <n>', 'running batch jobs per account', integer)
    .option('--balance <n>', 'starting balance of svc_live_* keys, in credits', integer)
    .addHelpText(
      'after',
      helpExamples(
        'sandbox --port 8787',
        'sandbox --port 8787 --seed 7 --latency 2000-8000 --time-scale 0.01 --faults 429=0.05,504=0.02 --rpm 120',
      ),
    )
    .action((flags: Record<string, unknown>) =>
      runCommand(async () => (await import('./sandbox-action.js')).runSandbox(sandboxOptions(flags))),
    );
}

/** The emulator's options from the parsed flags (only those given override its defaults). */
function sandboxOptions(flags: Record<string, unknown>): SandboxOptions {
  const options: SandboxOptions = {
    port: flags.port as number,
    host: flags.host as string,
    seed: flags.seed as number,
  };
  if (flags.latency !== undefined) options.latencyMs = flags.latency as [number, number];
  if (flags.timeScale !== undefined) options.timeScale = flags.timeScale as number;
  if (flags.faults !== undefined) options.faults = flags.faults as FaultRates;
  if (flags.rpm !== undefined) options.rpm = flags.rpm as number;
  if (flags.concurrentBatchJobs !== undefined) options.concurrentBatchJobs = flags.concurrentBatchJobs as number;
  if (flags.balance !== undefined) options.balance = flags.balance as number;
  return options;
}

/**
 * Peak RSS of `seedline airbyte read` against the number of seeds, beside `seedline sync` of the
 * same config (issue 36, item 1).
 *
 *   npm run build && npx tsc -p tsconfig.bench.json
 *   node dist/bench/airbyte-read-memory.js [--seeds 1000,5000,20000] [--repeat 3] [--backend duckdb|postgres] [--base DIR] [--jobs 5]
 *
 * For each N: N profile seeds in a CSV file, the profiles batch stream, the sandbox at zero latency
 * in a process of its own (it keeps every result it served: the service's memory, not ours). Each
 * repeat runs `sync` and `airbyte read` (catalog: the profiles table, incremental) as whole
 * processes of the built CLI, each into a fresh working store, alternated (A B, then B A). Peak
 * RSS and CPU seconds come from the kernel's accounting of the finished process (`/usr/bin/time`);
 * a sampler preloaded in each process (`--import` of this file) adds the V8 heap at its peak and
 * the RSS outside V8's heap at the peak RSS sample (native: libduckdb, buffers). Prints min and
 * median of each figure, and each median's ratio to the first N's. `--base DIR` adds `airbyte read`
 * of another build (DIR/dist/src/cli/main.js, say a worktree of the commit before), in turn with the two.
 * `--jobs N`: batch jobs the sandbox runs at once (default 5), which is how many a sync keeps open.
 */
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cliStartOf } from './entry-point-env.js';

const self = fileURLToPath(import.meta.url);
/** Set in a measured CLI process: this file was preloaded to sample its memory. */
const SAMPLER_ENV = 'SEEDLINE_BENCH_MEMORY_SAMPLE';

/** Preloaded: samples memory every 50 ms and writes the peaks to the file the variable names, at exit. */
function installSampler(out: string): void {
  let peakHeap = 0;
  let atPeak = process.memoryUsage();
  const sample = () => {
    const usage = process.memoryUsage();
    peakHeap = Math.max(peakHeap, usage.heapUsed);
    if (usage.rss > atPeak.rss) atPeak = usage;
  };
  setInterval(sample, 50).unref();
  process.once('exit', () => {
    sample();
    const mb = (n: number) => Math.round(n / 2 ** 20);
    const figures = { heapMb: mb(peakHeap), outsideHeapMb: mb(atPeak.rss - atPeak.heapTotal) };
    writeFileSync(out, JSON.stringify(figures));
  });
}

function flag(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? String(process.argv[at + 1]) : fallback;
}

async function serveSandbox(): Promise<void> {
  const { startSandbox } = await import('../src/sandbox/index.js');
  const sandbox = await startSandbox({
    rpm: 1_000_000_000,
    latencyMs: [0, 0],
    concurrentBatchJobs: Number(flag('jobs', '5')),
    batchItemConcurrency: 100,
  });
  process.stdout.write(`${sandbox.url}\n`);
}

/** The sandbox in a child process of its own; resolves with its URL and a way to stop it. */
function startSandboxChild(): Promise<{ url: string; stop: () => Promise<void> }> {
  const proc = spawn(process.execPath, ['--max-old-space-size=8192', self, '--serve', '--jobs', flag('jobs', '5')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    let text = '';
    proc.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('\n'))
        resolve({
          url: text.slice(0, text.indexOf('\n')),
          stop: () => {
            proc.kill();
            return exited;
          },
        });
    });
    void exited.then(() => reject(new Error('the sandbox exited before answering')));
  });
}

/** What one whole process measured. */
interface Figures {
  rssMb: number;
  cpuS: number;
  wallS: number;
  heapMb: number;
  outsideHeapMb: number;
}

const CLI = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
const BASE = flag('base', '');

/** Runs the built CLI (`cli`) with `args` under /usr/bin/time, its stdout discarded; throws when it fails. */
async function measured(cli: string, args: string[], dir: string): Promise<Figures> {
  const timeFile = join(dir, 'time.txt');
  const sampleFile = join(dir, 'sample.json');
  // Started as the build's `seedline` command starts (its shebang's variables and node flags).
  const start = cliStartOf(cli);
  const proc = spawn(
    '/usr/bin/time',
    ['-o', timeFile, '-f', '%M %U %S %e', process.execPath, ...start.nodeArgs, '--import', self, cli, ...args],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ...start.env, [SAMPLER_ENV]: sampleFile },
    },
  );
  let stderr = '';
  proc.stderr.on('data', (chunk: Buffer) => void (stderr = (stderr + chunk.toString()).slice(-4000)));
  const code = await new Promise<number | null>((resolve) => proc.once('exit', resolve));
  if (code !== 0) throw new Error(`${args.slice(0, 2).join(' ')} exited ${code}: ${stderr}`);
  const [maxRssKb, user, sys, wall] = (await readFile(timeFile, 'utf8')).trim().split(/\s+/).map(Number);
  const sample = JSON.parse(await readFile(sampleFile, 'utf8')) as { heapMb: number; outsideHeapMb: number };
  return { rssMb: maxRssKb! / 1024, cpuS: user! + sys!, wallS: wall!, ...sample };
}

/** The config of one process: its own working store. */
async function writeRunConfig(dir: string, url: string, name: string): Promise<{ config: string; drop?: string }> {
  const backend = flag('backend', 'duckdb');
  const schema = `bench_airbyte_${process.pid}_${name.replace('-', '_')}`;
  const destination =
    backend === 'postgres'
      ? { type: 'postgres', url: 'postgres://postgres@127.0.0.1:5432/test', schema }
      : { type: 'duckdb', path: join(dir, `${name}.duckdb`), schema: 'seedline' };
  const config = join(dir, `${name}.json`);
  await writeFile(
    config,
    JSON.stringify({
      api: { base_url: url, api_key: 'svc_test_bench', max_concurrency: 16 },
      destination,
      seeds: { profiles: { file: join(dir, 'seeds.csv'), column: 'url' } },
      streams: { profiles: {} },
      batch: { chunk_size: 1000, poll_interval_ms: 50 },
      budget: { max_credits_per_run: 100_000_000 },
    }),
  );
  return backend === 'postgres' ? { config, drop: schema } : { config };
}

async function dropSchema(schema: string | undefined): Promise<void> {
  if (!schema) return;
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
  await client.connect();
  await client.query(`drop schema if exists "${schema}" cascade`);
  await client.end();
}

type Command = 'sync' | 'airbyte read' | 'airbyte read (base)';

async function runOnce(command: Command, dir: string, url: string, n: number): Promise<Figures> {
  const name = `${command === 'sync' ? 'sync' : 'read'}-${n}`;
  const cli = command === 'airbyte read (base)' ? join(BASE, 'dist/src/cli/main.js') : CLI;
  const { config, drop } = await writeRunConfig(dir, url, name);
  const catalog = join(dir, 'catalog.json');
  const args =
    command === 'sync' ? ['sync', '--config', config] : ['airbyte', 'read', '--config', config, '--catalog', catalog];
  try {
    return await measured(cli, args, dir);
  } finally {
    await dropSchema(drop);
    for (const suffix of ['.duckdb', '.duckdb.wal', '.duckdb.lock'])
      if (existsSync(join(dir, `${name}${suffix}`))) await rm(join(dir, `${name}${suffix}`));
  }
}

async function main(): Promise<void> {
  const { formatTable } = await import('../src/cli/format-table.js');
  const { median } = await import('./stats.js');
  const counts = flag('seeds', '1000,5000,20000').split(',').map(Number);
  const repeat = Number(flag('repeat', '3'));
  const sandbox = await startSandboxChild();
  const rows: Record<string, unknown>[] = [];
  const first = new Map<Command, number>();
  try {
    for (const n of counts) {
      const dir = await mkdtemp(join(tmpdir(), 'seedline-bench-airbyte-'));
      const lines = ['url', ...Array.from({ length: n }, (_, i) => `https://www.network.example/in/bench-person-${i}`)];
      await writeFile(join(dir, 'seeds.csv'), `${lines.join('\n')}\n`);
      const stream = { name: 'profiles' };
      await writeFile(
        join(dir, 'catalog.json'),
        JSON.stringify({ streams: [{ stream, sync_mode: 'incremental', destination_sync_mode: 'append_dedup' }] }),
      );
      const commands: Command[] = BASE ? ['sync', 'airbyte read', 'airbyte read (base)'] : ['sync', 'airbyte read'];
      const runs = new Map<Command, Figures[]>(commands.map((c) => [c, []]));
      for (let r = 0; r < repeat; r++) {
        const order = r % 2 === 0 ? commands : [...commands].reverse();
        for (const command of order) runs.get(command)!.push(await runOnce(command, dir, sandbox.url, n));
      }
      for (const [command, list] of runs) {
        const med = (pick: (f: Figures) => number) => median(list.map(pick));
        const min = (pick: (f: Figures) => number) => Math.min(...list.map(pick));
        if (!first.has(command))
          first.set(
            command,
            med((f) => f.rssMb),
          );
        rows.push({
          seeds: n,
          command,
          rss_min_mb: Math.round(min((f) => f.rssMb)),
          rss_median_mb: Math.round(med((f) => f.rssMb)),
          rss_vs_first: (med((f) => f.rssMb) / first.get(command)!).toFixed(2),
          heap_peak_mb: Math.round(med((f) => f.heapMb)),
          outside_heap_mb: Math.round(med((f) => f.outsideHeapMb)),
          cpu_min_s: min((f) => f.cpuS).toFixed(1),
          cpu_median_s: med((f) => f.cpuS).toFixed(1),
          wall_median_s: med((f) => f.wallS).toFixed(1),
        });
        process.stderr.write(`${JSON.stringify(rows.at(-1))}\n`);
      }
      await rm(dir, { recursive: true, force: true });
    }
  } finally {
    await sandbox.stop();
  }
  process.stdout.write(
    `profiles batch stream, CSV seeds, ${flag('backend', 'duckdb')}, sandbox at zero latency in its own process; ${repeat} runs of each command alternated, medians unless named min\n\n${formatTable(rows)}\n`,
  );
}

if (process.env[SAMPLER_ENV] && process.argv[1] !== self) installSampler(process.env[SAMPLER_ENV]);
else if (process.argv.includes('--serve')) await serveSandbox();
else await main();

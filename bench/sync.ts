/**
 * Sync throughput against the sandbox with realistic latency and rate limit.
 *
 *   npx tsx bench/sync.ts [--profiles 5000] [--partitions 600] [--latency 200] [--rpm 600]
 *   npx tsx bench/sync.ts --series [10000,100000,1000000] [--latency 1] [--rpm 100000]
 *   add --statements: each part also prints the time its DuckDB sessions spent per kind of statement
 *   add --timeline: each part also prints, per operation, its calls and when the first and last answered
 *
 * Part 1: N profiles by batch (items resolve 10 at a time per job, 5 jobs at once).
 * Part 2: P activity partitions (one page each, single calls, each answer journaled) under the rate limit.
 * `--series`: part 1 alone for each N (default 10k, 100k, 1M, the sandbox at ~0 latency), each in a
 * child process of its own so its peak RSS is its own; seeds come from a CSV file.
 *
 * Each part prints wall time, calls, CPU (seconds, and ms per partition or item: the embedded
 * sandbox's share included), peak RSS and the ratio to a lower bound that holds for any
 * N: the larger of the latency bound (items × latency / items in flight) and the rate bound of
 * the sandbox's sliding window, which lets `rpm` calls through at once and the next ones only as
 * the first leave the window: the fewest calls the work needs, C, take at least
 * floor((C - 1) / rpm) windows of 59 s (60 one-second buckets, the first one partly used).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiClient, type ClientEvent } from '../src/client/index.js';
import { parseConfig } from '../src/config/load-config.js';
import { createDestination } from '../src/destinations/create-destination.js';
import type { Reporter } from '../src/engine/stream-context.js';
import { prepareSync, runSync } from '../src/engine/pipeline.js';
import { loadManifests } from '../src/manifest/load-manifests.js';
import { startSandbox } from '../src/sandbox/index.js';
import { formatTable } from '../src/cli/format-table.js';
import { limitHeapGrowth } from '../src/cli/heap-growth.js';
import { rerunWithEntryPointEnv } from './entry-point-env.js';
import { formatStatementTimes, timeStatements } from './statement-times.js';
import { DuckDbDestination } from '../src/destinations/duckdb/duckdb-destination.js';

function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}

const seriesAt = process.argv.indexOf('--series');
const series = seriesAt >= 0;
const seriesSizes =
  series && /^[\d,]+$/.test(process.argv[seriesAt + 1] ?? '')
    ? process.argv[seriesAt + 1]!.split(',').map(Number)
    : [10_000, 100_000, 1_000_000];
const child = process.argv.includes('--child');
/** `--statements`: DuckDB sessions' time per kind of statement, printed per part (bench/statement-times.ts). */
const tally = process.argv.includes('--statements') ? timeStatements(DuckDbDestination) : undefined;
const profiles = flag('profiles', 5000);
const partitions = flag('partitions', 600);
const latencyMs = flag('latency', series ? 1 : 200);
const rpm = flag('rpm', series ? 100_000 : 600);
const batchItemConcurrency = 10;
const concurrentBatchJobs = 5;
const requestConcurrency = 16;
const chunkSize = 1000;
/** Entries of a results page the engine asks for (the sandbox's largest). */
const resultsPage = 500;
const silent: Reporter = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };

interface Measured {
  part: string;
  units: number;
  seconds: number;
  bound: number;
  ratio: number;
  calls: number;
  min_calls: number;
  /** CPU seconds of the whole process during the run (the embedded sandbox's included). */
  cpu_s: number;
  /** CPU ms a partition (activity) or an item (batch): the run's CPU over its units of work. */
  cpu_ms_per_unit: number;
  peak_rss_mb: number;
  r429_first_min: number;
  r429_after: number;
}

/** Seconds the sandbox's sliding window needs at least to let `calls` calls through. */
function rateBound(calls: number): number {
  return Math.floor(Math.max(0, calls - 1) / rpm) * 59;
}

/** The fewest calls N profiles by batch take: the account, and per job of `chunkSize` items its submission and result pages. */
function batchCalls(n: number): number {
  const jobs = Math.ceil(n / chunkSize);
  return 1 + jobs + Math.ceil(n / resultsPage);
}

function batchBound(n: number): number {
  return Math.max((n * latencyMs) / 1000 / (batchItemConcurrency * concurrentBatchJobs), rateBound(batchCalls(n)));
}

async function measure(
  part: string,
  seeds: unknown,
  streams: Record<string, unknown>,
  only: string[],
  bound: number,
  minCalls: number,
  dir: string,
  workUnits: number,
): Promise<Measured> {
  const sandbox = await startSandbox({
    latencyMs: [latencyMs, latencyMs],
    rpm,
    concurrentBatchJobs,
    batchItemConcurrency,
  });
  const events: { at: number; status: number; operation: string }[] = [];
  const onEvent = (e: ClientEvent) =>
    e.type === 'response' && events.push({ at: Date.now(), status: e.status, operation: e.operation });
  const config = parseConfig(
    JSON.stringify({
      api: { base_url: sandbox.url, api_key: 'svc_test_bench', max_concurrency: requestConcurrency },
      destination: { type: 'duckdb', path: join(dir, 'bench.duckdb') },
      seeds: { profiles: seeds },
      streams,
      batch: { chunk_size: chunkSize, poll_interval_ms: series ? 50 : 500 },
      // Every seed is fetched: no run budget short of the work (the default is 1,000 credits).
      budget: { max_credits_per_run: 100_000_000 },
    }),
    'bench',
  );
  // As `seedline sync` opens it: the config's settings over the destination's defaults (memory_limit included).
  const destination = await createDestination(config.destination);
  await destination.lock({ holder: 'bench' });
  await destination.ensureSystemTables();
  const client = await ApiClient.connect({ baseUrl: sandbox.url, apiKey: 'svc_test_bench', onEvent });
  const manifests = await loadManifests();
  tally?.clear();
  const started = Date.now();
  const cpuBefore = process.cpuUsage();
  const prepared = await prepareSync({ config, baseDir: dir, manifests, destination, only });
  const result = await runSync(prepared, { client, reporter: silent, concurrentBatchJobs });
  const seconds = (Date.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  if (process.argv.includes('--timeline')) process.stderr.write(`${part}: ${timeline(events, started, Date.now())}\n`);
  if (tally) process.stderr.write(`${part}: time per kind of statement\n${formatStatementTimes(tally)}\n`);
  await client.close();
  await destination.close();
  await sandbox.close();
  if (result.status === 'failed') throw new Error(`${part}: run failed: ${JSON.stringify(result.streams)}`);
  const r429 = events.filter((e) => e.status === 429);
  return {
    part,
    units: result.streams.reduce((n, s) => n + s.records, 0),
    seconds: round(seconds),
    bound: round(bound),
    ratio: bound > 0 ? round(seconds / bound) : Number.POSITIVE_INFINITY,
    calls: events.length,
    min_calls: minCalls,
    cpu_s: round(cpuSeconds),
    cpu_ms_per_unit: workUnits > 0 ? round((cpuSeconds * 1000) / workUnits) : 0,
    peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024),
    r429_first_min: r429.filter((e) => e.at - started < 60_000).length,
    r429_after: r429.filter((e) => e.at - started >= 60_000).length,
  };
}

/** `--timeline`: per operation, its calls and the seconds of its first and last answer, from the run's start. */
function timeline(events: readonly { at: number; operation: string }[], started: number, ended: number): string {
  const spans = new Map<string, { calls: number; first: number; last: number }>();
  for (const { at, operation } of events) {
    const span = spans.get(operation) ?? { calls: 0, first: at, last: at };
    span.calls++;
    span.last = at;
    spans.set(operation, span);
  }
  const s = (at: number) => round((at - started) / 1000);
  const parts = [...spans].map(([op, { calls, first, last }]) => `${op} ×${calls} ${s(first)}-${s(last)} s`);
  return `${parts.join('; ')}; run ended at ${s(ended)} s`;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

const seedUrl = (i: number): string => `https://www.network.example/in/bench-person-${i}`;

/** N profiles by batch, seeds read from a CSV file (written in pieces, never held whole). */
async function profilesFromCsv(n: number, dir: string): Promise<Measured> {
  const file = join(dir, 'seeds.csv');
  await writeFile(file, 'url\n');
  for (let from = 0; from < n; from += 100_000) {
    const lines = Array.from({ length: Math.min(100_000, n - from) }, (_, i) => seedUrl(from + i)).join('\n');
    await writeFile(file, `${lines}\n`, { flag: 'a' });
  }
  return measure(
    `profiles by batch, N=${n}`,
    { file, column: 'url' },
    { profiles: {} },
    ['profiles'],
    batchBound(n),
    batchCalls(n),
    dir,
    n,
  );
}

/** Runs one N of the series in a child process (its peak RSS its own) and reads its result line. */
async function inChild(n: number): Promise<Measured> {
  const proc = spawn(
    process.execPath,
    [
      ...process.execArgv,
      fileURLToPath(import.meta.url),
      '--child',
      '--profiles',
      String(n),
      '--latency',
      String(latencyMs),
      '--rpm',
      String(rpm),
      '--series',
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let output = '';
  proc.stdout.setEncoding('utf8').on('data', (text: string) => (output += text));
  const [code] = (await once(proc, 'close')) as [number | null];
  const line = output.split('\n').find((l) => l.startsWith('RESULT '));
  if (code !== 0 || !line) throw new Error(`N=${n} failed (exit ${code})`);
  return JSON.parse(line.slice(7)) as Measured;
}

// The run (and each --series child, which inherits it) gets the allocator options of the `seedline` entry point.
if (await rerunWithEntryPointEnv()) process.exit();
const dir = await mkdtemp(join(tmpdir(), 'seedline-bench-sync-'));
try {
  const settings = `latency ${latencyMs} ms, ${rpm} requests/min, ${requestConcurrency} calls in flight, batch: ${concurrentBatchJobs} jobs × ${batchItemConcurrency} items`;
  if (child) {
    limitHeapGrowth();
    process.stdout.write(`RESULT ${JSON.stringify(await profilesFromCsv(profiles, dir))}\n`);
  } else if (series) {
    const rows: Measured[] = [];
    for (const n of seriesSizes) {
      const row = await inChild(n);
      process.stderr.write(`  N=${n}: ${row.seconds} s, ${row.calls} calls, peak RSS ${row.peak_rss_mb} MB\n`);
      rows.push(row);
    }
    process.stdout.write(`${settings}\n\n${formatTable(rows as unknown as Record<string, unknown>[])}\n`);
  } else {
    const seeds = Array.from({ length: profiles }, (_, i) => seedUrl(i));
    const batch = await measure(
      'profiles by batch',
      seeds,
      { profiles: {} },
      ['profiles'],
      batchBound(profiles),
      batchCalls(profiles),
      join(dir),
      profiles,
    );

    // Activity partitions come from loaded profiles: load P of them first (not timed), then time activity alone.
    const partDir = await mkdtemp(join(dir, 'activity-'));
    await measure('(setup)', seeds.slice(0, partitions), { profiles: {} }, ['profiles'], 1, 0, partDir, 0);
    const activityCalls = 1 + partitions;
    const activityBound = Math.max(rateBound(activityCalls), (partitions * latencyMs) / 1000 / requestConcurrency);
    const activity = await measure(
      'activity, single calls',
      seeds.slice(0, partitions),
      { profiles: {}, activity: { kinds: ['posts'], max_pages: 1, via: 'calls' } },
      ['activity'],
      activityBound,
      activityCalls,
      partDir,
      partitions,
    );
    process.stdout.write(`${settings}\n\n${formatTable([batch, activity] as unknown as Record<string, unknown>[])}\n`);
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}

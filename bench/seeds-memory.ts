/**
 * Peak memory of a sync against the number of seeds.
 *
 *   npx tsx bench/seeds-memory.ts [--profiles 10000,100000,1000000] [--backend duckdb|postgres] [--duckdb-settings k=v,…] [--stream company_posts] [--refresh] [--shaping-workers 0] [--duckdb-tags]
 *
 * For each N: N profile seeds in a CSV file (`seeds.profiles: { file, column }`), one sync of the
 * profiles batch stream into a fresh DuckDB file, the sandbox at zero latency in a process of its
 * own (it keeps every job's results, which is the service's memory, not the connector's). The sync
 * runs in a child process of its own too, so each N's peak RSS (getrusage maxrss) is its own, with
 * V8's heap growth capped as the `seedline` entry point caps it.
 * `--stream company_posts` syncs a request stream instead: one page of posts of each of N companies
 * put in its parent table beforehand (by batch rounds, as the stream asks by default), so the
 * figures are those of a stream whose partitions are the rows of a parent table.
 * `--refresh` (DuckDB) syncs the profiles twice, the second time with `--full-refresh`, and
 * prints the second sync's figures: every key merged again, and the replaced rows deleted when
 * the stream settles.
 * Prints seeds, records loaded, wall time, calls, peak RSS and peak heap, and the ratio of each
 * peak RSS to the first N's; on DuckDB also the memory DuckDB itself accounts for at the end (`duckdb_memory()`).
 * `--duckdb-tags` (DuckDB) also reads `duckdb_memory()` every 500 ms through the sync and prints,
 * per N, DuckDB's memory by tag (MB) at the reading where the process's RSS was largest.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { returnFreedDuckDbMemory } from '../src/cli/duckdb-allocator.js';
import { formatTable } from '../src/cli/format-table.js';

const self = fileURLToPath(import.meta.url);
/** `--stream company_posts` measures a request stream over N parent rows instead of the profiles batch stream over N seeds. */
const STREAM = flag('stream', 'profiles');
/** `--refresh`: the figures of a second sync of the same seeds, with `--full-refresh`. */
const REFRESH = process.argv.includes('--refresh');
/** `--duckdb-tags`: DuckDB's memory by tag at the sync's largest RSS. */
const TAGS = process.argv.includes('--duckdb-tags');
/** Set in the sync child that runs the refresh. */
const FULL_REFRESH = process.argv.includes('--full-refresh');

function flag(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? String(process.argv[at + 1]) : fallback;
}

/** `--duckdb-settings memory_limit=128MB,threads=1` sets DuckDB settings; without it the destination's defaults apply. */
function duckDbSettings(): { settings?: Record<string, string> } {
  const given = flag('duckdb-settings', '');
  return given
    ? { settings: Object.fromEntries(given.split(',').map((pair) => pair.split('=') as [string, string])) }
    : {};
}

/** What one sync child reports. */
interface RunFigures {
  records: number;
  seconds: number;
  calls: number;
  peakRssMb: number;
  peakHeapMb: number;
  /** process.memoryUsage() at the sample with the largest RSS, in MB: where the peak was. */
  atPeakMb: Record<string, number>;
  /** DuckDB only: the memory DuckDB's buffer manager accounts for when the sync ends (`duckdb_memory()`), in MB. */
  duckDbOwnMb?: number;
  /** `--duckdb-tags`: RSS and `duckdb_memory()` by tag (MB) at the reading with the largest RSS. */
  duckDbTagsAtPeak?: Record<string, number>;
}

/**
 * Reads `duckdb_memory()` every 500 ms (skipping a reading while one is under way) and keeps the
 * tags of the reading where the RSS was largest. The readings run on a connection of their own,
 * beside the sync's.
 */
function sampleDuckDbTags(destination: { query(sql: string): Promise<Record<string, unknown>[]> }): {
  stop(): Record<string, number>;
} {
  let best: Record<string, number> = { rss: 0 };
  let reading = false;
  const timer = setInterval(() => {
    if (reading) return;
    reading = true;
    const rss = process.memoryUsage().rss;
    destination
      .query('select tag, memory_usage_bytes / 1048576 as mb from duckdb_memory() where memory_usage_bytes > 0')
      .then((rows) => {
        if (rss / 2 ** 20 <= best.rss!) return;
        best = { rss: Math.round(rss / 2 ** 20) };
        for (const row of rows) best[String(row.tag)] = Math.round(Number(row.mb));
      })
      .catch(() => undefined)
      .finally(() => (reading = false));
  }, 500);
  return {
    stop() {
      clearInterval(timer);
      return best;
    },
  };
}

async function serveSandbox(): Promise<void> {
  const { startSandbox } = await import('../src/sandbox/index.js');
  const sandbox = await startSandbox({
    rpm: 1_000_000_000,
    latencyMs: [0, 0],
    concurrentBatchJobs: 5,
    batchItemConcurrency: 100,
  });
  process.stdout.write(`${sandbox.url}\n`);
}

async function runSyncChild(url: string, dir: string): Promise<void> {
  // What the `seedline` entry point does at startup (src/cli/heap-growth.ts): the figures are those of a seedline process.
  const { limitHeapGrowth } = await import('../src/cli/heap-growth.js');
  limitHeapGrowth();
  const { ApiClient } = await import('../src/client/index.js');
  const { parseConfig } = await import('../src/config/load-config.js');
  const { createDestination } = await import('../src/destinations/create-destination.js');
  const { prepareSync, runSync } = await import('../src/engine/pipeline.js');
  const { loadManifests } = await import('../src/manifest/load-manifests.js');
  let peakHeap = 0;
  let atPeak = process.memoryUsage();
  const sampler = setInterval(() => {
    const usage = process.memoryUsage();
    peakHeap = Math.max(peakHeap, usage.heapUsed);
    if (usage.rss > atPeak.rss) atPeak = usage;
  }, 100);
  const backend = flag('backend', 'duckdb');
  const destinationConfig =
    backend === 'postgres'
      ? {
          type: 'postgres' as const,
          url: 'postgres://postgres@127.0.0.1:5432/test',
          schema: `bench_seeds_${process.pid}`,
        }
      : { type: 'duckdb' as const, path: join(dir, 'bench.duckdb'), schema: 'seedline', ...duckDbSettings() };
  const config = parseConfig(
    JSON.stringify({
      api: { base_url: url, api_key: 'svc_test_bench', max_concurrency: 16 },
      destination: destinationConfig,
      seeds: { profiles: { file: join(dir, 'seeds.csv'), column: 'url' } },
      // company_posts: one page of each parent company (the stream's partitions are the rows of `companies`).
      streams: STREAM === 'company_posts' ? { company_posts: { max_pages: 1 } } : { profiles: {} },
      batch: { chunk_size: 1000, poll_interval_ms: 50, shaping_workers: Number(flag('shaping-workers', '0')) },
      // Every seed is fetched: no run budget short of the work (the default is 1,000 credits).
      budget: { max_credits_per_run: 100_000_000 },
    }),
    'bench',
  );
  const destination = await createDestination(destinationConfig);
  await destination.lock({ holder: 'bench' });
  await destination.ensureSystemTables();
  const tags = TAGS && backend === 'duckdb' ? sampleDuckDbTags(destination) : undefined;
  let calls = 0;
  const client = await ApiClient.connect({
    baseUrl: url,
    apiKey: 'svc_test_bench',
    onEvent: (e) => void (e.type === 'response' && calls++),
  });
  const silent = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };
  const started = Date.now();
  if (STREAM === 'company_posts') await fillCompanies(destination, Number(flag('seeds', '0')));
  const prepared = await prepareSync({
    config,
    baseDir: dir,
    manifests: await loadManifests(),
    destination,
    only: [STREAM],
    ...(FULL_REFRESH ? { fullRefresh: true } : {}),
  });
  const result = await runSync(prepared, { client, reporter: silent, concurrentBatchJobs: 5 });
  const seconds = (Date.now() - started) / 1000;
  const duckDbTagsAtPeak = tags?.stop();
  const duckDbOwnMb =
    backend === 'duckdb'
      ? Number(
          (
            await destination.query<{ mb: unknown }>(
              'select sum(memory_usage_bytes) / 1048576 as mb from duckdb_memory()',
            )
          )[0]!.mb,
        )
      : undefined;
  if (backend === 'postgres') await destination.query(`drop schema "${destinationConfig.schema}" cascade`);
  await client.close();
  await destination.close();
  clearInterval(sampler);
  if (result.status === 'failed') throw new Error(`run failed: ${JSON.stringify(result.streams)}`);
  const figures: RunFigures = {
    records: result.streams.reduce((n, s) => n + s.records, 0),
    seconds,
    calls,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    peakHeapMb: peakHeap / 2 ** 20,
    atPeakMb: Object.fromEntries(Object.entries(atPeak).map(([k, v]) => [k, Math.round(v / 2 ** 20)])),
    ...(duckDbOwnMb === undefined ? {} : { duckDbOwnMb }),
    ...(duckDbTagsAtPeak ? { duckDbTagsAtPeak } : {}),
  };
  process.stdout.write(`${JSON.stringify(figures)}\n`);
}

/**
 * The parent table of company_posts, filled without the service: `count` company URLs, as if the
 * companies stream had loaded them (only the column the partitions read).
 */
async function fillCompanies(
  destination: { schema: string; kind: string; query(sql: string): Promise<unknown> },
  count: number,
): Promise<void> {
  const table = `"${destination.schema}".companies`;
  const numbers =
    destination.kind === 'postgres' ? `generate_series(0, ${count - 1}) as t(i)` : `range(${count}) as t(i)`;
  await destination.query(`create table ${table} (url varchar)`);
  await destination.query(
    `insert into ${table} select 'https://www.network.example/company/bench-' || i from ${numbers}`,
  );
}

/** Starts this file as a child with `args`; resolves with its first stdout line (the child goes on running). */
function child(
  args: string[],
  nodeArgs: string[] = [],
): Promise<{ line: string; done: Promise<number | null>; kill: () => void }> {
  // The sync child gets the allocator options the `seedline` entry point gives libduckdb (src/cli/duckdb-allocator.ts).
  const proc = spawn(process.execPath, [...process.execArgv, ...nodeArgs, self, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: returnFreedDuckDbMemory({ ...process.env }),
  });
  const done = new Promise<number | null>((resolve) => proc.once('exit', resolve));
  return new Promise((resolve, reject) => {
    let text = '';
    proc.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const end = text.indexOf('\n');
      if (end >= 0) resolve({ line: text.slice(0, end), done, kill: () => proc.kill() });
    });
    void done.then((code) => reject(new Error(`child ${args[0]} exited with ${code} before answering`)));
  });
}

async function measure(seeds: number): Promise<RunFigures> {
  const dir = await mkdtemp(join(tmpdir(), 'seedline-bench-seeds-'));
  // The sandbox keeps every result it served: a million profiles outgrow V8's default heap limit.
  const sandbox = await child(['--serve'], ['--max-old-space-size=12288']);
  try {
    const lines = ['url'];
    for (let i = 0; i < seeds; i++) lines.push(`https://www.network.example/in/bench-person-${i}`);
    await writeFile(join(dir, 'seeds.csv'), `${lines.join('\n')}\n`);
    const args = [
      '--run',
      sandbox.line,
      dir,
      '--backend',
      flag('backend', 'duckdb'),
      '--duckdb-settings',
      flag('duckdb-settings', ''),
      '--stream',
      STREAM,
      '--seeds',
      String(seeds),
      '--shaping-workers',
      flag('shaping-workers', '0'),
      ...(TAGS ? ['--duckdb-tags'] : []),
    ];
    let run = await child(args);
    await run.done;
    if (REFRESH) {
      run = await child([...args, '--full-refresh']);
      await run.done;
    }
    return JSON.parse(run.line) as RunFigures;
  } finally {
    sandbox.kill();
    await sandbox.done;
    await rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  if (REFRESH && (flag('backend', 'duckdb') !== 'duckdb' || STREAM !== 'profiles'))
    throw new Error('--refresh measures the DuckDB profiles stream: drop --backend postgres and --stream');
  const counts = flag('profiles', '10000,100000,1000000').split(',').map(Number);
  const rows: Record<string, unknown>[] = [];
  let first: number | undefined;
  const tagLines: string[] = [];
  for (const seeds of counts) {
    const f = await measure(seeds);
    first ??= f.peakRssMb;
    rows.push({
      seeds,
      records: f.records,
      wall_s: f.seconds.toFixed(1),
      calls: f.calls,
      peak_rss_mb: Math.round(f.peakRssMb),
      peak_heap_mb: Math.round(f.peakHeapMb),
      rss_vs_first: (f.peakRssMb / first).toFixed(2),
      ...(f.duckDbOwnMb === undefined ? {} : { duckdb_own_mb: Math.round(f.duckDbOwnMb) }),
    });
    if (f.duckDbTagsAtPeak) tagLines.push(`${seeds}: ${JSON.stringify(f.duckDbTagsAtPeak)}`);
    process.stderr.write(
      `${JSON.stringify({ ...rows.at(-1), at_peak_mb: f.atPeakMb, duckdb_tags_at_peak: f.duckDbTagsAtPeak })}\n`,
    );
  }
  process.stdout.write(
    `sandbox at zero latency in its own process; ${STREAM === 'company_posts' ? 'company_posts request stream over N parent companies, one page each' : `profiles batch stream, CSV seeds${REFRESH ? ', the second sync (--full-refresh) of the same seeds' : ''}`}, ${flag('backend', 'duckdb')}\n\n${formatTable(rows)}\n`,
  );
  if (tagLines.length > 0)
    process.stdout.write(`\nduckdb_memory() by tag (MB) at the largest RSS read:\n${tagLines.join('\n')}\n`);
}

if (process.argv.includes('--serve')) await serveSandbox();
else if (process.argv.includes('--run')) {
  const at = process.argv.indexOf('--run');
  await runSyncChild(process.argv[at + 1]!, process.argv[at + 2]!);
} else await main();

/**
 * Peak memory of a sync against the number of seeds.
 *
 *   npx tsx bench/seeds-memory.ts [--profiles 10000,100000,1000000] [--backend duckdb|postgres] [--duckdb-settings k=v,…] [--stream company_posts] [--refresh] [--shaping-workers 0] [--duckdb-tags] [--base DIR] [--repeat 1]
 *
 * For each N: N profile seeds in a CSV file (`seeds.profiles: { file, column }`), one sync of the
 * profiles batch stream into a fresh DuckDB file, the sandbox at zero latency in a process of its
 * own (it keeps every job's results, which is the service's memory, not the connector's). The sync
 * runs in a child process of its own too, so each N's peak RSS (getrusage maxrss) is its own, with
 * V8's heap growth capped as the `seedline` entry point caps it.
 * `--stream company_posts` syncs a request stream instead: one page of posts of each of N companies
 * put in its parent table beforehand (by batch rounds, as the stream asks by default), so the
 * figures are those of a stream whose partitions are the rows of a parent table.
 * `--refresh` (DuckDB) syncs the profiles twice, the second time with `--full-refresh` (with
 * `SEEDS_MEMORY_FROM=FILE`, a file `SEEDS_MEMORY_KEEP` kept of the same N, only the second), and
 * prints the second sync's figures: every key merged again, and the replaced rows deleted when
 * the stream settles.
 * Prints seeds, records loaded, wall time, calls, peak RSS and peak heap, and the ratio of each
 * peak RSS to the first N's; on DuckDB also the memory DuckDB itself accounts for at the end (`duckdb_memory()`).
 * `--duckdb-tags` (DuckDB) also reads `duckdb_memory()` every 500 ms through the sync and prints,
 * per N, DuckDB's memory by tag (MB) at the reading where the process's RSS was largest.
 * The sync child starts with the start settings of the build's `seedline` command (its shebang:
 * bench/entry-point-env.ts). `--base DIR` runs the same sync with another build as well (DIR holds
 * its built dist/, say a worktree of the commit before), alternated with this one (A B, then B A)
 * `--repeat` times; peak RSS and CPU seconds are then the kernel's (`/usr/bin/time`), and each
 * row gives min and median, and the load average over its runs.
 */
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { returnFreedDuckDbMemory } from '../src/cli/duckdb-allocator.js';
import { formatTable } from '../src/cli/format-table.js';
import { SEEDLINE_NODE_FLAGS, SEEDLINE_START_ENV } from '../src/cli/process-start.js';
import { cliStartOf, type CliStart } from './entry-point-env.js';
import { median } from './stats.js';
import { timeStatements } from './statement-times.js';

const self = fileURLToPath(import.meta.url);
/** `--stream company_posts` measures a request stream over N parent rows instead of the profiles batch stream over N seeds. */
const STREAM = flag('stream', 'profiles');
/** `--refresh`: the figures of a second sync of the same seeds, with `--full-refresh`. */
const REFRESH = process.argv.includes('--refresh');
/** `--duckdb-tags`: DuckDB's memory by tag at the sync's largest RSS. */
const TAGS = process.argv.includes('--duckdb-tags');
/**
 * `SEEDS_MEMORY_TRACE=FILE` with `--duckdb-tags`: every reading appended to FILE as a JSON line, to
 * follow the tags through a sync beside the process's RSS and V8's `heapTotal`, `heapUsed` and
 * `external` (MB), and each statement that took over `TRACE_STATEMENT_MS` or failed
 * (`{ t, statement, ms, error }`, `t` when it ended).
 */
const TRACE = process.env.SEEDS_MEMORY_TRACE;
const TRACE_STATEMENT_MS = 100;
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
  /** DuckDB only: times the file was closed and opened again to give back DuckDB's native memory. */
  reopens?: number;
  /** DuckDB only: whether the sync worked on stored rows and took the full memory settings (see `DuckDbMemoryModes`). */
  widened?: boolean;
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
    const { rss, heapTotal, heapUsed, external } = process.memoryUsage();
    destination
      .query('select tag, memory_usage_bytes / 1048576 as mb from duckdb_memory() where memory_usage_bytes > 0')
      .then((rows) => {
        if (TRACE !== undefined)
          appendFileSync(
            TRACE,
            `${JSON.stringify({ t: Date.now(), rss: Math.round(rss / 2 ** 20), heapTotal: Math.round(heapTotal / 2 ** 20), heapUsed: Math.round(heapUsed / 2 ** 20), external: Math.round(external / 2 ** 20), ...Object.fromEntries(rows.map((r) => [String(r.tag), Math.round(Number(r.mb))])) })}\n`,
          );
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
  if (TRACE !== undefined && backend === 'duckdb') {
    const { DuckDbDestination } = await import('../src/destinations/duckdb/duckdb-destination.js');
    timeStatements(DuckDbDestination, (statement, ms, error) => {
      if (ms < TRACE_STATEMENT_MS && error === undefined) return;
      const line = { t: Date.now(), statement, ms: Math.round(ms), ...(error ? { error: String(error) } : {}) };
      appendFileSync(TRACE, `${JSON.stringify(line)}\n`);
    });
  }
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
  // Before anything else reads the destination: a DuckDB database closed by a failed checkpoint refuses every later statement.
  if (result.status !== 'succeeded')
    throw new Error(`run ${result.status} after ${seconds.toFixed(0)} s: ${JSON.stringify(result.streams)}`);
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
  const file = backend === 'duckdb' ? await openFileState(join(dir, 'bench.duckdb')) : undefined;
  if (backend === 'postgres') await destination.query(`drop schema "${destinationConfig.schema}" cascade`);
  await client.close();
  await destination.close();
  clearInterval(sampler);
  const figures: RunFigures = {
    records: result.streams.reduce((n, s) => n + s.records, 0),
    seconds,
    calls,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    peakHeapMb: peakHeap / 2 ** 20,
    atPeakMb: Object.fromEntries(Object.entries(atPeak).map(([k, v]) => [k, Math.round(v / 2 ** 20)])),
    ...(duckDbOwnMb === undefined ? {} : { duckDbOwnMb }),
    ...(file === undefined ? {} : file),
    ...(duckDbTagsAtPeak ? { duckDbTagsAtPeak } : {}),
  };
  process.stdout.write(`${JSON.stringify(figures)}\n`);
}

/** How often this process reopened the DuckDB file, and whether it widened its memory (the open file is shared in the process). */
async function openFileState(path: string): Promise<{ reopens: number; widened: boolean }> {
  const { duckDbFileLock } = await import('../src/destinations/duckdb/duckdb-file-lock.js');
  const file = await duckDbFileLock.open(path);
  try {
    return { reopens: file.connections.reopened, widened: file.connections.widened };
  } finally {
    duckDbFileLock.release(file);
  }
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

/** A build whose sync is measured: this one, or `--base`'s. */
interface Build {
  name: 'this' | 'base';
  /** Its seeds-memory bench, which runs the sync child. */
  script: string;
  /** What its `seedline` command starts with. */
  start: CliStart;
}

/** This build: this file, and the start settings of its `seedline` command. */
const THIS_BUILD: Build = {
  name: 'this',
  script: self,
  start: { env: { ...SEEDLINE_START_ENV }, nodeArgs: [...SEEDLINE_NODE_FLAGS] },
};

/** Another commit's build, in `root` (its dist/ built with the bench). */
function baseBuild(root: string): Build {
  return {
    name: 'base',
    script: join(root, 'dist/bench/seeds-memory.js'),
    start: cliStartOf(join(root, 'dist/src/cli/main.js')),
  };
}

/** The kernel's figures of a finished child (`/usr/bin/time`). */
interface KernelFigures {
  peakRssMb: number;
  cpuS: number;
}

/**
 * Starts `script` (this file unless given) as a child with `args`; resolves with its first stdout
 * line (the child goes on running). With `timeFile` the child runs under `/usr/bin/time`, which
 * writes its peak RSS and CPU seconds there when it ends.
 */
function child(
  args: string[],
  options: { nodeArgs?: string[]; script?: string; start?: CliStart; timeFile?: string } = {},
): Promise<{ line: string; done: Promise<number | null>; kill: () => void }> {
  const { nodeArgs = [], script = self, start, timeFile } = options;
  const argv = [...(start?.nodeArgs ?? []), ...process.execArgv, ...nodeArgs, script, ...args];
  // The sync child gets the allocator options the `seedline` entry point gives libduckdb (src/cli/duckdb-allocator.ts).
  const env = returnFreedDuckDbMemory({ ...process.env, ...start?.env });
  const proc = timeFile
    ? spawn('/usr/bin/time', ['-o', timeFile, '-f', '%M %U %S', process.execPath, ...argv], {
        stdio: ['ignore', 'pipe', 'inherit'],
        env,
      })
    : spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'inherit'], env });
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

async function kernelFigures(timeFile: string): Promise<KernelFigures> {
  const [maxRssKb, user, sys] = (await readFile(timeFile, 'utf8')).trim().split(/\s+/).map(Number);
  return { peakRssMb: maxRssKb! / 1024, cpuS: user! + sys! };
}

/** One sync of `seeds` seeds by `build`, with a sandbox and a working folder of its own. */
async function measure(seeds: number, build: Build, timed: boolean): Promise<RunFigures & Partial<KernelFigures>> {
  const dir = await mkdtemp(join(tmpdir(), 'seedline-bench-seeds-'));
  // The sandbox keeps every result it served: a million profiles outgrow V8's default heap limit.
  const sandbox = await child(['--serve'], { nodeArgs: ['--max-old-space-size=12288'] });
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
    const timeFile = join(dir, 'time.txt');
    const options = { script: build.script, start: build.start, ...(timed ? { timeFile } : {}) };
    // `SEEDS_MEMORY_FROM=FILE` with `--refresh`: the refresh starts from a copy of a file an earlier first sync of the same N left.
    const from = REFRESH ? process.env.SEEDS_MEMORY_FROM : undefined;
    let run = from ? undefined : await child(args, options);
    await run?.done;
    if (from) await copyFile(from, join(dir, 'bench.duckdb'));
    // `SEEDS_MEMORY_KEEP=FILE`: a copy of the file the (first) sync left, for bench/settle-memory.ts.
    else if (process.env.SEEDS_MEMORY_KEEP) await copyFile(join(dir, 'bench.duckdb'), process.env.SEEDS_MEMORY_KEEP);
    if (REFRESH) {
      if (run) process.stderr.write(`first sync: ${run.line}\n`);
      run = await child([...args, '--full-refresh'], options);
      await run.done;
    }
    const figures = JSON.parse(run!.line) as RunFigures;
    return timed ? { ...figures, ...(await kernelFigures(timeFile)) } : figures;
  } finally {
    sandbox.kill();
    await sandbox.done;
    await rm(dir, { recursive: true, force: true });
  }
}

/** A sync's figures and the load average (1 min) when it started. */
type Measured = RunFigures & Partial<KernelFigures> & { load: number };

/** `--base DIR`: each N synced by both builds, alternated, `--repeat` times; min and median of each. */
async function compareBuilds(counts: number[], base: string): Promise<void> {
  const builds = [THIS_BUILD, baseBuild(base)];
  const repeat = Number(flag('repeat', '1'));
  const rows: Record<string, unknown>[] = [];
  for (const seeds of counts) {
    const runs = new Map<Build['name'], Measured[]>(builds.map((b) => [b.name, []]));
    for (let r = 0; r < repeat; r++)
      for (const build of r % 2 === 0 ? builds : [...builds].reverse()) {
        const load = loadavg()[0]!;
        const f = await measure(seeds, build, true);
        runs.get(build.name)!.push({ ...f, load });
        process.stderr.write(`${JSON.stringify({ seeds, build: build.name, load, ...f })}\n`);
      }
    for (const [name, list] of runs) {
      const fig = (pick: (f: Measured) => number) => {
        const values = list.map(pick);
        return `${Math.min(...values).toFixed(1)} / ${median(values).toFixed(1)}`;
      };
      rows.push({
        seeds,
        build: name,
        runs: list.length,
        'peak_rss_mb min / median': fig((f) => f.peakRssMb!),
        'cpu_s min / median': fig((f) => f.cpuS!),
        'wall_s min / median': fig((f) => f.seconds),
        peak_heap_mb: Math.round(median(list.map((f) => f.peakHeapMb))),
        load: `${Math.min(...list.map((f) => f.load)).toFixed(1)}-${Math.max(...list.map((f) => f.load)).toFixed(1)}`,
      });
    }
  }
  process.stdout.write(
    `sandbox at zero latency in its own process; ${describeRun()}, ${flag('backend', 'duckdb')}; this build against ${base}, alternated\n\n${formatTable(rows)}\n`,
  );
}

function describeRun(): string {
  if (STREAM === 'company_posts') return 'company_posts request stream over N parent companies, one page each';
  return `profiles batch stream, CSV seeds${REFRESH ? ', the second sync (--full-refresh) of the same seeds' : ''}`;
}

async function main(): Promise<void> {
  if (REFRESH && (flag('backend', 'duckdb') !== 'duckdb' || STREAM !== 'profiles'))
    throw new Error('--refresh measures the DuckDB profiles stream: drop --backend postgres and --stream');
  const counts = flag('profiles', '10000,100000,1000000').split(',').map(Number);
  const base = flag('base', '');
  if (base) return compareBuilds(counts, base);
  const rows: Record<string, unknown>[] = [];
  let first: number | undefined;
  const tagLines: string[] = [];
  for (const seeds of counts) {
    const f = await measure(seeds, THIS_BUILD, false);
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
      ...(f.reopens === undefined ? {} : { reopens: f.reopens }),
      ...(f.widened === undefined ? {} : { widened: f.widened }),
    });
    if (f.duckDbTagsAtPeak) tagLines.push(`${seeds}: ${JSON.stringify(f.duckDbTagsAtPeak)}`);
    process.stderr.write(
      `${JSON.stringify({ ...rows.at(-1), at_peak_mb: f.atPeakMb, duckdb_tags_at_peak: f.duckDbTagsAtPeak })}\n`,
    );
  }
  process.stdout.write(
    `sandbox at zero latency in its own process; ${describeRun()}, ${flag('backend', 'duckdb')}\n\n${formatTable(rows)}\n`,
  );
  if (tagLines.length > 0)
    process.stdout.write(`\nduckdb_memory() by tag (MB) at the largest RSS read:\n${tagLines.join('\n')}\n`);
}

if (process.argv.includes('--serve')) await serveSandbox();
else if (process.argv.includes('--run')) {
  const at = process.argv.indexOf('--run');
  await runSyncChild(process.argv[at + 1]!, process.argv[at + 2]!);
} else await main();

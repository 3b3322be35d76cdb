/**
 * Pages asked by single calls (`via: calls`) against batch rounds (`via: batch`), per stream kind.
 *
 *   npx tsx bench/rounds.ts [--partitions 200] [--latency 200] [--rpm 600] [--repeat 3] [--pages 2]
 *
 * For each case (activity over P profiles, `pages` pages each; jobs over P/10 companies) the two
 * modes run alternately `repeat` times against a sandbox with the given latency per scrape and
 * rate limit (batch items resolve 10 at a time per job, 5 jobs at once, as bench/sync.ts). Prints
 * min and median wall time of each mode, requests sent, and the credits billed (equal in both).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient, type ClientEvent } from '../src/client/index.js';
import { formatTable } from '../src/cli/format-table.js';
import { parseConfig } from '../src/config/load-config.js';
import { createDestination } from '../src/destinations/create-destination.js';
import { prepareSync, runSync } from '../src/engine/pipeline.js';
import type { Reporter } from '../src/engine/stream-context.js';
import { loadManifests } from '../src/manifest/load-manifests.js';
import { startSandbox } from '../src/sandbox/index.js';

function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}

const partitions = flag('partitions', 200);
const latencyMs = flag('latency', 200);
const rpm = flag('rpm', 600);
const repeat = flag('repeat', 3);
const pages = flag('pages', 2);
const silent: Reporter = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };
const KEY = 'svc_live_bench_rounds';

interface Case {
  name: string;
  stream: 'activity' | 'jobs';
  seeds: { profiles?: string[]; companies?: string[] };
  /** The streams that load the parents, timed apart. */
  parents: string[];
  options: Record<string, unknown>;
}

const cases: Case[] = [
  {
    name: `activity: ${partitions} profiles × ${pages} pages`,
    stream: 'activity',
    seeds: {
      profiles: Array.from({ length: partitions }, (_, i) => `https://www.network.example/in/rounds-person-${i}`),
    },
    parents: ['profiles'],
    options: { kinds: ['posts'], max_pages: pages },
  },
  {
    name: `jobs: ${Math.ceil(partitions / 10)} companies`,
    stream: 'jobs',
    seeds: {
      companies: Array.from(
        { length: Math.ceil(partitions / 10) },
        (_, i) => `https://www.network.example/company/rounds-co-${i}`,
      ),
    },
    parents: [],
    options: { max_results: 10 },
  },
];

/** One timed run of a case's stream in one mode, its parents loaded first (not timed). */
async function timeOnce(
  c: Case,
  via: 'calls' | 'batch',
): Promise<{ seconds: number; requests: number; credits: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'seedline-bench-rounds-'));
  const sandbox = await startSandbox({
    latencyMs: [latencyMs, latencyMs],
    rpm,
    concurrentBatchJobs: 5,
    batchItemConcurrency: 10,
  });
  const destination = await createDestination({ type: 'duckdb', path: join(dir, 'b.duckdb'), schema: 'seedline' });
  let requests = 0;
  const onEvent = (e: ClientEvent) => void (e.type === 'response' && requests++);
  const client = await ApiClient.connect({ baseUrl: sandbox.url, apiKey: KEY, onEvent });
  try {
    await destination.lock({ holder: 'bench' });
    await destination.ensureSystemTables();
    const streams = {
      ...Object.fromEntries(c.parents.map((parent) => [parent, {}])),
      [c.stream]: { ...c.options, via },
    };
    const config = parseConfig(
      JSON.stringify({
        api: { base_url: sandbox.url, api_key: KEY },
        destination: { type: 'duckdb', path: 'b.duckdb' },
        seeds: c.seeds,
        streams,
        batch: { poll_interval_ms: 200 },
        // Every unit is fetched: no run budget short of the work (the default is 1,000 credits).
        budget: { max_credits_per_run: 100_000_000 },
      }),
      'bench',
    );
    const manifests = await loadManifests();
    const run = async (only: string[]) =>
      runSync(await prepareSync({ config, baseDir: dir, manifests, destination, only }), {
        client,
        reporter: silent,
        concurrentBatchJobs: 5,
      });
    if (c.parents.length > 0) await run(c.parents);
    const billedBefore = sandbox.ledger.totalBilled();
    requests = 0;
    const started = performance.now();
    const result = await run([c.stream]);
    const seconds = (performance.now() - started) / 1000;
    if (result.status !== 'succeeded')
      throw new Error(`${c.name} via ${via}: ${result.status} ${JSON.stringify(result.streams[0]?.errors)}`);
    return { seconds, requests, credits: sandbox.ledger.totalBilled() - billedBefore };
  } finally {
    await client.close();
    await destination.close();
    await sandbox.close();
    await rm(dir, { recursive: true, force: true });
  }
}

const rows: Record<string, unknown>[] = [];
for (const c of cases) {
  const times = { calls: [] as number[], batch: [] as number[] };
  const last = { calls: { requests: 0, credits: 0 }, batch: { requests: 0, credits: 0 } };
  for (let i = 0; i < repeat; i++) {
    for (const via of i % 2 === 0 ? (['calls', 'batch'] as const) : (['batch', 'calls'] as const)) {
      const measured = await timeOnce(c, via);
      times[via].push(measured.seconds);
      last[via] = measured;
    }
  }
  for (const via of ['calls', 'batch'] as const) {
    const sorted = [...times[via]].sort((a, b) => a - b);
    rows.push({
      case: c.name,
      via,
      min_s: sorted[0]!.toFixed(2),
      median_s: sorted[Math.floor(sorted.length / 2)]!.toFixed(2),
      requests: last[via].requests,
      credits: last[via].credits,
    });
  }
}
process.stdout.write(
  `latency ${latencyMs} ms per scrape, ${rpm} requests/min, 16 calls in flight; batch: 5 jobs × 10 items at once; ${repeat} runs each, alternated\n\n`,
);
process.stdout.write(`${formatTable(rows)}\n`);

/**
 * Sync throughput against the sandbox with realistic latency and rate limit.
 *
 *   npx tsx bench/sync.ts [--profiles 5000] [--partitions 600] [--latency 200] [--rpm 600]
 *
 * Part 1: N profiles by batch (items resolve 10 at a time per job, 5 jobs at once).
 * Part 2: P activity partitions (one page each, single calls, each answer journaled) under the rate limit.
 * Prints wall time against the bound max(N / rate, N × latency / concurrency) and the 429s seen,
 * split into the first minute and after it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient, type ClientEvent } from '../src/client/index.js';
import { parseConfig } from '../src/config/load-config.js';
import { createDestination } from '../src/destinations/create-destination.js';
import type { Reporter } from '../src/engine/stream-context.js';
import { prepareSync, runSync } from '../src/engine/pipeline.js';
import { loadManifests } from '../src/manifest/load-manifests.js';
import { startSandbox } from '../src/sandbox/index.js';
import { formatTable } from '../src/cli/format-table.js';

function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}

const profiles = flag('profiles', 5000);
const partitions = flag('partitions', 600);
const latencyMs = flag('latency', 200);
const rpm = flag('rpm', 600);
const batchItemConcurrency = 10;
const concurrentBatchJobs = 5;
const requestConcurrency = 16;
const silent: Reporter = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };

interface Measured {
  part: string;
  units: number;
  seconds: number;
  bound: number;
  ratio: number;
  calls: number;
  r429_first_min: number;
  r429_after: number;
}

async function measure(part: string, seeds: string[], streams: Record<string, unknown>, only: string[], bound: number, dir: string): Promise<Measured> {
  const sandbox = await startSandbox({ latencyMs: [latencyMs, latencyMs], rpm, concurrentBatchJobs, batchItemConcurrency });
  const events: { at: number; status: number }[] = [];
  const onEvent = (e: ClientEvent) => e.type === 'response' && events.push({ at: Date.now(), status: e.status });
  const config = parseConfig(
    JSON.stringify({
      api: { base_url: sandbox.url, api_key: 'svc_test_bench', max_concurrency: requestConcurrency },
      destination: { type: 'duckdb', path: join(dir, 'bench.duckdb') },
      seeds: { profiles: seeds },
      streams,
      batch: { chunk_size: 1000, poll_interval_ms: 500 },
    }),
    'bench',
  );
  const destination = await createDestination({ type: 'duckdb', path: join(dir, 'bench.duckdb'), schema: 'seedline' });
  await destination.lock({ holder: 'bench' });
  await destination.ensureSystemTables();
  const client = await ApiClient.connect({ baseUrl: sandbox.url, apiKey: 'svc_test_bench', onEvent });
  const manifests = await loadManifests();
  const started = Date.now();
  const prepared = await prepareSync({ config, baseDir: dir, manifests, destination, only });
  const result = await runSync(prepared, { client, reporter: silent, concurrentBatchJobs });
  const seconds = (Date.now() - started) / 1000;
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
    ratio: round(seconds / bound),
    calls: events.length,
    r429_first_min: r429.filter((e) => e.at - started < 60_000).length,
    r429_after: r429.filter((e) => e.at - started >= 60_000).length,
  };
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

const dir = await mkdtemp(join(tmpdir(), 'seedline-bench-sync-'));
try {
  const seeds = Array.from({ length: profiles }, (_, i) => `https://www.network.example/in/bench-person-${i}`);
  const batchItemsPerSecond = (batchItemConcurrency * concurrentBatchJobs * 1000) / latencyMs;
  const batch = await measure('profiles by batch', seeds, { profiles: {} }, ['profiles'], profiles / batchItemsPerSecond, join(dir));

  // Activity partitions come from loaded profiles: load P of them first (not timed), then time activity alone.
  const partDir = await mkdtemp(join(dir, 'activity-'));
  await measure('(setup)', seeds.slice(0, partitions), { profiles: {} }, ['profiles'], 1, partDir);
  const perSecond = rpm / 60;
  const activityBound = Math.max(partitions / perSecond, (partitions * latencyMs) / 1000 / requestConcurrency);
  const activity = await measure(
    'activity, single calls',
    seeds.slice(0, partitions),
    { profiles: {}, activity: { kinds: ['posts'], max_pages: 1, via: 'calls' } },
    ['activity'],
    activityBound,
    partDir,
  );
  process.stdout.write(`latency ${latencyMs} ms, ${rpm} requests/min, ${requestConcurrency} calls in flight, batch: ${concurrentBatchJobs} jobs × ${batchItemConcurrency} items\n\n`);
  process.stdout.write(`${formatTable([batch, activity] as unknown as Record<string, unknown>[])}\n`);
} finally {
  await rm(dir, { recursive: true, force: true });
}

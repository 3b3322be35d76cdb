/**
 * Workers on one Postgres warehouse against the sandbox's rate limit: wall / bound for fleets of
 * W workers on K keys, alternated, with the load average.
 *
 *   npm run build && npx tsc -p tsconfig.bench.json
 *   node dist/bench/workers.js [--partitions 1300] [--rpm 600] [--latency 200] [--repeat 2] [--fleets 1x1,2x1,4x1,2x2,4x2]
 *
 * Work: P activity partitions (one page each, a billed single call), their profiles loaded first
 * (untimed, by another key). A fleet "WxK" is W `seedline worker --until-idle` processes sharing K
 * keys, started together; its wall runs from the first start to the last exit (process starts
 * included). The bound is the rate bound of the sandbox's sliding window for the calls each key
 * made, as the items' runs counted them (the fewest calls C of a key take floor((C - 1) / rpm) windows of 59 s), or the latency
 * bound when larger: more workers on one key cannot move it (a gain must come from overlap, not
 * from overshooting the key's rate), two keys halve it. CPU seconds and the largest peak RSS of the
 * workers come from /usr/bin/time; 429s from the sandbox.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import pg from 'pg';
import { formatTable } from '../src/cli/format-table.js';
import { postgresConnection } from '../src/destinations/postgres/postgres-connection.js';
import { startSandbox, type Sandbox } from '../src/sandbox/index.js';
import { keyFingerprint } from '../src/util/key-fingerprint.js';
import { median } from './stats.js';

function flag(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1]! : fallback;
}

const partitions = Number(flag('partitions', '1300'));
const rpm = Number(flag('rpm', '600'));
const latencyMs = Number(flag('latency', '200'));
const repeat = Number(flag('repeat', '2'));
const fleets = flag('fleets', '1x1,2x1,4x1,2x2,4x2')
  .split(',')
  .map((f) => f.split('x').map(Number) as [number, number]);
const url = process.env.SEEDLINE_TEST_PG_URL ?? 'postgres://127.0.0.1:5432/test';
const cli = resolve(import.meta.dirname, '../src/cli/main.js');
const concurrency = 16;

interface Trial {
  fleet: string;
  seconds: number;
  bound: number;
  ratio: number;
  calls: number;
  r429: number;
  cpu_s: number;
  max_rss_mb: number;
  load: number;
}

const seeds = Array.from({ length: partitions }, (_, i) => `https://www.network.example/in/bench-person-${i}`);

/** Runs the CLI under /usr/bin/time; resolves with its exit code, wall, CPU and peak RSS. */
function timed(args: string[]): Promise<{ code: number | null; cpu: number; rssMb: number; stderr: string }> {
  return new Promise((done) => {
    const child = spawn('/usr/bin/time', ['-f', 'TIME %U %S %M', process.execPath, cli, ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code) => {
      const [user, sys, rss] = (/TIME (\S+) (\S+) (\d+)/.exec(stderr) ?? []).slice(1).map(Number);
      done({ code, cpu: (user ?? 0) + (sys ?? 0), rssMb: (rss ?? 0) / 1024, stderr });
    });
  });
}

/**
 * Calls each key made, as the items' runs counted them (`requests` of each stream outcome): the
 * sandbox's ledger lists only billed calls, and a page with nothing on it bills nothing but still
 * counts against the rate.
 */
async function callsByKey(schema: string, keys: readonly string[]): Promise<number[]> {
  const client = new pg.Client(postgresConnection(url));
  await client.connect();
  try {
    const result = await client.query<{ key_id: string; streams: string }>(
      `select w.key_id, r.streams::text as streams from "${schema}"._seedline_fleet_work w
         join "${schema}"._seedline_runs r on r.run_id = w.run_id`,
    );
    return keys.map((key) =>
      result.rows
        .filter((row) => row.key_id === keyFingerprint(key))
        .reduce(
          (n, row) =>
            n + (JSON.parse(row.streams) as { requests?: number }[]).reduce((m, s) => m + (s.requests ?? 0), 0),
          0,
        ),
    );
  } finally {
    await client.end();
  }
}

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client(postgresConnection(url));
  await client.connect();
  await client.query(`drop schema if exists "${schema}" cascade`);
  await client.end();
}

/** The rate bound of C calls of one key in the sandbox's window, or the latency bound when larger. */
function bound(callsPerKey: readonly number[], workers: number): number {
  const rate = Math.max(...callsPerKey.map((c) => Math.floor(Math.max(0, c - 1) / rpm) * 59));
  const calls = callsPerKey.reduce((n, c) => n + c, 0);
  return Math.max(rate, (calls * latencyMs) / 1000 / (concurrency * workers));
}

async function trial(workers: number, keyCount: number, dir: string): Promise<Trial> {
  const sandbox: Sandbox = await startSandbox({ latencyMs: [latencyMs, latencyMs], rpm, concurrentBatchJobs: 5 });
  const schema = `bench_workers_${process.pid}`;
  await dropSchema(schema);
  try {
    const base = {
      destination: { type: 'postgres', url, schema },
      seeds: { profiles: seeds },
      batch: { poll_interval_ms: 50 },
      budget: { max_credits_per_run: 100_000 },
    };
    const setup = join(dir, 'setup.yaml');
    await writeFile(
      setup,
      stringify({ ...base, api: { base_url: sandbox.url, api_key: 'svc_live_setup' }, streams: { profiles: {} } }),
    );
    const loaded = await timed(['sync', '--config', setup]);
    if (loaded.code !== 0) throw new Error(`setup sync failed:\n${loaded.stderr}`);
    const keys = Array.from({ length: keyCount }, (_, i) => `svc_live_bench_${i}`);
    const config = join(dir, 'fleet.yaml');
    await writeFile(
      config,
      stringify({
        ...base,
        api: { base_url: sandbox.url, keys: keys.map((api_key) => ({ api_key })), max_concurrency: concurrency },
        streams: { profiles: { refresh_after: '7d' }, activity: { kinds: ['posts'], max_pages: 1, via: 'calls' } },
      }),
    );
    const started = Date.now();
    const runs = await Promise.all(
      Array.from({ length: workers }, (_, i) =>
        timed(['worker', '--config', config, '--until-idle', '--id', `bench-${i}`, '--shards', '8']),
      ),
    );
    const seconds = (Date.now() - started) / 1000;
    const failed = runs.find((r) => r.code !== 0);
    if (failed) throw new Error(`a worker failed:\n${failed.stderr}`);
    const callsPerKey = await callsByKey(schema, keys);
    const b = bound(callsPerKey, workers);
    return {
      fleet: `${workers} workers, ${keyCount} key${keyCount > 1 ? 's' : ''}`,
      seconds: round(seconds),
      bound: round(b),
      ratio: round(seconds / b),
      calls: callsPerKey.reduce((n, c) => n + c, 0),
      r429: sandbox.rateLimitedAnswers,
      cpu_s: round(runs.reduce((n, r) => n + r.cpu, 0)),
      max_rss_mb: Math.round(Math.max(...runs.map((r) => r.rssMb))),
      load: round(loadavg()[0]!),
    };
  } finally {
    await sandbox.close();
    await dropSchema(schema);
  }
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

const dir = await mkdtemp(join(tmpdir(), 'seedline-bench-workers-'));
const trials: Trial[] = [];
try {
  // Alternated: every fleet once per repeat, in turn, so a noisy stretch of the machine hits all.
  for (let r = 0; r < repeat; r++)
    for (const [workers, keys] of fleets) {
      const t = await trial(workers, keys, dir);
      trials.push(t);
      process.stdout.write(`${JSON.stringify(t)}\n`);
    }
} finally {
  await rm(dir, { recursive: true, force: true });
}
const summary = fleets.map(([w, k]) => {
  const of = trials.filter((t) => t.fleet.startsWith(`${w} workers, ${k} key`));
  const ratios = of.map((t) => t.ratio);
  return {
    fleet: of[0]!.fleet,
    bound_s: of[0]!.bound,
    wall_min_s: Math.min(...of.map((t) => t.seconds)),
    wall_median_s: round(median(of.map((t) => t.seconds))),
    ratio_min: Math.min(...ratios),
    ratio_median: round(median(ratios)),
    cpu_s_median: round(median(of.map((t) => t.cpu_s))),
    max_rss_mb: Math.max(...of.map((t) => t.max_rss_mb)),
    r429: of.reduce((n, t) => n + t.r429, 0),
    load: of.map((t) => t.load).join('/'),
  };
});
process.stdout.write(
  `\n${partitions} activity partitions (1 call each), rpm ${rpm} a key, latency ${latencyMs} ms, ${repeat} runs a fleet, alternated\n${formatTable(summary)}\n`,
);

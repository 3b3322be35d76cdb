/**
 * Time of `seedline report` on a warehouse of N profiles (default 100k): builds a DuckDB file
 * through the destination (profiles, their seed ledger with 1% failed, 30 daily runs, account
 * snapshots, rejected records), then runs the report command on it `--runs` times (default 3),
 * printing min and median wall time, the page size and the process's peak RSS.
 *
 *   npx tsx bench/report.ts [--profiles 100000] [--runs 3]
 *   node dist/bench/report.js …   (compiled by `npm run bench`: it then times the compiled CLI)
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { Profile } from '../schemas/profile.js';
import { createDestination } from '../src/destinations/create-destination.js';
import type { Destination, SeedRow } from '../src/destinations/destination.js';

const ROOT = resolve(import.meta.dirname, '..');
/** The CLI as this bench runs: compiled beside it (dist/bench → dist/src), or from the sources under tsx. */
const CLI = import.meta.filename.endsWith('.ts')
  ? ['--import', 'tsx', join(ROOT, 'src/cli/main.ts')]
  : [join(ROOT, 'src/cli/main.js')];
const args = new Map(
  process.argv.slice(2).flatMap((arg, i, all) => (arg.startsWith('--') ? [[arg.slice(2), all[i + 1] ?? '']] : [])),
);
const PROFILES = Number(args.get('profiles') ?? 100_000);
const RUNS = Number(args.get('runs') ?? 3);
const DAY = 86_400_000;

const dir = await mkdtemp(join(tmpdir(), 'seedline-bench-report-'));
try {
  const path = join(dir, 'w.duckdb');
  const built = Date.now();
  await fill(await createDestination({ type: 'duckdb', path }));
  process.stdout.write(
    `warehouse of ${PROFILES.toLocaleString('en-US')} profiles built in ${((Date.now() - built) / 1000).toFixed(1)} s (${((await stat(path)).size / 1e6).toFixed(0)} MB)\n`,
  );
  const config = join(dir, 'seedline.yaml');
  await writeFile(
    config,
    `api: { base_url: sandbox, api_key: svc_test_bench }\ndestination: { type: duckdb, path: w.duckdb }\nseeds: { profiles: { sql: "select url from seedline.profiles" } }\nstreams: { profiles: {}, account: {} }\nbudget: { max_credits_per_run: 50000, keep_balance: 1000 }\n`,
  );
  const times: number[] = [];
  const peaks: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const started = process.hrtime.bigint();
    const result = spawnSync(
      '/usr/bin/time',
      ['-f', '%M', process.execPath, ...CLI, 'report', '--config', config, '--out', join(dir, 'report.html')],
      { encoding: 'utf8' },
    );
    times.push(Number(process.hrtime.bigint() - started) / 1e9);
    if (result.status !== 0) throw new Error(`report failed: ${result.stderr}`);
    peaks.push(Number(result.stderr.trim().split('\n').pop()) / 1024);
  }
  const sorted = [...times].sort((a, b) => a - b);
  const page = (await stat(join(dir, 'report.html'))).size;
  process.stdout.write(
    `seedline report, ${RUNS} runs (whole process, ${CLI.length > 1 ? 'from the sources under tsx' : 'compiled'}): min ${sorted[0]!.toFixed(2)} s, median ${sorted[Math.floor(RUNS / 2)]!.toFixed(2)} s; ` +
      `page ${(page / 1024).toFixed(0)} KB; peak RSS median ${[...peaks].sort((a, b) => a - b)[Math.floor(RUNS / 2)]!.toFixed(0)} MB\n`,
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}

/** Profiles, their ledger (1% failed), 30 daily runs, account snapshots and some rejected records. */
async function fill(destination: Destination): Promise<void> {
  try {
    await destination.lock({ holder: 'bench/report' });
    await destination.ensureSystemTables();
    await destination.ensureTable({ name: 'profiles', schema: Profile, primaryKey: ['url'], writeMode: 'merge' });
    await destination.ensureTable({
      name: 'account',
      schema: z.looseObject({ credits_remaining: z.number(), snapshot_at: z.string() }),
      primaryKey: [],
      writeMode: 'append',
    });
    const now = Date.now();
    for (let from = 0; from < PROFILES; from += 10_000) {
      const count = Math.min(10_000, PROFILES - from);
      const unit = await destination.beginUnit(`run_fill_${from}`);
      const seeds: SeedRow[] = [];
      const records = Array.from({ length: count }, (_, i) => {
        const n = from + i;
        const failed = n % 100 === 0;
        seeds.push({
          stream: 'profiles',
          seedKey: `person-${n}`,
          seed: `person-${n}`,
          status: failed ? 'failed' : 'fetched',
          canonicalUrl: null,
          jobId: null,
          credits: 1,
          fetchedAt: new Date(now - (n % 30) * DAY),
          error: failed ? 'unprocessable_target: target is private' : null,
        });
        return {
          url: `https://network.example/in/person-${n}`,
          public_identifier: `person-${n}`,
          urn: `urn:${n}`,
          full_name: `Person ${n}`,
          headline: `Engineer #${n}`,
          positions: [{ title: 'Engineer', company: 'Acme' }],
          scraped_at: new Date(now - (n % 30) * DAY).toISOString(),
        };
      });
      await unit.write('profiles', records);
      await unit.saveSeeds(seeds);
      await unit.commit();
    }
    for (let day = 30; day >= 1; day--) {
      const startedAt = new Date(now - day * DAY);
      const credits = Math.round(PROFILES / 30);
      await destination.saveRun({
        runId: `run_${day}`,
        startedAt,
        finishedAt: new Date(startedAt.getTime() + 600_000),
        status: 'succeeded',
        streams: JSON.stringify([
          { stream: 'profiles', credits, records: credits },
          { stream: 'account', credits: 0, records: 1 },
        ]),
        creditsEstimated: credits,
        creditsUsed: credits,
      });
      const unit = await destination.beginUnit(`run_${day}`);
      await unit.write('account', [
        { credits_remaining: 1_000_000 - (30 - day) * credits, snapshot_at: startedAt.toISOString() },
      ]);
      await unit.reject(
        Array.from({ length: 3 }, (_, i) => ({
          runId: `run_${day}`,
          stream: 'profiles',
          table: 'profiles',
          record: JSON.stringify({ url: null, n: i }),
          reason: 'primary-key column url is null',
        })),
      );
      await unit.commit();
    }
  } finally {
    await destination.close();
  }
}

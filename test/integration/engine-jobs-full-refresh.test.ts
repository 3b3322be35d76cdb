import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/index.js';
import { parseConfig } from '../../src/config/load-config.js';
import { createDestination } from '../../src/destinations/create-destination.js';
import type { Destination } from '../../src/destinations/destination.js';
import { prepareSync, runSync, type RunResult } from '../../src/engine/pipeline.js';
import type { Reporter } from '../../src/engine/stream-context.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import { startSandbox } from '../../src/sandbox/index.js';

const silent: Reporter = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };
const KEY = 'svc_live_engine_jobs_full_refresh';
const HOUR = 3_600_000;

interface Bench {
  destination: Destination;
  /** Runs a sync as `seedline sync` does, at the given engine time, with or without `--full-refresh`. */
  sync(streams: Record<string, unknown>, opts: { now: Date; fullRefresh?: boolean }): Promise<RunResult>;
  /** Urls of the jobs table, sorted. */
  jobUrls(): Promise<string[]>;
}

/** A live-billing sandbox, a DuckDB destination and the real client over loopback. */
async function withBench(body: (bench: Bench) => Promise<void>): Promise<void> {
  const sandbox = await startSandbox({ rpm: 100_000 });
  const dir = await mkdtemp(join(tmpdir(), 'seedline-jobs-full-refresh-'));
  const destination = await createDestination({ type: 'duckdb', path: join(dir, 'w.duckdb'), schema: 'seedline' });
  const client = await ApiClient.connect({ baseUrl: sandbox.url, apiKey: KEY });
  try {
    await destination.ensureSystemTables();
    await body({
      destination,
      async sync(streams, { now, fullRefresh }) {
        const raw = {
          api: { base_url: sandbox.url, api_key: KEY },
          destination: { type: 'duckdb', path: 'w.duckdb' },
          seeds: {},
          streams,
        };
        const prepared = await prepareSync({
          config: parseConfig(JSON.stringify(raw), 'test'),
          baseDir: dir,
          manifests: await loadManifests(),
          destination,
          now: () => now,
          ...(fullRefresh ? { fullRefresh: true } : {}),
        });
        const account = (await client.getAccount()).data as { credits_remaining: number };
        return runSync(prepared, { client, reporter: silent, balance: account.credits_remaining });
      },
      async jobUrls() {
        return (await destination.query<{ url: string }>('select url from seedline.jobs order by url')).map(
          (r) => r.url,
        );
      },
    });
  } finally {
    await client.close();
    await destination.close();
    await sandbox.close();
  }
}

describe('jobs under --full-refresh', () => {
  it('given a jobs table emptied after a first run, when a full refresh syncs it a day later, then it gets every posting the first run got, not only those since the last run', async () => {
    await withBench(async (bench) => {
      const streams = { jobs: { keywords: ['data engineer'], per_company: false } };
      const day0 = new Date('2026-11-01T00:00:00Z');
      expect((await bench.sync(streams, { now: day0 })).status).toBe('succeeded');
      const firstRun = await bench.jobUrls();
      expect(firstRun.length).toBeGreaterThan(0);

      await bench.destination.query('delete from seedline.jobs');
      expect((await bench.sync(streams, { now: new Date(day0.getTime() + 30 * HOUR), fullRefresh: true })).status).toBe(
        'succeeded',
      );

      expect(await bench.jobUrls()).toEqual(firstRun);
    });
  });

  it('given a jobs table synced, when a full refresh loads the same postings again, then each posting has one row, loaded by the refresh, and no pending list is left', async () => {
    await withBench(async (bench) => {
      const streams = { jobs: { keywords: ['data engineer'], per_company: false } };
      const day0 = new Date('2026-11-01T00:00:00Z');
      const first = await bench.sync(streams, { now: day0 });
      const firstRun = await bench.jobUrls();
      const refresh = await bench.sync(streams, { now: new Date(day0.getTime() + 30 * HOUR), fullRefresh: true });
      expect(refresh.status).toBe('succeeded');

      // Every posting merged again (DuckDB lists their keys and deletes the rows they replace when the stream ends).
      expect(await bench.jobUrls()).toEqual(firstRun);
      const runs = await bench.destination.query<{ run_id: string; n: number }>(
        'select _run_id as run_id, count(*) as n from seedline.jobs group by _run_id',
      );
      expect(runs.map((r) => [r.run_id, Number(r.n)])).toEqual([[refresh.runId, firstRun.length]]);
      expect(first.runId).not.toBe(refresh.runId);
      expect(await bench.destination.hasTable('_seedline_pending__jobs')).toBe(false);
    });
  });

  it('given a jobs table synced a day ago, when a normal run syncs it, then it still asks only for postings since the last run', async () => {
    await withBench(async (bench) => {
      const streams = { jobs: { keywords: ['data engineer'], per_company: false } };
      const day0 = new Date('2026-11-01T00:00:00Z');
      await bench.sync(streams, { now: day0 });
      const firstRun = await bench.jobUrls();
      await bench.destination.query('delete from seedline.jobs');
      await bench.sync(streams, { now: new Date(day0.getTime() + 30 * HOUR) });
      expect((await bench.jobUrls()).length).toBeLessThan(firstRun.length);
    });
  });
});

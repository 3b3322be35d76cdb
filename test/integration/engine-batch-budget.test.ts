import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ApiClient } from '../../src/client/index.js';
import { parseConfig } from '../../src/config/load-config.js';
import { createDestination } from '../../src/destinations/create-destination.js';
import type { Destination } from '../../src/destinations/destination.js';
import { planSync, prepareSync, runSync, type PreparedSync, type RunResult } from '../../src/engine/pipeline.js';
import type { Reporter, StreamPlan } from '../../src/engine/stream-context.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.js';

const silent: Reporter = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };
const KEY = 'svc_live_engine_budget';
const profile = (slug: string) => `https://www.network.example/in/${slug}`;

interface Bench {
  sandbox: Sandbox;
  destination: Destination;
  /** Runs a sync of the configured streams with the given budget, the balance read at the start as a real sync does. */
  sync(
    streams: Record<string, unknown>,
    seeds: Record<string, unknown>,
    budget?: Record<string, number>,
    now?: Date,
    batch?: Record<string, unknown>,
  ): Promise<RunResult>;
  /** What `seedline plan` would show for the same config, by stream. */
  plan(
    streams: Record<string, unknown>,
    seeds: Record<string, unknown>,
    batch?: Record<string, unknown>,
  ): Promise<Record<string, StreamPlan>>;
  /** Seed-ledger status by seed of a stream. */
  statuses(stream: string): Promise<Record<string, string>>;
}

/** A live-billing sandbox, a DuckDB destination and the real client over loopback. */
async function withBench(options: SandboxOptions, body: (bench: Bench) => Promise<void>): Promise<void> {
  const sandbox = await startSandbox({ rpm: 100_000, ...options });
  const dir = await mkdtemp(join(tmpdir(), 'seedline-batch-budget-'));
  const destination = await createDestination({ type: 'duckdb', path: join(dir, 'w.duckdb'), schema: 'seedline' });
  const client = await ApiClient.connect({ baseUrl: sandbox.url, apiKey: KEY });
  const prepare = async (
    streams: Record<string, unknown>,
    seeds: Record<string, unknown>,
    budget: Record<string, number>,
    now?: Date,
    batch: Record<string, unknown> = {},
  ): Promise<PreparedSync> => {
    const raw = {
      api: { base_url: sandbox.url, api_key: KEY },
      destination: { type: 'duckdb', path: 'w.duckdb' },
      seeds,
      streams,
      batch: { chunk_size: 10, poll_interval_ms: 10, ...batch },
      budget,
    };
    return prepareSync({
      config: parseConfig(JSON.stringify(raw), 'test'),
      baseDir: dir,
      manifests: await loadManifests(),
      destination,
      ...(now ? { now: () => now } : {}),
    });
  };
  try {
    await destination.ensureSystemTables();
    await body({
      sandbox,
      destination,
      async sync(streams, seeds, budget = {}, now, batch) {
        const prepared = await prepare(streams, seeds, budget, now, batch);
        const account = (await client.getAccount()).data as { credits_remaining: number };
        return runSync(prepared, {
          client,
          reporter: silent,
          balance: account.credits_remaining,
          concurrentBatchJobs: 2,
        });
      },
      async plan(streams, seeds, batch) {
        return Object.fromEntries(
          (await planSync(await prepare(streams, seeds, {}, undefined, batch))).map((plan) => [plan.stream, plan]),
        );
      },
      async statuses(stream) {
        return Object.fromEntries(
          [...(await destination.readSeeds(stream)).values()].map((row) => [row.seed, row.status]),
        );
      },
    });
  } finally {
    await client.close();
    await destination.close();
    await sandbox.close();
  }
}

describe('batch stream budget against a live-billing sandbox', () => {
  it('given a batch item that fails for a passing reason and a budget spent by the batch, when the retry is cut, then that seed stays pending, not failed', async () => {
    await withBench({}, async (bench) => {
      const seeds = [profile('ann-budget'), profile('bob-budget'), profile('flaky-cid-budget')];
      const result = await bench.sync({ profiles: {} }, { profiles: seeds }, { max_credits_per_run: 3 });

      expect(result.streams[0]).toMatchObject({ stream: 'profiles', status: 'partial', stopped: 'budget_exhausted' });
      expect(bench.sandbox.ledger.totalBilled()).toBeLessThanOrEqual(3);
      expect(await bench.statuses('profiles')).toEqual({
        [seeds[0]!]: 'fetched',
        [seeds[1]!]: 'fetched',
        [seeds[2]!]: 'pending',
      });
    });
  });

  it('given a seed never fetched whose last attempt failed for a passing reason, when a small budget picks between it and a stale fetched seed, then the never-fetched one goes first', async () => {
    await withBench({}, async (bench) => {
      const streams = { profiles: { refresh_after: '1d' } };
      const stale = profile('hal-budget');
      const neverFetched = profile('flaky-ida-budget');
      const day = (n: number) => new Date(Date.UTC(2026, 10, 1 + n));
      await bench.sync(streams, { profiles: [stale] }, {}, day(0));
      // The flaky seed fails in its batch (billed) and the budget leaves no room for its retry.
      await bench.sync(streams, { profiles: [neverFetched] }, { max_credits_per_run: 1 }, day(2));
      expect(await bench.statuses('profiles')).toEqual({ [stale]: 'fetched', [neverFetched]: 'pending' });

      const billedBefore = bench.sandbox.ledger.entries.length;
      await bench.sync(streams, { profiles: [stale, neverFetched] }, { max_credits_per_run: 1 }, day(2));
      const targets = bench.sandbox.ledger.entries
        .slice(billedBefore)
        .filter((e) => e.credits > 0)
        .map((e) => e.target);
      expect(targets).toHaveLength(1);
      expect(targets[0]).toMatch(/flaky-ida-budget/);
    });
  });

  it('given a balance the batch spends whole, when the single retry of a failed item is answered 402, then that seed stays pending', async () => {
    await withBench({ balance: 3 }, async (bench) => {
      const seeds = [profile('cat-budget'), profile('dan-budget'), profile('flaky-eve-budget')];
      const result = await bench.sync({ profiles: {} }, { profiles: seeds });

      expect(result.streams[0]).toMatchObject({ stream: 'profiles', status: 'partial', stopped: 'budget_exhausted' });
      expect(result.streams[0]?.errors.join('\n')).toMatch(/402/);
      expect(bench.sandbox.ledger.totalBilled()).toBe(3);
      expect(await bench.statuses('profiles')).toEqual({
        [seeds[0]!]: 'fetched',
        [seeds[1]!]: 'fetched',
        [seeds[2]!]: 'pending',
      });
    });
  });
});

describe('plan of a stream fed by the rows of another', () => {
  it('given a fresh destination, when profiles and their activity are planned, then the activity worst case covers every kind and page of each profile to fetch, and the run costs no more', async () => {
    await withBench({}, async (bench) => {
      const seeds = { profiles: [profile('fay-budget'), profile('gus-budget')] };
      const streams = { profiles: {}, activity: { kinds: ['posts', 'comments'], max_pages: 3 } };
      const plan = await bench.plan(streams, seeds);
      // 2 profiles × 2 kinds, each up to 3 pages of 2 credits.
      expect(plan.activity).toMatchObject({ units: 4, calls: 4, worstCaseCredits: 2 * 2 * 3 * 2 });

      await bench.sync(streams, seeds);
      const activityBilled = bench.sandbox.ledger.entries
        .filter((e) => e.billed && e.operation.includes('activity'))
        .reduce((n, e) => n + e.credits, 0);
      expect(activityBilled).toBeGreaterThan(0);
      expect(activityBilled).toBeLessThanOrEqual(plan.activity!.worstCaseCredits);
    });
  });
});

describe('retries of batch items whose failure was billed (batch.retry_billed_failures)', () => {
  const seeds = () => ({
    profiles: [
      profile('ann-retry'),
      profile('bob-retry'),
      profile('cid-retry'),
      profile('dan-retry'),
      profile('flaky-eve-retry'),
    ],
  });

  it('given the default (retry once) and a flaky seed billed at submission, when planned and synced, then the worst case counts the retry and covers what the run spends', async () => {
    await withBench({}, async (bench) => {
      const plan = await bench.plan({ profiles: {} }, seeds());
      expect(plan.profiles?.worstCaseCredits).toBe(5 * 2);
      const result = await bench.sync({ profiles: {} }, seeds());
      // Five items billed at submission, the flaky one's failure included, and its single retry billed on success.
      expect(bench.sandbox.ledger.totalBilled()).toBe(6);
      expect(bench.sandbox.ledger.totalBilled()).toBeLessThanOrEqual(plan.profiles!.worstCaseCredits);
      expect(result.credits).toBe(6);
      expect(Object.values(await bench.statuses('profiles'))).toEqual(Array(5).fill('fetched'));
    });
  });

  it('given retry_billed_failures 0, when planned and synced, then the worst case is one bill per item and the flaky seed is left for the next run, which fetches it', async () => {
    await withBench({}, async (bench) => {
      const noRetry = { retry_billed_failures: 0 };
      expect((await bench.plan({ profiles: {} }, seeds(), noRetry)).profiles?.worstCaseCredits).toBe(5);
      const result = await bench.sync({ profiles: {} }, seeds(), {}, undefined, noRetry);
      expect(bench.sandbox.ledger.totalBilled()).toBe(5);
      expect(result.streams[0]).toMatchObject({ status: 'partial', failed: 1 });
      expect(result.streams[0]?.errors.join('\n')).toMatch(
        /not retried in this run \(batch.retry_billed_failures: 0\)/,
      );
      expect((await bench.statuses('profiles'))[profile('flaky-eve-retry')]).toBe('failed');

      await bench.sync({ profiles: {} }, seeds(), {}, undefined, noRetry);
      expect((await bench.statuses('profiles'))[profile('flaky-eve-retry')]).toBe('fetched');
    });
  });
});

describe('batch stream seeds announced to the destination', () => {
  it('given a seed list with a repeat, when a sync runs, then the destination hears how many keys come (repeats included) before its first ledger lookup, and the sync loads every seed', async () => {
    await withBench({}, async (bench) => {
      const seeds = [profile('ann-sized'), profile('bob-sized'), profile('ann-sized'), profile('cy-sized')];
      const announced = vi.spyOn(bench.destination, 'expectKeys');
      const lookups = vi.spyOn(bench.destination, 'readSeedsByKey');
      await bench.sync({ profiles: {} }, { profiles: seeds });

      expect(announced).toHaveBeenCalledWith('profiles', 'profiles', 4);
      expect(announced.mock.invocationCallOrder[0]!).toBeLessThan(lookups.mock.invocationCallOrder[0]!);
      expect(Object.keys(await bench.statuses('profiles')).sort()).toEqual(
        [profile('ann-sized'), profile('bob-sized'), profile('cy-sized')].sort(),
      );
    });
  });
});

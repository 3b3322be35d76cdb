import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/index.js';
import { parseConfig } from '../../src/config/load-config.js';
import { createDestination } from '../../src/destinations/create-destination.js';
import type { Destination } from '../../src/destinations/destination.js';
import { planSync, prepareSync, runSync, type PreparedSync, type RunResult } from '../../src/engine/pipeline.js';
import type { Reporter, StreamPlan } from '../../src/engine/stream-context.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';

const silent: Reporter = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };
const KEY = 'svc_live_engine_paging';
const HOUR = 3_600_000;
/** Company posts come at most 168 h apart (sandbox cadence), so this many weeks bring at least as many posts. */
const WEEK = 168 * HOUR;
const COMPANY = 'https://www.network.example/company/acme-review';

type Streams = Record<string, unknown>;
type Seeds = Record<string, unknown>;

interface SyncOptions {
  budget?: Record<string, number>;
  fullRefresh?: boolean;
}

interface Bench {
  sandbox: Sandbox;
  client: ApiClient;
  /** Runs a sync as `seedline sync` does, the balance read at the start. */
  sync(streams: Streams, seeds: Seeds, opts?: SyncOptions): Promise<RunResult>;
  /** What `seedline plan` would show for the same config, by stream. */
  plan(streams: Streams, seeds: Seeds): Promise<Record<string, StreamPlan>>;
  query<T extends Record<string, unknown>>(sql: string): Promise<T[]>;
  /** Credits the sandbox billed for operations whose name contains `operation`. */
  billed(operation: string): number;
}

/** A live-billing sandbox, a DuckDB destination and the real client over loopback. */
async function withBench(body: (bench: Bench) => Promise<void>): Promise<void> {
  const sandbox = await startSandbox({ rpm: 100_000 });
  const dir = await mkdtemp(join(tmpdir(), 'seedline-paging-'));
  const destination: Destination = await createDestination({
    type: 'duckdb',
    path: join(dir, 'w.duckdb'),
    schema: 'seedline',
  });
  const client = await ApiClient.connect({ baseUrl: sandbox.url, apiKey: KEY });
  const prepare = async (streams: Streams, seeds: Seeds, opts: SyncOptions): Promise<PreparedSync> => {
    const raw = {
      api: { base_url: sandbox.url, api_key: KEY },
      destination: { type: 'duckdb', path: 'w.duckdb' },
      seeds,
      streams,
      batch: { chunk_size: 10, poll_interval_ms: 10 },
      budget: opts.budget ?? {},
    };
    return prepareSync({
      config: parseConfig(JSON.stringify(raw), 'test'),
      baseDir: dir,
      manifests: await loadManifests(),
      destination,
      ...(opts.fullRefresh ? { fullRefresh: true } : {}),
    });
  };
  try {
    await destination.ensureSystemTables();
    await body({
      sandbox,
      client,
      async sync(streams, seeds, opts = {}) {
        const prepared = await prepare(streams, seeds, opts);
        const account = (await client.getAccount()).data as { credits_remaining: number };
        return runSync(prepared, { client, reporter: silent, balance: account.credits_remaining });
      },
      async plan(streams, seeds) {
        return Object.fromEntries(
          (await planSync(await prepare(streams, seeds, {}))).map((plan) => [plan.stream, plan]),
        );
      },
      query: (sql) => destination.query(sql),
      billed: (operation) =>
        sandbox.ledger.entries
          .filter((e) => e.billed && e.operation.includes(operation))
          .reduce((n, e) => n + e.credits, 0),
    });
  } finally {
    await client.close();
    await destination.close();
    await sandbox.close();
  }
}

/** Every post of the company's feed at the sandbox's current virtual time, read directly page by page. */
async function feedNow(client: ApiClient, url: string): Promise<Array<{ urn: string; posted_at: string }>> {
  const all: Array<{ urn: string; posted_at: string }> = [];
  let token: string | null | undefined;
  for (let page = 1; ; page++) {
    const body: Record<string, unknown> = { url, per_page: 25, ...(page > 1 ? { page, pagination_token: token } : {}) };
    const res = (await client.companyPosts(body as never)).data as unknown as {
      posts: Array<{ urn: string; posted_at: string }>;
      pagination: { has_more: boolean };
      pagination_token: string | null;
    };
    all.push(...res.posts.map((p) => ({ urn: String(p.urn), posted_at: p.posted_at })));
    if (!res.pagination.has_more) return all;
    token = res.pagination_token;
  }
}

/** Urns of the feed newer than `afterMs` that the company_posts table lacks, and how many there are. */
async function gapAfter(bench: Bench, afterMs: number): Promise<{ missing: number; of: number }> {
  const expected = (await feedNow(bench.client, COMPANY))
    .filter((p) => Date.parse(p.posted_at) > afterMs)
    .map((p) => p.urn);
  const loaded = new Set(
    (await bench.query<{ urn: string }>('select urn from seedline.company_posts')).map((r) => String(r.urn)),
  );
  return { missing: expected.filter((urn) => !loaded.has(urn)).length, of: expected.length };
}

async function newestLoadedMs(bench: Bench): Promise<number> {
  const [row] = await bench.query<{ posted_at: string }>(
    'select posted_at::varchar as posted_at from seedline.company_posts order by posted_at desc limit 1',
  );
  return Date.parse(String(row!.posted_at));
}

const companySeeds = { companies: [COMPANY] };
const companyPosts = (maxPages: number): Streams => ({
  companies: {},
  company_posts: { max_pages: maxPages, refresh_after: '0s' },
});
const statusOf = (result: RunResult, stream: string) => result.streams.find((s) => s.stream === stream)?.status;

describe('company_posts: a pass cut at max_pages before the posts already loaded', () => {
  it('given more new posts since the last run than one run may page (max_pages), when later runs sync, then the posts between the cut and the previous newest are loaded too', async () => {
    await withBench(async (bench) => {
      await bench.sync(companyPosts(1), companySeeds);
      expect((await bench.query<{ n: number }>('select count(*)::int as n from seedline.company_posts'))[0]!.n).toBe(
        25,
      );
      const newestRun1 = await newestLoadedMs(bench);
      await bench.sandbox.clock.advance(60 * WEEK);

      const cut = await bench.sync(companyPosts(1), companySeeds);
      const resumed = [
        await bench.sync(companyPosts(10), companySeeds),
        await bench.sync(companyPosts(10), companySeeds),
      ];

      expect([statusOf(cut, 'company_posts'), ...resumed.map((r) => statusOf(r, 'company_posts'))]).toEqual([
        'partial',
        'succeeded',
        'succeeded',
      ]);
      const gap = await gapAfter(bench, newestRun1);
      expect(gap.of).toBeGreaterThan(50);
      expect(gap).toEqual({ missing: 0, of: gap.of });
    });
  });

  it('given a run cut at max_pages, when it ends, then it says so and the next run, planned at max_pages more pages, reads on from the cut', async () => {
    await withBench(async (bench) => {
      await bench.sync(companyPosts(1), companySeeds);
      await bench.sandbox.clock.advance(30 * WEEK);

      const cut = await bench.sync(companyPosts(1), companySeeds);
      const outcome = cut.streams.find((s) => s.stream === 'company_posts')!;
      expect(outcome.status).toBe('partial');
      expect(outcome.errors.join('\n')).toMatch(
        /1 partition\(s\) stopped at max_pages with more new items to read; the next run goes on from there/,
      );
      expect(cut.status).toBe('partial');

      // The pending pass stays due and may read max_pages (10) pages of 2 credits in the next run.
      expect((await bench.plan(companyPosts(10), companySeeds)).company_posts).toMatchObject({
        units: 1,
        worstCaseCredits: 20,
      });
      const before = bench.billed('posts');
      expect(statusOf(await bench.sync(companyPosts(10), companySeeds), 'company_posts')).toBe('succeeded');
      expect(bench.billed('posts') - before).toBeLessThanOrEqual(20);
    });
  });

  it('given a pass cut at max_pages, when later runs finish it, then the table and the credits equal a run whose max_pages covered every new post', async () => {
    async function scenario(maxPagesOfRun2: number) {
      let out = { urns: [] as string[], billed: 0 };
      await withBench(async (bench) => {
        await bench.sync(companyPosts(1), companySeeds);
        await bench.sandbox.clock.advance(30 * WEEK);
        await bench.sync(companyPosts(maxPagesOfRun2), companySeeds);
        // Until the pass is done, then once more (a new pass, one page).
        for (let run = 0; run < 2 + (maxPagesOfRun2 < 10 ? 1 : 0); run++)
          await bench.sync(companyPosts(10), companySeeds);
        const urns = (await bench.query<{ urn: string }>('select urn from seedline.company_posts order by urn')).map(
          (r) => String(r.urn),
        );
        out = { urns, billed: bench.billed('posts') };
      });
      return out;
    }
    const control = await scenario(10);
    const cut = await scenario(1);
    expect(cut.urns.length).toBeGreaterThan(50);
    expect(cut).toEqual(control);
  });

  it('given a full refresh cut at max_pages before the posts loaded earlier, when normal runs follow, then the posts between the cut and the previous newest are loaded too', async () => {
    await withBench(async (bench) => {
      await bench.sync(companyPosts(1), companySeeds);
      const newestRun1 = await newestLoadedMs(bench);
      await bench.sandbox.clock.advance(60 * WEEK);

      const refresh = await bench.sync(companyPosts(1), companySeeds, { fullRefresh: true });
      expect(statusOf(refresh, 'company_posts')).toBe('partial');
      await bench.sync(companyPosts(10), companySeeds);
      await bench.sync(companyPosts(10), companySeeds);

      const gap = await gapAfter(bench, newestRun1);
      expect(gap.of).toBeGreaterThan(50);
      expect(gap).toEqual({ missing: 0, of: gap.of });
    });
  });

  it('given a first run over a long feed, when it reaches max_pages, then the pass is complete (max_pages is how far back history goes) and the next run reads one page', async () => {
    await withBench(async (bench) => {
      await bench.sandbox.clock.advance(60 * WEEK);
      const first = await bench.sync(companyPosts(2), companySeeds);
      expect(statusOf(first, 'company_posts')).toBe('succeeded');
      expect((await bench.query<{ n: number }>('select count(*)::int as n from seedline.company_posts'))[0]!.n).toBe(
        50,
      );
      const afterFirst = bench.billed('posts');
      expect(afterFirst).toBe(2 * 2);

      expect(statusOf(await bench.sync(companyPosts(2), companySeeds), 'company_posts')).toBe('succeeded');
      expect(bench.billed('posts') - afterFirst).toBe(2);
    });
  });
});

describe('activity: a pass per profile and kind cut at max_pages', () => {
  const seeds = { profiles: ['https://www.network.example/in/ada-paging', 'https://www.network.example/in/bo-paging'] };
  const activity = (maxPages: number): Streams => ({
    profiles: {},
    activity: { kinds: ['posts', 'comments'], max_pages: maxPages, refresh_after: '0s' },
  });

  it('given more new activity than one run may page, when later runs finish the passes, then the tables and the credits equal a run whose max_pages covered it all', async () => {
    async function scenario(maxPagesOfRun2: number) {
      let out = {
        posts: [] as string[],
        comments: [] as string[],
        billed: 0,
        statuses: [] as Array<string | undefined>,
      };
      await withBench(async (bench) => {
        await bench.sync(activity(1), seeds);
        await bench.sandbox.clock.advance(40 * WEEK);
        const statuses = [statusOf(await bench.sync(activity(maxPagesOfRun2), seeds), 'activity')];
        for (let run = 0; run < 2 + (maxPagesOfRun2 < 10 ? 1 : 0); run++)
          statuses.push(statusOf(await bench.sync(activity(10), seeds), 'activity'));
        const keys = async (table: string) =>
          (await bench.query<{ k: string }>(`select record_key as k from seedline.${table} order by k`)).map((r) =>
            String(r.k),
          );
        out = {
          posts: await keys('activity_posts'),
          comments: await keys('activity_comments'),
          billed: bench.billed('activity'),
          statuses,
        };
      });
      return out;
    }
    const control = await scenario(10);
    const cut = await scenario(1);
    expect(control.statuses.every((s) => s === 'succeeded')).toBe(true);
    expect(cut.statuses).toEqual(['partial', 'succeeded', 'succeeded', 'succeeded']);
    expect(cut.posts.length + cut.comments.length).toBeGreaterThan(4 * 25);
    expect({ posts: cut.posts, comments: cut.comments, billed: cut.billed }).toEqual({
      posts: control.posts,
      comments: control.comments,
      billed: control.billed,
    });
  });
});

describe('company_posts: a pass stopped by the budget part-way', () => {
  /** Run 1 loads the feed; posts appear; run 2 reads the new posts with `budget2`, later runs finish. Urns loaded, credits billed for company posts, run statuses. */
  async function scenario(budget2: number | undefined) {
    let out: { urns: string[]; billed: number; runs: string[] } = { urns: [], billed: 0, runs: [] };
    await withBench(async (bench) => {
      await bench.sync(companyPosts(10), companySeeds);
      await bench.sandbox.clock.advance(30 * WEEK);
      const runs: string[] = [];
      runs.push(
        (
          await bench.sync(
            companyPosts(10),
            companySeeds,
            budget2 === undefined ? {} : { budget: { max_credits_per_run: budget2 } },
          )
        ).status,
      );
      if (budget2 !== undefined) runs.push((await bench.sync(companyPosts(10), companySeeds)).status);
      const urns = (await bench.query<{ urn: string }>('select urn from seedline.company_posts order by urn')).map(
        (r) => String(r.urn),
      );
      out = { urns, billed: bench.billed('posts'), runs };
    });
    return out;
  }

  it('given a budget that stops the second run after one page, when the next run resumes, then the table and the credits equal an uninterrupted run', async () => {
    const control = await scenario(undefined);
    const stopped = await scenario(2);
    expect(stopped.runs).toEqual(['partial', 'succeeded']);
    expect(stopped.urns).toEqual(control.urns);
    expect(stopped.billed).toBe(control.billed);
  });
});

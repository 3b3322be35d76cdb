import fc from 'fast-check';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { tempWorkspace, writeConfig } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { e2eBackends } from '../helpers/destinations.js';

// Issue 33, item 4: the plan's worst case bounds what a run bills at any depth of the stream graph
// (profiles → activity → post_comments is three levels), for any subset, seeds, caps and budget.

/** Streams drawn from, parents before children; each with options small enough for a quick run. */
const STREAMS = {
  profiles: () => fc.constant({}),
  companies: () => fc.constant({}),
  activity: () =>
    fc.record({
      kinds: fc.subarray(['posts', 'comments', 'reactions', 'reposts'], { minLength: 1 }),
      max_pages: fc.integer({ min: 1, max: 2 }),
      via: fc.constantFrom('batch', 'calls'),
    }),
  company_posts: () => fc.record({ max_pages: fc.integer({ min: 1, max: 2 }) }),
  post_comments: () => fc.record({ max_pages: fc.constant(1), via: fc.constantFrom('batch', 'calls') }),
  post_reactions: () => fc.record({ max_pages: fc.constant(1) }),
  profile_recommendations: () =>
    fc.record({
      directions: fc.subarray(['received', 'given'], { minLength: 1 }),
      max_pages: fc.integer({ min: 1, max: 2 }),
    }),
  profile_interests: () => fc.record({ max_pages: fc.integer({ min: 1, max: 2 }) }),
  jobs: () =>
    fc.record({ keywords: fc.constantFrom([], ['data engineer']), max_results: fc.integer({ min: 1, max: 40 }) }),
} as const;

type StreamName = keyof typeof STREAMS;

const scenario = fc.record({
  streams: fc
    .subarray(Object.keys(STREAMS) as StreamName[], { minLength: 1 })
    .chain((names) => fc.record(Object.fromEntries(names.map((name) => [name, STREAMS[name]()])))),
  profiles: fc.integer({ min: 0, max: 2 }),
  companies: fc.integer({ min: 0, max: 1 }),
  budget: fc.option(fc.integer({ min: 1, max: 400 }), { nil: undefined }),
});

/** Cases each of the five parts draws: 50 in all. */
const CASES_PER_PART = 10;

interface PlanJson {
  streams: { stream: string; worst_case_credits: number }[];
  totals: { worst_case_credits: number };
}
interface SyncJson {
  credits: number;
  streams: { stream: string; credits: number }[];
}

describe('the plan bounds the run', () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await startSandbox({ rpm: 1_000_000, concurrentBatchJobs: 10 });
  });
  afterAll(() => sandbox?.close());

  // 50 cases in five tests of ten: each test stays well inside its time limit on a loaded machine.
  it.each([1, 2, 3, 4, 5])(
    'given random stream graphs, seeds, caps and budgets (cases of part %i of 5), when planned then synced, then no stream and no run bills past the worst case',
    async (part) => {
      let cases = 0;
      await fc.assert(
        fc.asyncProperty(scenario, async ({ streams, profiles, companies, budget }) => {
          const dir = await tempWorkspace();
          const configPath = await writeConfig(dir, {
            api: { base_url: sandbox.url, api_key: 'svc_live_plan_bounds' },
            destination: { type: 'duckdb', path: join(dir, 'w.duckdb') },
            seeds: {
              profiles: Array.from(
                { length: profiles },
                (_, i) => `https://www.network.example/in/bound-${part}-${cases}-${i}`,
              ),
              companies: Array.from(
                { length: companies },
                (_, i) => `https://www.network.example/company/bound-${part}-${cases}-${i}`,
              ),
            },
            streams,
            batch: { chunk_size: 10, poll_interval_ms: 10 },
            ...(budget === undefined ? {} : { budget: { max_credits_per_run: budget } }),
          });
          cases++;
          const planned = await runCliInProcess(['plan', '--config', configPath, '--json']);
          expect(planned.code, planned.stderr).toBe(0);
          const plan = JSON.parse(planned.stdout) as PlanJson;
          const billedBefore = sandbox.ledger.totalBilled();
          const synced = await runCliInProcess(['sync', '--config', configPath, '--json']);
          expect(synced.code, synced.stderr).toBe(0);
          const run = JSON.parse(synced.stdout) as SyncJson;
          const worst = Object.fromEntries(plan.streams.map((s) => [s.stream, s.worst_case_credits]));
          for (const stream of run.streams)
            expect(stream.credits, `${stream.stream} of ${JSON.stringify(streams)}`).toBeLessThanOrEqual(
              worst[stream.stream] ?? 0,
            );
          expect(sandbox.ledger.totalBilled() - billedBefore).toBe(run.credits);
          expect(run.credits).toBeLessThanOrEqual(plan.totals.worst_case_credits);
        }),
        { numRuns: CASES_PER_PART },
      );
      expect(cases).toBeGreaterThanOrEqual(CASES_PER_PART);
    },
  );
});

describe.each(e2eBackends)('a three-level chain into $name', ({ name, make }) => {
  it('given profiles, their activity and the comments on its posts, when planned and synced twice, then each stream bills within its worst case and the second run bills 0', async (ctx) => {
    const sandbox = await startSandbox({ rpm: 1_000_000 });
    try {
      const dir = await tempWorkspace();
      const destination = await make(dir, 'chain');
      if (!destination) return ctx.skip(`${name} unavailable`);
      const configPath = await writeConfig(dir, {
        api: { base_url: sandbox.url, api_key: 'svc_live_chain' },
        destination,
        seeds: { profiles: ['https://www.network.example/in/ada-lovelace'] },
        streams: {
          profiles: {},
          activity: { kinds: ['posts'], max_pages: 1 },
          post_comments: { max_pages: 1 },
          post_reactions: { max_pages: 1 },
        },
        batch: { chunk_size: 10, poll_interval_ms: 10 },
      });
      const plan = JSON.parse((await runCliInProcess(['plan', '--config', configPath, '--json'])).stdout) as PlanJson;
      const first = await runCliInProcess(['sync', '--config', configPath, '--json']);
      expect(first.code, first.stderr).toBe(0);
      const run = JSON.parse(first.stdout) as SyncJson;
      const worst = Object.fromEntries(plan.streams.map((s) => [s.stream, s.worst_case_credits]));
      // The third level is billed (posts have comments) and stays within what the plan reserved for it.
      expect(run.streams.find((s) => s.stream === 'post_comments')?.credits).toBeGreaterThan(0);
      for (const stream of run.streams)
        expect(stream.credits, stream.stream).toBeLessThanOrEqual(worst[stream.stream]!);
      expect(sandbox.ledger.totalBilled()).toBe(run.credits);

      const second = await runCliInProcess(['sync', '--config', configPath, '--json']);
      expect(second.code, second.stderr).toBe(0);
      expect((JSON.parse(second.stdout) as SyncJson).credits).toBe(0);
      expect(sandbox.ledger.totalBilled()).toBe(run.credits);
    } finally {
      await sandbox.close();
    }
  });
});

describe('a stream reading a listing without a page limit', () => {
  it('given a paid stream over the rows of the free signals listing, when planned, then its worst case has no bound and the plan says it may stop', async () => {
    const dir = await tempWorkspace();
    await mkdir(join(dir, 'my-streams'));
    await writeFile(
      join(dir, 'my-streams', 'signal_profiles.stream.yaml'),
      `type: request
name: signal_profiles
depends_on: [signals]
request: { path: /v1/profiles/enrich, body: { url: "{{ partition.id }}" } }
cost: { $ref: enrichment_cost }
partitions: { type: parent, table: signals, columns: [id], key: "{{ row.id }}" }
records: data
table: { name: signal_profiles, schema: profile, primary_key: [url] }
`,
    );
    const configPath = await writeConfig(dir, {
      api: { base_url: 'sandbox', api_key: 'svc_test_unbounded' },
      destination: { type: 'duckdb', path: 'w.duckdb' },
      streams_dir: 'my-streams',
      streams: { signals: {}, signal_profiles: {} },
      budget: { max_credits_per_run: 1000 },
    });
    const planned = await runCliInProcess(['plan', '--config', configPath, '--json']);
    expect(planned.code, planned.stderr).toBe(0);
    const plan = JSON.parse(planned.stdout) as PlanJson & {
      verdict: string;
      reach: { stream: string; reach: string }[];
    };
    // JSON has no Infinity: an unbounded worst case is null.
    expect(plan.streams.find((s) => s.stream === 'signal_profiles')?.worst_case_credits).toBeNull();
    expect(plan.verdict).toBe('may_stop');
    expect(plan.reach.find((r) => r.stream === 'signal_profiles')?.reach).toBe('may_stop');
  });
});

import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load-config.js';
import type { Destination } from '../../src/destinations/destination.js';
import { Budget, byPriority } from '../../src/engine/books/budget.js';
import { CostModel } from '../../src/engine/books/cost-model.js';
import { prepareSync, runSync } from '../../src/engine/pipeline.js';
import { RequestPartitions } from '../../src/engine/request/request-plan.js';
import type { ServiceClient, ServiceRequest } from '../../src/engine/service-calls.js';
import type { Reporter, StreamContext } from '../../src/engine/stream-context.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import { compileStream, type CompiledRequestStream } from '../../src/manifest/compile-stream.js';
import { Mutex } from '../../src/util/mutex.js';
import { destinationKinds, useBackend } from '../helpers/destinations.js';

const now = new Date('2026-11-26T12:00:00.000Z');
const silent: Reporter = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };
const url = (n: number) => `https://www.network.example/company/c-${String(n).padStart(5, '0')}`;

/**
 * What partition n's saved state is: none or a pass under way (never completed: due first), a
 * complete pass days ago (stale, many at the same instant), or an hour ago (fresh, not due).
 */
function stateOf(n: number): Record<string, unknown> | undefined {
  switch (n % 5) {
    case 0:
      return undefined;
    case 1:
      return { pending: { number: 2, token: 't' } };
    case 2:
      return { completed_at: new Date(Date.UTC(2026, 10, 20, n % 7)).toISOString() };
    case 3:
      return { completed_at: new Date(now.getTime() - 3_600_000).toISOString() };
    default:
      return { completed_at: new Date(Date.UTC(2026, 9, 1 + (n % 11))).toISOString() };
  }
}

/** `count` companies as a parent table (the first `repeats` of them twice), with the states of `stateOf` for company_posts. */
async function seedCompanies(dest: Destination, count: number, repeats: number): Promise<void> {
  const table = `"${dest.schema}".companies`;
  await dest.query(`create table ${table} (url varchar)`);
  const rows = [
    ...Array.from({ length: count }, (_, n) => url(n)),
    ...Array.from({ length: repeats }, (_, n) => url(n)),
  ];
  for (let i = 0; i < rows.length; i += 1000)
    await dest.query(
      `insert into ${table} values ${rows
        .slice(i, i + 1000)
        .map((u) => `('${u}')`)
        .join(', ')}`,
    );
  const unit = await dest.beginUnit('run_0');
  const states = Array.from({ length: count }, (_, n) => ({ n, state: stateOf(n) })).filter(
    (s) => s.state !== undefined,
  );
  await unit.saveState(
    states.map(({ n, state }) => ({ stream: 'company_posts', partition: url(n), cursor: JSON.stringify(state) })),
  );
  await unit.commit();
}

/** The keys due, in the order the runner took them before it read partitions in chunks: byPriority over the whole list. */
function expectedOrder(count: number): string[] {
  const due = Array.from({ length: count }, (_, n) => n).filter((n) => n % 5 !== 3);
  const completed = (n: number) => {
    const at = stateOf(n)?.completed_at;
    return typeof at === 'string' ? new Date(at) : null;
  };
  return byPriority(due, completed).map(url);
}

function streamContext(dest: Destination, options: Record<string, unknown>): StreamContext {
  return {
    runId: 'run_1',
    runStartedAt: now,
    options,
    seeds: {},
    destination: dest,
    client: undefined as unknown as ServiceClient,
    budget: new Budget(undefined),
    costs: CostModel.builtIn(),
    reporter: silent,
    writeLock: new Mutex(),
    fullRefresh: false,
    concurrency: 1,
    batch: { chunkSize: 1000, pollIntervalMs: 10, concurrentJobs: 1 },
    now: () => now,
  };
}

for (const kind of destinationKinds) {
  describe(`${kind}: a request stream's partitions read in chunks`, () => {
    const backend = useBackend(kind);

    it('given 2,500 parent rows (100 of them twice) never completed, stale with ties, or fresh, when planned and read with stale windows of 300, then each due one comes once, in the priority order of the whole list, in chunks of at most 1,000', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await backend.open();
      await seedCompanies(dest, 2500, 100);
      const options = { refresh_after: '1d', via: 'calls', max_pages: 10 };
      const stream = compileStream((await loadManifests()).get('company_posts')!, options) as CompiledRequestStream;
      const partitions = await RequestPartitions.open(stream, streamContext(dest, options));
      try {
        const plan = await partitions.plan();
        const expected = expectedOrder(2500);
        expect(plan).toMatchObject({ partitions: 2500, todo: 2000, next: expected.slice(0, 3) });
        expect(plan.first?.key).toBe(expected[0]);
        // company_posts: 2 credits a page of 25; a first pass is expected to read its 200 typical records (8 pages),
        // a pass under way (resumed at its page 2) the 7 pages left. No state here holds a newest item to stop at.
        expect(plan.cost.expected).toBe((1500 * 8 + 500 * 7) * 2);

        const chunks: string[][] = [];
        for await (const chunk of partitions.due(plan, 300)) chunks.push(chunk.map((due) => due.partition.key));
        expect(chunks.flat()).toEqual(expected);
        expect(chunks.every((chunk) => chunk.length <= 1000)).toBe(true);

        const found = await partitions.find(new Set([url(1), url(3), 'https://www.network.example/company/gone']));
        expect(found.map((due) => [due.partition.key, due.saved])).toEqual([
          [url(1), stateOf(1)],
          [url(3), stateOf(3)],
        ]);
      } finally {
        await partitions.close();
      }
    });
  });
}

describe('duckdb: a request stream run in priority order', () => {
  const backend = useBackend('duckdb');

  it('given 60 parent companies in every state, when company_posts syncs by single calls, then it asks each due company once, never-completed first, then the stalest, and skips the fresh', async () => {
    const dest = await backend.open();
    await seedCompanies(dest, 60, 0);
    const asked: string[] = [];
    const request = async (call: ServiceRequest) => {
      asked.push(String((call.body as { url: string }).url));
      return { data: { posts: [], pagination: { has_more: false } }, meta: { creditsUsed: 2 } };
    };
    const client = new Proxy({ request } as unknown as ServiceClient, {
      get: (target, name) =>
        (target as unknown as Record<string, unknown>)[name as string] ??
        (() => Promise.reject(new Error(`unexpected call ${String(name)}`))),
    });
    const config = parseConfig(
      JSON.stringify({
        api: { base_url: 'sandbox', api_key: 'svc_test_x', max_concurrency: 1 },
        destination: { type: 'duckdb', path: 'w.duckdb' },
        streams: { company_posts: { via: 'calls' } },
      }),
      'test',
    );
    const prepared = await prepareSync({
      config,
      baseDir: '.',
      manifests: await loadManifests(),
      destination: dest,
      only: ['company_posts'],
      now: () => now,
    });

    const result = await runSync(prepared, { client, reporter: silent });

    expect(result.status).toBe('succeeded');
    expect(asked).toEqual(expectedOrder(60));
    expect(result.streams[0]).toMatchObject({ skipped: 12, failed: 0, credits: 48 * 2 });
    const states = await dest.readStateByKey('company_posts', expectedOrder(60));
    expect(states.size).toBe(48);
    expect([...states.values()].every((row) => JSON.parse(row.cursor).completed_at === now.toISOString())).toBe(true);
  });
});

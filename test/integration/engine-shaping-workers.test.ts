import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiClient } from '../../src/client/index.js';
import { parseConfig } from '../../src/config/load-config.js';
import type { Destination, DestinationKind } from '../../src/destinations/destination.js';
import { prepareSync, runSync, type RunResult } from '../../src/engine/pipeline.js';
import type { Reporter } from '../../src/engine/stream-context.js';
import { TableShaper } from '../../src/normalize/table-shaper.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { backendAvailable, makeTestTarget, type TestTarget } from '../helpers/destinations.js';

const KEY = 'svc_live_engine_shaping_workers';
/** 2,400 seeds in jobs of at most 1,000 (three of 800, each read in two pages), and some records the schema does not fit. */
const SEEDS = Array.from({ length: 2_400 }, (_, i) =>
  i % 97 === 0 ? `mangled-person-${i}` : i % 89 === 0 ? `sparse-person-${i}` : `person-${i}`,
);

/** Rows of a table without the columns a run stamps (`_run_id`, `_loaded_at`), in a stable order. */
async function rowsOf(destination: Destination, table: string, order: string): Promise<Record<string, unknown>[]> {
  const rows = await destination.query(`select * from ${destination.schema}.${table} order by ${order}`);
  return rows.map(({ _run_id: _r, _loaded_at: _l, ...rest }) => rest);
}

// Issue 20: results pages read, validated and shaped in worker threads load exactly what the main thread loads.
describe.each<DestinationKind>(['duckdb', 'postgres'])('batch results shaped in worker threads, into %s', (kind) => {
  let sandbox: Sandbox;
  let client: ApiClient;
  let available = false;
  const targets: TestTarget[] = [];
  const notices: string[] = [];
  const reporter: Reporter = {
    streamStarted() {},
    streamProgress() {},
    streamFinished() {},
    notice: (_stream, message) => void notices.push(message),
  };

  beforeAll(async () => {
    available = await backendAvailable(kind);
    sandbox = await startSandbox({
      rpm: 100_000,
      latencyMs: [0, 0],
      batchItemConcurrency: 200,
      concurrentBatchJobs: 3,
    });
    client = await ApiClient.connect({ baseUrl: sandbox.url, apiKey: KEY });
  });
  afterAll(async () => {
    for (const target of targets) await target.dispose();
    await client?.close();
    await sandbox?.close();
  });

  /** A sync of the profiles stream into a fresh target with `workers` shaping threads; resolves with the result and how many records the main thread shaped. */
  async function syncInto(
    workers: number,
    profiles: Record<string, unknown> = {},
  ): Promise<{ destination: Destination; result: RunResult; shapedHere: number }> {
    const target = makeTestTarget(kind);
    targets.push(target);
    const destination = await target.open();
    await destination.ensureSystemTables();
    const raw = {
      api: { base_url: sandbox.url, api_key: KEY },
      destination: { type: 'duckdb', path: 'unused.duckdb' },
      seeds: { profiles: SEEDS },
      streams: { profiles },
      batch: { chunk_size: 1_000, poll_interval_ms: 10, shaping_workers: workers },
      // Every seed is fetched: past the default budget of a run (1,000 credits).
      budget: { max_credits_per_run: 10_000 },
    };
    const prepared = await prepareSync({
      config: parseConfig(JSON.stringify(raw), 'test'),
      baseDir: '.',
      manifests: await loadManifests(),
      destination,
    });
    const shapes = vi.spyOn(TableShaper.prototype, 'shape');
    try {
      const result = await runSync(prepared, { client, reporter, concurrentBatchJobs: 3 });
      return { destination, result, shapedHere: shapes.mock.calls.reduce((n, [, records]) => n + records.length, 0) };
    } finally {
      shapes.mockRestore();
    }
  }

  it('given 2,400 profile seeds, when synced with two shaping workers and with none, then every table and ledger row is the same, and the workers shaped the pages after the first', async (ctx) => {
    if (!available) return ctx.skip();
    const inWorkers = await syncInto(2);
    const onMain = await syncInto(0);
    expect(inWorkers.result.streams[0]).toMatchObject({ status: 'succeeded', records: SEEDS.length, rejected: 0 });
    expect(onMain.result.streams[0]).toMatchObject({
      records: SEEDS.length,
      rows: inWorkers.result.streams[0]!.rows,
      repaired: inWorkers.result.streams[0]!.repaired,
    });
    expect(inWorkers.result.streams[0]!.repaired).toBeGreaterThan(0);
    expect(onMain.shapedHere).toBe(SEEDS.length);
    // The seeds go in three jobs of 800. The first page of a job (500) may be read before the table is made (by a unit):
    // the main thread shapes those; every later page is shaped in the workers.
    expect(inWorkers.shapedHere).toBeLessThanOrEqual(3 * 500);
    expect(notices.filter((n) => n.includes('worker'))).toEqual([]);

    for (const [table, order] of [
      ['profiles', 'url'],
      ['profiles__positions', '_parent_url, _index'],
      ['profiles__education', '_parent_url, _index'],
    ] as const) {
      const rows = await rowsOf(inWorkers.destination, table, order);
      expect(rows.length, table).toBeGreaterThan(0);
      expect(rows, table).toEqual(await rowsOf(onMain.destination, table, order));
    }
    const ledger = (d: Destination) =>
      d.query(
        `select seed_key, seed, status, canonical_url, credits, error from ${d.schema}._seedline_seeds order by seed_key`,
      );
    expect(await ledger(inWorkers.destination)).toEqual(await ledger(onMain.destination));
    const repairs = (d: Destination) =>
      d.query(
        `select "table", field, change, sum("count") as n from ${d.schema}._seedline_repairs group by 1, 2, 3 order by 1, 2, 3`,
      );
    expect(await repairs(inWorkers.destination)).toEqual(await repairs(onMain.destination));
  });

  it('given schema_contract freeze, when the same seeds sync in workers and on the main thread, then the same records are rejected, each with its reason and partition', async (ctx) => {
    if (!available) return ctx.skip();
    const frozen = { schema_contract: { data_type: 'freeze' } };
    const inWorkers = await syncInto(2, frozen);
    const onMain = await syncInto(0, frozen);
    const rejected = (d: Destination) =>
      d.query(`select "table", record, reason, "partition" from ${d.schema}._seedline_rejected order by record`);
    const kept = await rejected(inWorkers.destination);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.every((row) => JSON.parse(String(row.partition)).seed !== undefined)).toBe(true);
    expect(kept).toEqual(await rejected(onMain.destination));
    expect(inWorkers.result.streams[0]!.rejected).toBe(onMain.result.streams[0]!.rejected);
    expect(await rowsOf(inWorkers.destination, 'profiles', 'url')).toEqual(
      await rowsOf(onMain.destination, 'profiles', 'url'),
    );
  });
});

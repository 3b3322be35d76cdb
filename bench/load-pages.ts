/**
 * The engine's own page path of bench/load.ts (`--pages`): results pages of a profiles batch job
 * as the service sends them, read, validated and shaped, and committed as a batch stream commits
 * them (see `loadPages`).
 */
import type { BatchRow, Destination, SeedRow } from '../src/destinations/destination.js';
import { LoadWriter } from '../src/load/load-writer.js';
import { PageShapingPool } from '../src/engine/batch/page-shaping-pool.js';
import { decodeResultsPage, valuesLookup } from '../src/engine/batch/results-page-shaping.js';
import { shapedGroups } from '../src/engine/batch/shaped-results.js';
import { TableShaper } from '../src/normalize/table-shaper.js';
import { manifestsSync } from '../src/manifest/load-manifests.js';
import { Mutex } from '../src/util/mutex.js';
import { profileRecord } from './profile-records.js';

/**
 * The engine's own path from results pages (`--pages`): each page of 500 entries generated as the
 * text of the service's answer (timed, as the native paths' NDJSON and CSV are), read, validated
 * against the stream's schema and shaped for the write (`decodeResultsPage`) by `workers` worker
 * threads (`PageShapingPool`) or, with 0, on the main thread, then committed as a batch stream
 * commits it: through the stream's `LoadWriter`, with its entries' seed ledger rows and the job's
 * row and cursor. `JOBS` jobs are read at once, each a page at a time, so pages wait for the
 * destination together and commit together, as in a sync. The table is the profiles stream's own.
 * `records` is the number of profiles in all; resolves to the rows written.
 */
export async function loadPages(dest: Destination, records: number, workers: number): Promise<number> {
  await dest.lock({ holder: `bench/load.ts (pid ${process.pid})` });
  await dest.ensureSystemTables();
  const spec = {
    table: manifestsSync().get('profiles')!.table,
    options: { write_mode: 'merge' },
    run: { id: 'bench', started_at: new Date().toISOString() },
  };
  const shaper = TableShaper.of(spec.table, spec);
  await dest.ensureTable(shaper.definitionFor({}));
  const shaping = dest.writeShaping('profiles')!;
  const pool = workers > 0 ? new PageShapingPool(workers) : null;
  const writer = new LoadWriter(dest, 'bench', 'profiles', new Mutex());
  const pages = Math.ceil(records / PAGE);
  let rows = 0;
  const readJob = async (job: number): Promise<void> => {
    for (let page = job; page < pages; page += JOBS) {
      const { text, items } = resultsPage(page, records);
      const valuesOf = valuesLookup(items);
      const shaped = pool
        ? await pool.shape({ stream: 'profiles', spec, text, items, shapings: [shaping], runId: 'bench' })
        : decodeResultsPage(text, valuesOf, shaper, new Map([['profiles', shaping]]), 'bench');
      if (!shaped) throw new Error(`page ${page} was not shaped`);
      const { entries } = shaped.data;
      const seeds = entries.map((e): SeedRow => ({
        stream: 'profiles',
        seedKey: e.ref,
        seed: String(valuesOf(e.ref).seed),
        status: 'fetched',
        canonicalUrl: e.canonicalUrl,
        jobId: `job-${job}`,
        credits: e.credits_used,
        fetchedAt: new Date(),
        error: null,
      }));
      const batch: BatchRow = {
        idempotencyKey: `bench-${job}`,
        stream: 'profiles',
        bodyHash: '',
        body: '{}',
        status: 'submitted',
        itemCount: pages,
        jobId: `job-${job}`,
        resultsCursor: String(page),
      };
      const counts = await writer.inUnit(
        shapedGroups({ ...shaped.data, text, shapings: [shaping] }, valuesOf, shaper),
        async (unit) => {
          await unit.saveSeeds(seeds);
          await unit.saveBatches([batch]);
        },
      );
      if (counts.rejected > 0) throw new Error(`${counts.rejected} records rejected`);
      rows += counts.rows;
    }
  };
  try {
    await Promise.all(Array.from({ length: JOBS }, (_, job) => readJob(job)));
  } finally {
    await pool?.close();
  }
  return rows;
}

/** Batch jobs read at once by the `pages` paths: the sandbox's default `concurrent_batch_jobs`. */
const JOBS = 5;
const PAGE = 500;

/** The `page`-th results page of a profiles job as the service sends it, and its items' partition values. */
function resultsPage(page: number, records: number): { text: string; items: [string, Record<string, unknown>][] } {
  const entries = [];
  const items: [string, Record<string, unknown>][] = [];
  for (let i = page * PAGE; i < Math.min(records, (page + 1) * PAGE); i++) {
    const data = profileRecord(i) as { url: string };
    const ref = `p${i}`;
    items.push([ref, { url: data.url, seed: data.url, key: ref }]);
    entries.push({
      ref,
      index: i - page * PAGE,
      operation: 'profiles.enrich',
      status: 'succeeded',
      credits_used: 1,
      data,
    });
  }
  return { text: JSON.stringify({ data: entries, meta: { nextCursor: null } }), items };
}

/** The workers of the `pages` paths: `pages` alone is the main thread's. */
export const workersOf = (path: string): number => Number(/workers=(\d+)/.exec(path)?.[1] ?? 0);

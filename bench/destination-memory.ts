/**
 * Peak memory of the destination's own work for a batch sync of N profile seeds, with no engine,
 * no client and no service: the statements a sync's load units make, in the same order and
 * sizes, through the real `Destination`. Beside `bench/seeds-memory.ts` (the whole sync) it says
 * how much of a sync's memory is the database's doing.
 *
 *   npx tsc -p tsconfig.bench.json
 *   node dist/bench/destination-memory.js [--seeds 100000] [--parts data,ledger,batches,reads,runs] [--backend duckdb|postgres] [--duckdb-settings k=v,…]
 *
 * Per chunk of 1,000 seeds: the ledger rows of the chunk read by key (`reads`), a unit with the
 * batch intent (`batches`) and the chunk's ledger rows `submitted` (`ledger`); then per results
 * page of 500, a unit with the 500 profile records merged (`data`, ~8 rows each), their ledger
 * rows `fetched` and the batch's cursor; and after each unit the run's row (`runs`), as the run
 * recorder saves it. `--parts` keeps only some of them. Prints the peak RSS (the kernel's
 * high-water mark, startup included), the V8 heap at the end and, on DuckDB, the memory its
 * buffer manager accounts for at the end (`duckdb_memory()`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Profile } from '../schemas/profile.js';
import { createDestination } from '../src/destinations/create-destination.js';
import type { DestinationConfig } from '../src/destinations/destination.js';
import { limitHeapGrowth } from '../src/cli/heap-growth.js';
import { rerunWithEntryPointEnv } from './entry-point-env.js';
import { profileRecord } from './profile-records.js';

const CHUNK = 1_000;
const PAGE = 500;
const STREAM = 'profiles';

function flag(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? String(process.argv[at + 1]) : fallback;
}

const seedOf = (i: number): string => `https://network.example/in/person-${i}`;

async function main(): Promise<void> {
  // As the `seedline` entry point does (src/cli/heap-growth.ts): the figures are those of a seedline process.
  limitHeapGrowth();
  const seeds = Number(flag('seeds', '100000'));
  const parts = new Set(flag('parts', 'data,ledger,batches,reads,runs').split(','));
  const backend = flag('backend', 'duckdb');
  const settings = flag('duckdb-settings', '');
  const dir = mkdtempSync(join(tmpdir(), 'seedline-bench-destmem-'));
  const config: DestinationConfig =
    backend === 'postgres'
      ? {
          type: 'postgres',
          url: process.env.SEEDLINE_TEST_PG_URL ?? 'postgres://127.0.0.1:5432/test',
          schema: `bench_destmem_${process.pid}`,
        }
      : {
          type: 'duckdb',
          path: join(dir, 'bench.duckdb'),
          ...(settings
            ? { settings: Object.fromEntries(settings.split(',').map((kv) => kv.split('=') as [string, string])) }
            : {}),
        };
  const dest = await createDestination(config);
  const started = Date.now();
  try {
    await dest.lock({ holder: `bench/destination-memory.ts (pid ${process.pid})` });
    await dest.ensureSystemTables();
    await dest.ensureTable({ name: STREAM, schema: Profile, primaryKey: ['url'], writeMode: 'merge' });
    for (let start = 0; start < seeds; start += CHUNK) {
      const end = Math.min(seeds, start + CHUNK);
      const keys = Array.from({ length: end - start }, (_, j) => seedOf(start + j));
      const batch = {
        idempotencyKey: `key-${start}`,
        stream: STREAM,
        bodyHash: 'h',
        body: '{"items":[]}',
        jobId: `job-${start}`,
        itemCount: keys.length,
      };
      if (parts.has('reads')) await dest.readSeedsByKey(STREAM, keys);
      const intent = await dest.beginUnit('bench');
      if (parts.has('batches')) await intent.saveBatches([{ ...batch, status: 'submitted' }]);
      if (parts.has('ledger'))
        await intent.saveSeeds(
          keys.map((key) => ({
            stream: STREAM,
            seedKey: key,
            seed: key,
            status: 'submitted' as const,
            jobId: batch.jobId,
          })),
        );
      await intent.commit();
      for (let page = start; page < end; page += PAGE) {
        const last = Math.min(end, page + PAGE);
        const unit = await dest.beginUnit('bench');
        if (parts.has('data'))
          await unit.write(
            STREAM,
            Array.from({ length: last - page }, (_, j) => profileRecord(page + j)),
          );
        if (parts.has('ledger'))
          await unit.saveSeeds(
            keys.slice(page - start, last - start).map((key) => ({
              stream: STREAM,
              seedKey: key,
              seed: key,
              status: 'fetched' as const,
              jobId: batch.jobId,
              credits: 1,
              fetchedAt: new Date(),
            })),
          );
        if (parts.has('batches'))
          await unit.saveBatches([
            { ...batch, status: last === end ? 'completed' : 'submitted', resultsCursor: `page-${last}` },
          ]);
        await unit.commit();
        if (parts.has('runs'))
          await dest.saveRun({ runId: 'bench', startedAt: new Date(started), status: 'running', creditsUsed: last });
      }
    }
    const own =
      backend === 'duckdb'
        ? (await dest.query<{ mb: unknown }>('select sum(memory_usage_bytes) / 1048576 as mb from duckdb_memory()'))[0]!
            .mb
        : null;
    if (backend === 'postgres') await dest.query(`drop schema "${(config as { schema: string }).schema}" cascade`);
    const heapMb = process.memoryUsage().heapUsed / 2 ** 20;
    process.stdout.write(
      `${JSON.stringify({ backend, seeds, parts: [...parts].join('+'), seconds: (Date.now() - started) / 1000, peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024), heap_mb: Math.round(heapMb), ...(own === null ? {} : { duckdb_own_mb: Math.round(Number(own)) }) })}\n`,
    );
  } finally {
    await dest.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (!(await rerunWithEntryPointEnv())) await main();

/**
 * What a refresh costs the DuckDB destination as its table grows (issue 20, item 2): units of
 * keys already loaded, merged through `DuckDbDestination` into a profiles table of N parents and
 * 5N positions, then `settle()`. Two ways, alternated (A B A B …) on copies of the same file:
 *
 * - `deferred` (the destination's way): a unit lists its keys in `_seedline_pending__profiles`
 *   and loads its rows; the settle deletes the replaced rows, one scan per table;
 * - `in-unit` (the way before it, forced through the dialect's `deferredMerge` trait): a unit
 *   stages its keys and deletes their rows from both tables, a scan of each per unit.
 *
 *   npx tsc -p tsconfig.bench.json && node dist/bench/merge-refresh.js [--sizes=100000,1000000] [--units=10] [--repeat=3]
 *
 * Prints per size and way the median (min) of a unit's milliseconds (write and commit), of the
 * settle, and of the whole refresh (units and settle), and checks that every key is left with one
 * row and its positions.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { Profile } from '../schemas/profile.js';
import type { Destination } from '../src/destinations/destination.js';
import type { TableDefinition } from '../src/normalize/table-definition.js';
import { DuckDbDestination } from '../src/destinations/duckdb/duckdb-destination.js';
import { formatTable } from '../src/cli/format-table.js';
import { profileRecord } from './profile-records.js';
import { median } from './stats.js';

const UNIT = 5_000;
const WAYS = ['deferred', 'in-unit'] as const;
type Way = (typeof WAYS)[number];
const profiles: TableDefinition = { name: 'profiles', schema: Profile, primaryKey: ['url'], writeMode: 'merge' };

/** A file holding the destination's profiles tables with n parents (`person-0` …) and five positions each. */
async function filledFile(dir: string, n: number): Promise<string> {
  const path = join(dir, `filled-${n}.duckdb`);
  const dest = new DuckDbDestination({ path });
  await dest.ensureSystemTables();
  await dest.ensureTable(profiles);
  await dest.close();
  const instance = await DuckDBInstance.create(path, { preserve_insertion_order: 'false' });
  const connection = await instance.connect();
  const url = (i: string) => `'https://network.example/in/person-' || ${i}`;
  await connection.run(
    `insert into seedline.profiles (url, full_name, headline, _run_id, _loaded_at) select ${url('i')}, 'Person ' || i, 'Engineer #' || i, 'run_fill', now() from range(${n}) r(i)`,
  );
  await connection.run(
    `insert into seedline.profiles__positions (_parent_url, _index, title, company, _run_id, _loaded_at) select ${url('i // 5')}, i % 5, 'Title ' || i, 'Acme', 'run_fill', now() from range(${5 * n}) r(i)`,
  );
  await connection.run('checkpoint');
  connection.closeSync();
  instance.closeSync();
  return path;
}

/** One refresh on a copy of the filled file: `units` units of existing keys spread over the table, then the settle. */
async function refresh(
  filled: string,
  n: number,
  units: number,
  way: Way,
): Promise<{ unitMs: number[]; settleMs: number }> {
  const path = `${filled}.${way}.duckdb`;
  copyFileSync(filled, path);
  const dest = new DuckDbDestination({ path });
  try {
    await dest.ensureSystemTables();
    await dest.ensureTable(profiles);
    // The way before deferred merges, for comparison: the trait is read at each merge.
    (dest as unknown as { traits: { deferredMerge: boolean } }).traits.deferredMerge = way === 'deferred';
    const unitMs: number[] = [];
    for (let unit = 0; unit < units; unit++) {
      const start = Math.floor((((unit * 7919) % 97) / 97) * Math.max(0, n - UNIT));
      const records = Array.from({ length: UNIT }, (_, i) => profileRecord(start + i));
      const started = performance.now();
      const load = await dest.beginUnit(`run_${unit}`);
      await load.write('profiles', records);
      await load.commit();
      unitMs.push(performance.now() - started);
    }
    const started = performance.now();
    await dest.settle();
    const settleMs = performance.now() - started;
    await check(dest, n);
    return { unitMs, settleMs };
  } finally {
    await dest.close();
    rmSync(path, { force: true });
    rmSync(`${path}.wal`, { force: true });
  }
}

/** Throws unless the table holds n parents, one a key, and every parent its positions. */
async function check(dest: Destination, n: number): Promise<void> {
  const [row] = await dest.query<{ rows: number; keys: number; orphans: number }>(
    `select (select count(*) from seedline.profiles) as rows, (select count(distinct url) from seedline.profiles) as keys,
       (select count(*) from seedline.profiles p where not exists (select 1 from seedline.profiles__positions c where c._parent_url = p.url)) as orphans`,
  );
  if (Number(row!.rows) !== n || Number(row!.keys) !== n || Number(row!.orphans) !== 0)
    throw new Error(
      `after the refresh: ${JSON.stringify(row, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v))}, expected ${n} rows, one a key`,
    );
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const option = (name: string, fallback: string) =>
    args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
  const sizes = option('sizes', '100000,1000000').split(',').map(Number);
  const units = Number(option('units', '10'));
  const repeats = Number(option('repeat', '3'));
  const dir = mkdtempSync(join(tmpdir(), 'seedline-bench-refresh-'));
  const rows: Record<string, unknown>[] = [];
  try {
    for (const n of sizes) {
      const filled = await filledFile(dir, n);
      const runs: Record<Way, { unitMs: number[]; settleMs: number }[]> = { deferred: [], 'in-unit': [] };
      for (let r = 0; r < repeats; r++) for (const way of WAYS) runs[way].push(await refresh(filled, n, units, way));
      for (const way of WAYS) {
        const figure = (values: number[]) => `${median(values).toFixed(0)} (${Math.min(...values).toFixed(0)})`;
        const each = runs[way];
        rows.push({
          parents: n.toLocaleString('en-US'),
          way,
          'unit ms': figure(each.map((run) => median(run.unitMs))),
          'settle ms': figure(each.map((run) => run.settleMs)),
          'refresh s': `${(median(each.map((run) => run.unitMs.reduce((a, b) => a + b, 0) + run.settleMs)) / 1000).toFixed(2)}`,
        });
        process.stderr.write(`${JSON.stringify(rows.at(-1))}\n`);
      }
      rmSync(filled, { force: true });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(
    `${units} units of ${UNIT.toLocaleString('en-US')} existing keys each, then the settle; median (min) of ${repeats} refreshes a way, alternated\n\n${formatTable(rows)}\n`,
  );
}

await main();

/**
 * Whether a full refresh's units fit DuckDB's memory limit, in minutes instead of the half hour of
 * a million-seed `seeds-memory.ts --refresh`: takes a DuckDB file a sync of profiles left
 * (`seeds-memory.ts` with `SEEDS_MEMORY_KEEP=FILE`) and replays, in SQL, what each unit of a
 * `--full-refresh` of the same seeds writes: the unit's profiles appended again with a later
 * `_loaded_at` (the child tables' rows in the same proportion), their keys listed in the pending
 * table, and their seed-ledger rows upserted `submitted`, then `fetched`. DuckDB checkpoints by
 * itself whenever the WAL passes `checkpoint_threshold`, as in a sync. Prints, at each limit,
 * whether every unit committed, how far it got, and DuckDB's largest accounted memory by tag
 * (read every 200 ms on another connection).
 *
 *   npx tsc -p tsconfig.bench.json && node dist/bench/refresh-memory.js --file FILE [--grow 1000000] [--limits 64MB] [--settings k=v,…] [--unit 5000]
 *     [--parts data,pending,ledger] [--rows-between-reopens 250000] [--lookups]
 *
 * `--grow N` first makes a file of N profiles out of a smaller one (a 20k sync's, in a minute
 * instead of the half hour of a million-seed sync): the profiles, their child rows and their ledger
 * rows copied until there are N, each copy with its text columns suffixed, so keys stay unique and
 * the values do not compress better than a sync's. The file is closed and opened again every
 * `--rows-between-reopens` rows appended, as the destination does (0: never).
 */
import { copyFileSync, rmSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
import type { DuckDBConnection } from '@duckdb/node-api';
import { formatTable } from '../src/cli/format-table.js';
import { systemTables } from '../src/destinations/sql/system-tables.js';
import { DEFAULT_ROWS_BETWEEN_REOPENS } from '../src/destinations/duckdb/duckdb-connections.js';
import type { SystemTable } from '../src/destinations/sql/system-tables.js';

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? process.argv[at + 1]! : fallback;
}

/** `--parts data,pending,ledger`: what each unit writes (all three by default). */
const PARTS = new Set(option('parts', 'data,pending,ledger').split(','));

const LEDGER: SystemTable = systemTables.seeds;

/** A DuckDB file with its WAL and its temporary folder: a WAL left by a killed run would be replayed into the next copy. */
function removeFile(path: string): void {
  for (const leftover of [path, `${path}.wal`]) rmSync(leftover, { force: true });
  rmSync(`${path}.tmp`, { recursive: true, force: true });
}

/** Text columns a copy keeps as they are: what the ledger's statements select on. */
const KEPT_AS_IS = new Set(['stream', 'status']);

/** `file`'s profiles, child rows and ledger rows copied into a new file until it holds `target` profiles. */
async function grownCopy(file: string, target: number): Promise<string> {
  const path = `${file}.grown-${target}.duckdb`;
  removeFile(path);
  copyFileSync(file, path);
  const instance = await DuckDBInstance.create(path, { preserve_insertion_order: 'false' });
  const connection = await instance.connect();
  const sizes = await tableSizes(connection);
  const tables = [...sizes.keys(), LEDGER.name];
  const texts = new Map<string, string[]>();
  for (const table of tables)
    texts.set(
      table,
      (
        await connection.runAndReadAll(
          `select column_name from information_schema.columns where table_schema = 'seedline' and table_name = '${table}' and data_type = 'VARCHAR'`,
        )
      )
        .getRowObjects()
        .map((row) => String(row.column_name))
        .filter((column) => !KEPT_AS_IS.has(column)),
    );
  const copies = Math.ceil(target / sizes.get('profiles')!) - 1;
  for (let copy = 1; copy <= copies; copy++) {
    await connection.run('begin transaction');
    for (const table of tables) {
      const suffixed = texts.get(table)!.map((column) => `${column} || '~${copy}' as ${column}`);
      await connection.run(
        `insert into seedline."${table}" select * replace (${suffixed.join(', ')}) from seedline."${table}" where rowid < ${sizes.get(table) ?? sizes.get('profiles')!}`,
      );
    }
    await connection.run('commit');
  }
  await connection.run('checkpoint');
  connection.closeSync();
  instance.closeSync();
  process.stderr.write(`grown copy: ${copies + 1} times the profiles of ${file}\n`);
  return path;
}

/** Row counts of the profiles table and its child tables, as the first sync left them. */
async function tableSizes(connection: DuckDBConnection): Promise<Map<string, number>> {
  const names = (
    await connection.runAndReadAll(
      "select table_name from information_schema.tables where table_schema = 'seedline' and (table_name = 'profiles' or table_name like 'profiles\\_\\_%' escape '\\') order by table_name",
    )
  )
    .getRowObjects()
    .map((row) => String(row.table_name));
  const sizes = new Map<string, number>();
  for (const name of names) {
    const [row] = (await connection.runAndReadAll(`select count(*) as n from seedline."${name}"`)).getRowObjects();
    sizes.set(name, Number(row!.n));
  }
  return sizes;
}

async function ledgerSize(connection: DuckDBConnection): Promise<number> {
  const [row] = (await connection.runAndReadAll(`select count(*) as n from seedline.${LEDGER.name}`)).getRowObjects();
  return Number(row!.n);
}

/** The ledger rows with rowids in [from, to) upserted with `status`, as a unit's `saveSeeds` does. */
function ledgerUpsert(from: number, to: number, status: string): string {
  const kept = new Set([...LEDGER.primaryKey, 'created_at', ...(LEDGER.writeOnce ?? [])]);
  const updated = LEDGER.columns.map(([name]) => name).filter((name) => !kept.has(name));
  return (
    `insert into seedline.${LEDGER.name} select * replace ('${status}' as status) from seedline.${LEDGER.name} ` +
    `where rowid >= ${from} and rowid < ${to} on conflict (${LEDGER.primaryKey.join(', ')}) do update set ` +
    updated.map((name) => `${name} = excluded.${name}`).join(', ')
  );
}

/**
 * One refresh unit of the profiles with rowids in [from, to): its rows again, its keys listed, its
 * ledger rows upserted; resolves to the rows it appended, as the destination counts them.
 */
async function replayUnit(
  connection: DuckDBConnection,
  sizes: Map<string, number>,
  from: number,
  to: number,
): Promise<number> {
  const profiles = sizes.get('profiles')!;
  let appended = 0;
  const stamp = "now() + interval '1 second'";
  await connection.run('begin transaction');
  if (PARTS.has('ledger')) await connection.run(ledgerUpsert(from, to, 'submitted'));
  for (const [table, rows] of PARTS.has('data') ? sizes : []) {
    const start = Math.floor((from * rows) / profiles);
    const end = Math.floor((to * rows) / profiles);
    appended += end - start;
    await connection.run(
      `insert into seedline."${table}" select * replace (${stamp} as _loaded_at) from seedline."${table}" where rowid >= ${start} and rowid < ${end}`,
    );
  }
  if (PARTS.has('pending'))
    await connection.run(
      `insert into seedline._seedline_pending__profiles select url, ${stamp} from seedline.profiles where rowid >= ${from} and rowid < ${to}`,
    );
  if (PARTS.has('ledger')) await connection.run(ledgerUpsert(from, to, 'fetched'));
  await connection.run('commit');
  return appended + (PARTS.has('pending') ? to - from : 0) + (PARTS.has('ledger') ? 2 * (to - from) : 0);
}

/** A DuckDB instance on the run's file, with the connection that writes and the one that samples `duckdb_memory()`. */
interface Opened {
  instance: DuckDBInstance;
  writer: DuckDBConnection;
  sampler: DuckDBConnection;
  reader: DuckDBConnection;
}

async function open(path: string, settings: Record<string, string>): Promise<Opened> {
  const instance = await DuckDBInstance.create(path, settings);
  const [writer, sampler, reader] = [await instance.connect(), await instance.connect(), await instance.connect()];
  return { instance, writer, sampler, reader };
}

function close(opened: Opened): void {
  opened.sampler.closeSync();
  opened.reader.closeSync();
  opened.writer.closeSync();
  opened.instance.closeSync();
}

/** Reads `duckdb_memory()` every 200 ms into `peak` (largest MB by tag, and their sum). */
function sample(current: () => Opened, peak: Record<string, number>): () => void {
  let reading = false;
  const timer = setInterval(() => {
    if (reading) return;
    reading = true;
    current()
      .sampler.runAndReadAll(
        'select tag, memory_usage_bytes / 1048576 as mb from duckdb_memory() where memory_usage_bytes > 0',
      )
      .then((reader) => {
        let total = 0;
        for (const row of reader.getRowObjects()) {
          total += Number(row.mb);
          peak[String(row.tag)] = Math.max(peak[String(row.tag)] ?? 0, Math.round(Number(row.mb)));
        }
        peak.total = Math.max(peak.total ?? 0, Math.round(total));
      })
      .catch(() => undefined)
      .finally(() => (reading = false));
  }, 200);
  return () => clearInterval(timer);
}

/**
 * `--lookups`: the ledger rows of 1,000 seeds read by key, one lookup after another on a connection
 * of its own while the units run, as a batch sync's seed scan reads each chunk's rows beside the
 * units in flight (`Destination.readSeedsByKey`); resolves once `running()` turns false.
 */
async function lookUpSeeds(current: () => Opened, ledgerRows: number, running: () => boolean): Promise<number> {
  let lookups = 0;
  for (let from = 0; running(); from = (from + 1_000) % Math.max(1, ledgerRows - 1_000)) {
    const reader = current().reader;
    try {
      const keys = (
        await reader.runAndReadAll(
          `select seed_key from seedline.${LEDGER.name} where rowid >= ${from} and rowid < ${from + 1_000}`,
        )
      )
        .getRows()
        .map((row) => `'${String(row[0]).replaceAll("'", "''")}'`);
      await reader.runAndReadAll(
        `select * from seedline.${LEDGER.name} where stream = 'profiles' and seed_key in (${keys.join(', ')})`,
      );
      lookups++;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50)); // the file is being opened again
    }
  }
  return lookups;
}

/**
 * Replays every unit on a copy of `file` at `limit`, closing and opening the file again every
 * `--rows-between-reopens` rows appended as the destination does; how far it got and
 * DuckDB's largest memory by tag (MB).
 */
async function refreshAt(file: string, limit: string, settings: Record<string, string>, unit: number) {
  const path = `${file}.refresh-run.duckdb`;
  removeFile(path);
  copyFileSync(file, path);
  const options = { preserve_insertion_order: 'false', checkpoint_threshold: '64MB', ...settings, memory_limit: limit };
  const reopenEvery = Number(option('rows-between-reopens', String(DEFAULT_ROWS_BETWEEN_REOPENS)));
  let opened = await open(path, options);
  const peak: Record<string, number> = {};
  const stopSampling = sample(() => opened, peak);
  // Lookups stop while the file is closed and opened again: closing an instance under a running query hangs.
  let running = true;
  const ledgerRows = await ledgerSize(opened.writer);
  const startLookups = () =>
    process.argv.includes('--lookups')
      ? lookUpSeeds(
          () => opened,
          ledgerRows,
          () => running,
        )
      : Promise.resolve(0);
  let lookups = startLookups();
  let seedLookups = 0;
  const started = performance.now();
  let outcome = 'passed';
  let done = 0;
  let reopens = 0;
  try {
    const sizes = await tableSizes(opened.writer);
    await opened.writer.run(
      'create table if not exists seedline._seedline_pending__profiles as select url, _loaded_at from seedline.profiles limit 0',
    );
    const profiles = sizes.get('profiles')!;
    let appended = 0;
    for (let from = 0; from < profiles; from += unit) {
      appended += await replayUnit(opened.writer, sizes, from, Math.min(profiles, from + unit));
      done = Math.min(profiles, from + unit);
      if (reopenEvery > 0 && appended >= reopenEvery) {
        running = false;
        seedLookups += await lookups;
        close(opened);
        opened = await open(path, options);
        running = true;
        lookups = startLookups();
        appended = 0;
        reopens++;
      }
    }
  } catch (error) {
    outcome = `failed: ${String(error instanceof Error ? error.message : error).slice(0, 160)}`;
  } finally {
    stopSampling();
    running = false;
  }
  seedLookups += await lookups;
  const seconds = (performance.now() - started) / 1000;
  close(opened);
  removeFile(path);
  return {
    limit,
    outcome,
    profiles_refreshed: done,
    reopens,
    seed_lookups: seedLookups,
    seconds: seconds.toFixed(1),
    ...peak,
  };
}

async function main(): Promise<void> {
  const file = option('file', '');
  if (!file)
    throw new Error('--file FILE: a DuckDB file a sync of profiles left (seeds-memory.ts with SEEDS_MEMORY_KEEP)');
  const settings = Object.fromEntries(
    option('settings', '')
      .split(',')
      .filter(Boolean)
      .map((kv) => kv.split('=') as [string, string]),
  );
  const unit = Number(option('unit', '5000'));
  const grow = Number(option('grow', '0'));
  const source = grow > 0 ? await grownCopy(file, grow) : file;
  const rows: Record<string, unknown>[] = [];
  for (const limit of option('limits', '64MB').split(',')) {
    rows.push(await refreshAt(source, limit, settings, unit));
    process.stderr.write(`${JSON.stringify(rows.at(-1))}\n`);
  }
  process.stdout.write(`${formatTable(rows)}\n`);
}

await main();

/**
 * Whether the settle after a full refresh fits DuckDB's memory limit, and with how much room:
 * takes a DuckDB file a sync left (`seeds-memory.ts` with `SEEDS_MEMORY_KEEP=FILE`), doubles every
 * row of the profiles table and its child tables as a full refresh leaves them before it settles
 * (each key written again, listed in the pending table), then settles copies of that file through
 * `DuckDbDestination` at each memory limit, lowest first, and prints whether it passed, its time
 * and DuckDB's largest accounted memory by tag (read every 200 ms on another connection).
 *
 *   npx tsc -p tsconfig.bench.json && node dist/bench/settle-memory.js --file FILE [--limits 128MB,96MB,64MB] [--settings k=v,…]
 */
import { copyFileSync, existsSync, rmSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
import { DuckDbDestination } from '../src/destinations/duckdb/duckdb-destination.js';
import { formatTable } from '../src/cli/format-table.js';

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? process.argv[at + 1]! : fallback;
}

/** The file as a full refresh leaves it just before the settle: every profile row written twice, the second time listed as pending. */
async function refreshedCopy(file: string): Promise<string> {
  const path = `${file}.refreshed.duckdb`;
  if (existsSync(path)) return path;
  copyFileSync(file, `${path}.partial`);
  const instance = await DuckDBInstance.create(`${path}.partial`, { preserve_insertion_order: 'false' });
  const connection = await instance.connect();
  const tables = (
    await connection.runAndReadAll(
      "select table_name from information_schema.tables where table_schema = 'seedline' and (table_name = 'profiles' or table_name like 'profiles\\_\\_%' escape '\\') order by table_name",
    )
  )
    .getRowObjects()
    .map((row) => String(row.table_name));
  const loadedAt = "now() + interval '1 second'";
  for (const table of tables)
    await connection.run(
      `insert into seedline."${table}" select * replace (${loadedAt} as _loaded_at) from seedline."${table}"`,
    );
  await connection.run(
    `create table seedline._seedline_pending__profiles as select url, _loaded_at from seedline.profiles where _loaded_at = (select max(_loaded_at) from seedline.profiles)`,
  );
  await connection.run('checkpoint');
  connection.closeSync();
  instance.closeSync();
  copyFileSync(`${path}.partial`, path);
  rmSync(`${path}.partial`, { force: true });
  process.stderr.write(`refreshed copy: ${tables.join(', ')}\n`);
  return path;
}

/** Settles a copy of `refreshed` at `limit`; DuckDB's largest accounted memory by tag (MB) over the settle. */
async function settleAt(refreshed: string, limit: string, settings: Record<string, string>) {
  const path = `${refreshed}.run.duckdb`;
  copyFileSync(refreshed, path);
  const destination = new DuckDbDestination({ path, settings: { ...settings, memory_limit: limit } });
  const peak: Record<string, number> = {};
  let reading = false;
  const sampler = setInterval(() => {
    if (reading) return;
    reading = true;
    destination
      .query('select tag, memory_usage_bytes / 1048576 as mb from duckdb_memory() where memory_usage_bytes > 0')
      .then((rows) => {
        let total = 0;
        for (const row of rows) {
          const mb = Number(row.mb);
          total += mb;
          peak[String(row.tag)] = Math.max(peak[String(row.tag)] ?? 0, Math.round(mb));
        }
        peak.total = Math.max(peak.total ?? 0, Math.round(total));
      })
      .catch(() => undefined)
      .finally(() => (reading = false));
  }, 200);
  const started = performance.now();
  let outcome = 'passed';
  try {
    await destination.lock({ holder: 'bench' });
    await destination.settle();
  } catch (error) {
    outcome = `failed: ${String(error instanceof Error ? error.message : error).slice(0, 160)}`;
  } finally {
    clearInterval(sampler);
  }
  const seconds = (performance.now() - started) / 1000;
  await destination.close().catch(() => undefined);
  rmSync(path, { force: true });
  rmSync(`${path}.wal`, { force: true });
  rmSync(`${path}.tmp`, { recursive: true, force: true });
  return { limit, outcome, seconds: seconds.toFixed(1), ...peak };
}

async function main(): Promise<void> {
  const file = option('file', '');
  if (!file) throw new Error('--file FILE: a DuckDB file a sync of profiles left');
  const settings = Object.fromEntries(
    option('settings', '')
      .split(',')
      .filter(Boolean)
      .map((kv) => kv.split('=') as [string, string]),
  );
  const refreshed = await refreshedCopy(file);
  const rows: Record<string, unknown>[] = [];
  for (const limit of option('limits', '128MB').split(',')) {
    rows.push(await settleAt(refreshed, limit, settings));
    process.stderr.write(`${JSON.stringify(rows.at(-1))}\n`);
  }
  process.stdout.write(`${formatTable(rows)}\n`);
}

await main();

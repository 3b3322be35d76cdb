/**
 * What a DuckDB merge of keys already in the table costs as the table grows, and whether an ART
 * index would help (issue 20, item 2). DuckDB alone, no seedline code: a parent table of N
 * profile-like rows and a child table of 5N rows keyed by the parent's URL, then units of 5,000
 * existing keys deleted the way the DuckDB destination deletes them (keys staged in a temporary
 * table, `delete … where key in (select key from stage)` on the child and the parent), inserted
 * again and committed. Each table size is measured without and with ART indexes on the key
 * columns, alternated, `--repeat` units each.
 *
 *   npx tsc -p tsconfig.bench.json && node dist/bench/duckdb-key-delete.js [--sizes=100000,1000000] [--repeat=3]
 *
 * Prints per size and variant the median and min of each step's milliseconds, the index build
 * time and the memory DuckDB accounts for (`duckdb_memory()`) after the units.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import type { DuckDBConnection } from '@duckdb/node-api';
import { formatTable } from '../src/cli/format-table.js';
import { median } from './stats.js';

const UNIT = 5_000;
const url = (expr: string) => `'https://network.example/in/person-' || ${expr}`;

async function timedMs(connection: DuckDBConnection, statement: string): Promise<number> {
  const started = performance.now();
  await connection.run(statement);
  return performance.now() - started;
}

/** Fills a fresh file with n parents and 5n children; with `indexed`, ART indexes on both key columns. */
async function filled(
  dir: string,
  n: number,
  indexed: boolean,
): Promise<{ connection: DuckDBConnection; indexMs: number; close: () => void }> {
  const instance = await DuckDBInstance.create(join(dir, `n${n}-${indexed ? 'art' : 'scan'}.duckdb`), {
    memory_limit: '256MB',
    threads: '1',
    preserve_insertion_order: 'false',
  });
  const connection = await instance.connect();
  await connection.run('create table profiles (url varchar, full_name varchar, urn bigint)');
  await connection.run('create table profiles__positions (_parent_url varchar, _index bigint, title varchar)');
  await connection.run(`insert into profiles select ${url('i')}, 'Person ' || i, i from range(${n}) r(i)`);
  await connection.run(
    `insert into profiles__positions select ${url('i // 5')}, i % 5, 'Title ' || i from range(${5 * n}) r(i)`,
  );
  let indexMs = 0;
  if (indexed) {
    indexMs += await timedMs(connection, 'create index profiles_url on profiles (url)');
    indexMs += await timedMs(connection, 'create index positions_parent on profiles__positions (_parent_url)');
  }
  await connection.run('checkpoint');
  return { connection, indexMs, close: () => (connection.closeSync(), instance.closeSync()) };
}

/** One unit: stage 5,000 existing keys, delete their rows from both tables, insert them again, commit. */
async function remergeUnit(connection: DuckDBConnection, n: number, unit: number): Promise<Record<string, number>> {
  // Spread over the table, as a refresh of seeds in the ledger's priority order would be.
  const start = Math.floor((((unit * 7919) % 97) / 97) * Math.max(0, n - UNIT));
  await connection.run('begin transaction');
  await connection.run(
    `create temporary table stage as select ${url('i')} as url from range(${start}, ${start + UNIT}) r(i)`,
  );
  const child = await timedMs(
    connection,
    'delete from profiles__positions where _parent_url in (select url from stage)',
  );
  const parent = await timedMs(connection, 'delete from profiles where url in (select url from stage)');
  const insert =
    (await timedMs(
      connection,
      `insert into profiles select ${url('i')}, 'Person ' || i, i from range(${start}, ${start + UNIT}) r(i)`,
    )) +
    (await timedMs(
      connection,
      `insert into profiles__positions select ${url('i // 5')}, i % 5, 'Title ' || i from range(${5 * start}, ${5 * (start + UNIT)}) r(i)`,
    ));
  await connection.run('drop table stage');
  const commit = await timedMs(connection, 'commit');
  return { child, parent, insert, commit };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const sizes = (args.find((a) => a.startsWith('--sizes='))?.slice(8) ?? '100000,1000000').split(',').map(Number);
  const repeats = Number(args.find((a) => a.startsWith('--repeat='))?.slice(9) ?? 3);
  const dir = mkdtempSync(join(tmpdir(), 'seedline-bench-delete-'));
  const rows: Record<string, unknown>[] = [];
  try {
    for (const n of sizes) {
      for (const indexed of [false, true]) {
        const { connection, indexMs, close } = await filled(dir, n, indexed);
        try {
          const units: Record<string, number>[] = [];
          for (let unit = 0; unit < repeats; unit++) units.push(await remergeUnit(connection, n, unit));
          const memory = await (
            await connection.run('select coalesce(sum(memory_usage_bytes), 0) // 1048576 as mb from duckdb_memory()')
          ).getRows();
          const step = (name: string) =>
            `${median(units.map((u) => u[name]!)).toFixed(0)} (${Math.min(...units.map((u) => u[name]!)).toFixed(0)})`;
          rows.push({
            parents: n.toLocaleString('en-US'),
            children: (5 * n).toLocaleString('en-US'),
            keys: indexed ? 'ART indexes' : 'no index (ours)',
            'delete children ms': step('child'),
            'delete parents ms': step('parent'),
            'insert ms': step('insert'),
            'commit ms': step('commit'),
            'index build s': indexed ? (indexMs / 1000).toFixed(1) : '',
            'duckdb MB': Number(memory[0]![0]),
          });
          process.stderr.write(`${JSON.stringify(rows.at(-1))}\n`);
        } finally {
          close();
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(
    `units of ${UNIT.toLocaleString('en-US')} existing keys, median (min) of ${repeats} units\n\n${formatTable(rows)}\n`,
  );
}

await main();

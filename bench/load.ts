/**
 * Load benchmark of the destinations: N generated profile records (about five positions and two
 * education entries each) loaded in merge mode through our Destination, in units, into DuckDB
 * and Postgres, against each engine's own bulk path into the same table shapes (DuckDB
 * `read_json` of an NDJSON file it is given; Postgres `COPY FROM STDIN` of CSV over 3
 * connections, one a table). Each path runs `--repeat` times (default 3), alternated (ours,
 * native, ours, native, …) so a drift of the machine's speed hits both; min, median and max are
 * printed and ratios come from medians.
 *
 * Beside records/s and peak RSS, each path's CPU time on all cores (for Postgres, the server
 * backends of the run's own connections, found in pg_stat_activity by application_name) gives
 * its CPU bound: the records/s it would reach if that work kept every core busy with no waiting.
 *
 *   npx tsc -p tsconfig.bench.json && node dist/bench/load.js [N=100000] [--repeat=3] [--unit=<records>] [--write=<records>] [--only=duckdb|postgres] [--best] [--pages=0,1,2] [--statements]
 *   npx tsx bench/load.ts …   (from the sources: tsx's loader thread adds ~35 MB to each peak RSS)
 *
 * A unit (one transaction) holds 2,000 records on Postgres and 5,000 on DuckDB unless --unit says
 * otherwise; it is written in one `write` call unless --write splits it. The engine commits a
 * results page (500 entries) with its ledger rows, several in one unit when they wait together
 * (`--pages`). A merge finds keys already loaded through the key index
 * (Postgres) or a filter of the table's keys (DuckDB): a unit costs the same at any table size.
 * `--best` adds DuckDB's `read_json` at its best (file already written, every core, no memory limit).
 * `--pages=0,2` adds the engine's own path from results pages (see `loadPages` in bench/load-pages.ts), on the main
 * thread (0) and with each other number of shaping worker threads. `--statements` prints, for
 * each run of our destination, its time in each kind of statement (the wrapper costs little).
 *
 * Records are generated deterministically and streamed: memory does not grow with N. Each run is
 * a child process of its own, so its peak RSS (the kernel's high-water mark, startup included) is
 * its own. Each child caps V8's heap growth the way the `seedline` entry point does
 * (src/cli/heap-growth.ts).
 */
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import copyStreams from 'pg-copy-streams';
import { DuckDBInstance } from '@duckdb/node-api';
import { Profile } from '../schemas/profile.js';
import type { Destination, PreparedWrite } from '../src/destinations/destination.js';
import type { TableDefinition } from '../src/normalize/table-definition.js';
import { DuckDbDestination } from '../src/destinations/duckdb/duckdb-destination.js';
import { PostgresDestination } from '../src/destinations/postgres/postgres-destination.js';
import { postgresConnection } from '../src/destinations/postgres/postgres-connection.js';
import { returnFreedDuckDbMemory } from '../src/cli/duckdb-allocator.js';
import { limitHeapGrowth } from '../src/cli/heap-growth.js';
import { loadPages, workersOf } from './load-pages.js';
import { profileRecord } from './profile-records.js';
import { formatStatementTimes, timeStatements } from './statement-times.js';
import { median } from './stats.js';

const args = process.argv.slice(2);
const N = Number(args.find((a) => /^\d+$/.test(a)) ?? 100_000);
const UNIT_ARG = args.find((a) => a.startsWith('--unit='))?.slice(7);
const UNITS: Record<string, number> = { duckdb: Number(UNIT_ARG ?? 5000), postgres: Number(UNIT_ARG ?? 2000) };
const WRITE_ARG = args.find((a) => a.startsWith('--write='))?.slice(8);
const ONLY = args.find((a) => a.startsWith('--only='))?.slice(7);
/** `--statements`: each run also prints the time its destination spent in each kind of statement (bench/statement-times.ts). */
const STATEMENTS = args.includes('--statements');
const REPEATS = Number(args.find((a) => a.startsWith('--repeat='))?.slice(9) ?? 3);
const BEST = args.includes('--best');
/** `--pages=0,2`: the engine's page path (see `loadPages`) with each number of worker threads (0: the main thread). Default: none. */
const PAGE_PATHS = (args.find((a) => a.startsWith('--pages='))?.slice(8) ?? '')
  .split(',')
  .filter(Boolean)
  .map((w) => (w === '0' ? 'pages' : `pages, workers=${w}`));
/** Set in a child process: `<backend>:<path>:<repeat>:<directory or schema>`. */
const RUN = args.find((a) => a.startsWith('--run='))?.slice(6);
const PG_URL = process.env.SEEDLINE_TEST_PG_URL ?? 'postgres://127.0.0.1:5432/test';
const profiles: TableDefinition = { name: 'profiles', schema: Profile, primaryKey: ['url'], writeMode: 'merge' };

// ---------- measuring ----------

interface Result {
  backend: string;
  path: string;
  /** 1-based repetition of the path. */
  repeat: number;
  records: number;
  rows: number;
  seconds: number;
  peakRss: number;
  /** CPU seconds the load took in this process, every thread (DuckDB's included). */
  clientCpuSeconds: number;
  /** CPU seconds of the server backends this run's own connections used; null for DuckDB, or when /proc cannot tell. */
  serverCpuSeconds: number | null;
}

const CORES = availableParallelism();
/** Clock ticks per second of /proc/<pid>/stat (USER_HZ: 100 on Linux on every architecture Node runs on). */
const USER_HZ = 100;
/** Connections of a Postgres path say who they are, so only their backends' CPU is counted. */
const APPLICATION = `seedline-bench-${process.pid}`;
const RUN_URL = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}application_name=${APPLICATION}`;

/** CPU ticks (user + system) of process `pid`; null once it exited or when /proc cannot be read. */
function cpuTicks(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command: utime is field 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return null;
  }
}

/**
 * CPU of the server backends of this run's connections (their pids from pg_stat_activity, by
 * application_name), sampled every 100 ms from a connection of its own that is not counted: a
 * backend's last figure is the one read before it exits, so the paths sample once more before
 * closing their connections. Null on a remote server or when /proc is not readable.
 */
class ServerCpu {
  private readonly ticks = new Map<number, number>();
  private readonly client = new pg.Client(postgresConnection(PG_URL));
  private timer: NodeJS.Timeout | null = null;
  private sampling: Promise<void> = Promise.resolve();
  private readable = /^postgres(ql)?:\/\/(127\.0\.0\.1|localhost)[:/]/.test(PG_URL);

  async start(): Promise<void> {
    await this.client.connect();
    this.timer = setInterval(() => void this.sample().catch(() => undefined), 100);
  }

  async sample(): Promise<void> {
    // One sample at a time on the connection: a busy server can take longer than the interval to answer.
    this.sampling = this.sampling.catch(() => undefined).then(() => this.read());
    await this.sampling;
  }

  private async read(): Promise<void> {
    const { rows } = await this.client.query<{ pid: number }>(
      'select pid from pg_stat_activity where application_name = $1',
      [APPLICATION],
    );
    for (const { pid } of rows) {
      const ticks = cpuTicks(pid);
      if (ticks === null) this.readable &&= this.ticks.size > 0;
      else this.ticks.set(pid, Math.max(ticks, this.ticks.get(pid) ?? 0));
    }
  }

  async stop(): Promise<number | null> {
    if (this.timer) clearInterval(this.timer);
    await this.sampling.catch(() => undefined);
    await this.client.end();
    if (!this.readable || this.ticks.size === 0) return null;
    return [...this.ticks.values()].reduce((a, b) => a + b, 0) / USER_HZ;
  }
}

/** Set in a Postgres child: the paths call `sample()` before closing their connections. */
let serverCpu: ServerCpu | null = null;

/** CPU seconds of this process so far, every thread. */
function clientCpuSecondsNow(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
}

/** Runs one path in this (child) process and prints its result as a `RESULT {…}` line. */
async function measure(backend: string, path: string, repeat: number, fn: () => Promise<number>): Promise<void> {
  if (backend === 'postgres') {
    serverCpu = new ServerCpu();
    await serverCpu.start();
  }
  const clientBefore = clientCpuSecondsNow();
  const started = performance.now();
  const rows = await fn();
  const seconds = (performance.now() - started) / 1000;
  const clientCpuSeconds = clientCpuSecondsNow() - clientBefore;
  const serverCpuSeconds = serverCpu ? await serverCpu.stop() : null;
  const result: Result = {
    backend,
    path,
    repeat,
    records: N,
    rows,
    seconds,
    peakRss: process.resourceUsage().maxRSS * 1024,
    clientCpuSeconds,
    serverCpuSeconds,
  };
  console.error(
    `  ${backend} ${path} #${repeat}: ${seconds.toFixed(1)} s, ${(N / seconds).toFixed(0)} records/s, peak RSS ${(result.peakRss / 2 ** 20).toFixed(0)} MB`,
  );
  console.log(`RESULT ${JSON.stringify(result)}`);
}

/** Runs `<backend>:<path>:<repeat>:<where>` in a child process with the same Node options (the tsx loader). */
async function inChild(backend: string, path: string, repeat: number, where: string): Promise<Result> {
  const write = [
    ...(WRITE_ARG ? [`--write=${WRITE_ARG}`] : []),
    ...(SETTINGS_ARG ? [`--settings=${SETTINGS_ARG}`] : []),
    ...(STATEMENTS ? ['--statements'] : []),
  ];
  const child = spawn(
    process.execPath,
    [
      ...process.execArgv,
      fileURLToPath(import.meta.url),
      String(N),
      `--unit=${UNITS[backend]}`,
      ...write,
      `--run=${backend}:${path}:${repeat}:${where}`,
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      // The allocator options the `seedline` entry point gives libduckdb (src/cli/duckdb-allocator.ts), for both paths.
      env: returnFreedDuckDbMemory({ ...process.env }),
    },
  );
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (output += text));
  const [code] = (await once(child, 'close')) as [number | null];
  const line = output.split('\n').find((l) => l.startsWith('RESULT '));
  if (code !== 0 || !line) throw new Error(`${backend} ${path} failed (exit ${code})`);
  return JSON.parse(line.slice(7)) as Result;
}

async function loadOurs(dest: Destination): Promise<number> {
  const unitSize = UNITS[dest.kind]!;
  const writeSize = Math.min(unitSize, Number(WRITE_ARG ?? unitSize));
  if (!Number.isInteger(writeSize) || writeSize < 1 || !Number.isInteger(unitSize) || unitSize < 1) {
    throw new Error(
      `--unit and --write take a positive number of records (got --unit=${UNIT_ARG ?? unitSize} --write=${WRITE_ARG ?? ''})`,
    );
  }
  await dest.lock({ holder: `bench/load.ts (pid ${process.pid})` });
  await dest.ensureSystemTables();
  await dest.ensureTable(profiles);
  const prepare = (from: number, to: number): PreparedWrite => {
    const records: Record<string, unknown>[] = [];
    for (let i = from; i < to; i++) records.push(profileRecord(i));
    return dest.prepareWrite('profiles', records, 'bench');
  };
  let rows = 0;
  let next = prepare(0, Math.min(N, writeSize));
  for (let start = 0; start < N; start += unitSize) {
    const end = Math.min(N, start + unitSize);
    const unit = await dest.beginUnit('bench');
    for (let from = start; from < end; from += writeSize) {
      const outcome = await unit.write('profiles', next);
      rows += outcome.rows;
      if (outcome.rejected > 0) throw new Error(`${outcome.rejected} records rejected`);
      if (from + writeSize < end) next = prepare(from + writeSize, Math.min(end, from + 2 * writeSize));
    }
    await unit.saveState([{ stream: 'profiles', partition: '*', cursor: String(end) }]);
    const committing = unit.commit();
    committing.catch(() => undefined); // awaited below; not an unhandled rejection meanwhile
    // As the engine does (src/engine/load-writer.ts), the next records are generated and shaped while this unit commits:
    // one turn of the event loop first, so the COMMIT is on its way.
    await new Promise((resolve) => setImmediate(resolve));
    if (end < N) next = prepare(end, Math.min(N, end + writeSize));
    await committing;
  }
  return rows;
}

// ---------- DuckDB ----------

// What a user gets (src/destinations/duckdb/duckdb-destination.ts), with a smaller buffer pool and one thread: on
// this 2-core machine Node needs the other core, and a second DuckDB thread made inserts slower, not faster. A user
// gets the same with `destination: { type: duckdb, settings: { memory_limit: 128MB, threads: 1 } }`.
const SETTINGS_ARG = args.find((a) => a.startsWith('--settings='))?.slice(11);
const DUCKDB_SETTINGS: Record<string, string> = {
  memory_limit: '128MB',
  threads: '1',
  checkpoint_threshold: '64MB',
  preserve_insertion_order: 'false',
  // `--settings=name=value,…` changes them for both paths, for trying others.
  ...Object.fromEntries(
    (SETTINGS_ARG ?? '')
      .split(',')
      .filter(Boolean)
      .map((kv) => kv.split('=') as [string, string]),
  ),
};

async function duckdbOurs(dir: string, load: (dest: Destination) => Promise<number> = loadOurs): Promise<number> {
  const dest = new DuckDbDestination({ path: join(dir, 'ours.duckdb'), settings: DUCKDB_SETTINGS });
  try {
    return await load(dest);
  } finally {
    await dest.close();
  }
}

/** The records as NDJSON, written by the `native` path and read again by `read_json`'s best case. */
const ndjsonIn = (dir: string): string => join(dir, 'profiles.ndjson');

/** DuckDB's own path: the records written as NDJSON, then loaded by `read_json` with the settings of `ours`. */
async function duckdbNative(dir: string): Promise<number> {
  await writeNdjson(ndjsonIn(dir));
  return loadNdjson(join(dir, 'native.duckdb'), ndjsonIn(dir), DUCKDB_SETTINGS);
}

/**
 * DuckDB's own path at its best: the NDJSON file of the `native` path already written (its generation not timed),
 * every core and no memory limit: what DuckDB alone does on this machine, whatever the memory.
 */
async function duckdbBestCase(dir: string): Promise<number> {
  return loadNdjson(join(dir, 'best.duckdb'), ndjsonIn(dir), {
    threads: String(CORES),
    preserve_insertion_order: 'false',
  });
}

async function writeNdjson(ndjson: string): Promise<void> {
  const out = createWriteStream(ndjson);
  let buffer = '';
  for (let i = 0; i < N; i++) {
    buffer += `${JSON.stringify(profileRecord(i))}\n`;
    if (buffer.length > 1 << 20) {
      if (!out.write(buffer)) await once(out, 'drain');
      buffer = '';
    }
  }
  out.end(buffer);
  await once(out, 'finish');
}

/** Loads the NDJSON file with `read_json` into our table shapes (created by our destination, then filled by DuckDB alone). */
async function loadNdjson(path: string, ndjson: string, settings: Record<string, string>): Promise<number> {
  const shapes = new DuckDbDestination({ path, settings });
  await shapes.ensureSystemTables();
  await shapes.ensureTable(profiles);
  await shapes.close();

  const instance = await DuckDBInstance.create(path, settings);
  const c = await instance.connect();
  const position = `STRUCT(title VARCHAR, company VARCHAR, company_url VARCHAR, network_id VARCHAR, position_id VARCHAR, started_at VARCHAR, ended_at VARCHAR, description VARCHAR, skills VARCHAR[], company_industry VARCHAR, company_headcount BIGINT)`;
  const columns = `{url: 'VARCHAR', public_identifier: 'VARCHAR', urn: 'VARCHAR', full_name: 'VARCHAR', headline: 'VARCHAR',
    location: 'STRUCT(city VARCHAR, region VARCHAR, country VARCHAR)',
    current_company: 'STRUCT(name VARCHAR, url VARCHAR, title VARCHAR, industry VARCHAR, headcount BIGINT)',
    positions: '${position}[]', education: 'STRUCT(school VARCHAR, degree VARCHAR, field VARCHAR, education_id VARCHAR)[]',
    skills: 'JSON', languages: 'JSON', connections_count: 'BIGINT', followers_count: 'BIGINT', scraped_at: 'TIMESTAMPTZ', locale: 'VARCHAR'}`;
  const src = `read_json('${ndjson.replace(/'/g, "''")}', format = 'newline_delimited', columns = ${columns})`;
  await c.run('BEGIN TRANSACTION');
  await c.run(`CREATE TEMP TABLE raw AS SELECT * FROM ${src}`);
  const a =
    await c.run(`INSERT INTO seedline.profiles (url, public_identifier, urn, full_name, headline, location__city, location__region, location__country,
      current_company__name, current_company__url, current_company__title, current_company__industry, current_company__headcount,
      skills, languages, connections_count, followers_count, scraped_at, locale, _run_id, _loaded_at)
    SELECT url, public_identifier, urn, full_name, headline, location.city, location.region, location.country,
      current_company.name, current_company.url, current_company.title, current_company.industry, current_company.headcount,
      skills, languages, connections_count, followers_count, scraped_at, locale, 'native', now() FROM raw`);
  const b =
    await c.run(`INSERT INTO seedline.profiles__positions (_parent_url, _index, title, company, company_url, network_id, position_id, started_at, ended_at, description, skills, company_industry, company_headcount, _run_id, _loaded_at)
    SELECT url, i - 1, p.title, p.company, p.company_url, p.network_id, p.position_id, p.started_at, p.ended_at, p.description, to_json(p.skills), p.company_industry, p.company_headcount, 'native', now()
    FROM (SELECT url, unnest(positions) AS p, unnest(range(1, len(positions) + 1)) AS i FROM raw)`);
  const e =
    await c.run(`INSERT INTO seedline.profiles__education (_parent_url, _index, school, degree, field, education_id, _run_id, _loaded_at)
    SELECT url, i - 1, e.school, e.degree, e.field, e.education_id, 'native', now()
    FROM (SELECT url, unnest(education) AS e, unnest(range(1, len(education) + 1)) AS i FROM raw)`);
  await c.run('COMMIT');
  c.closeSync();
  instance.closeSync();
  return a.rowsChanged + b.rowsChanged + e.rowsChanged;
}

// ---------- Postgres ----------

async function postgresOurs(schema: string, load: (dest: Destination) => Promise<number> = loadOurs): Promise<number> {
  const dest = new PostgresDestination({ url: RUN_URL, schema });
  try {
    const rows = await load(dest);
    await serverCpu?.sample();
    return rows;
  } finally {
    await dest.close();
  }
}

function csv(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return /[",\n\r]/.test(text) || text === '' ? `"${text.replace(/"/g, '""')}"` : text;
}

async function postgresNative(schema: string): Promise<number> {
  const shapes = new PostgresDestination({ url: RUN_URL, schema });
  await shapes.ensureSystemTables();
  await shapes.ensureTable(profiles);
  await shapes.close();

  const tables = {
    profiles: [
      'url',
      'public_identifier',
      'urn',
      'full_name',
      'headline',
      'location__city',
      'location__region',
      'location__country',
      'current_company__name',
      'current_company__url',
      'current_company__title',
      'current_company__industry',
      'current_company__headcount',
      'skills',
      'languages',
      'connections_count',
      'followers_count',
      'scraped_at',
      'locale',
      '_run_id',
      '_loaded_at',
    ],
    profiles__positions: [
      '_parent_url',
      '_index',
      'title',
      'company',
      'company_url',
      'network_id',
      'position_id',
      'started_at',
      'ended_at',
      'description',
      'skills',
      'company_industry',
      'company_headcount',
      '_run_id',
      '_loaded_at',
    ],
    profiles__education: [
      '_parent_url',
      '_index',
      'school',
      'degree',
      'field',
      'education_id',
      '_run_id',
      '_loaded_at',
    ],
  };
  const clients = await Promise.all(
    Object.keys(tables).map(async () => {
      const client = new pg.Client(postgresConnection(RUN_URL));
      await client.connect();
      return client;
    }),
  );
  const streams = Object.entries(tables).map(([table, cols], k) =>
    clients[k]!.query(
      copyStreams.from(
        `COPY "${schema}"."${table}" (${cols.map((c) => `"${c}"`).join(', ')}) FROM STDIN WITH (FORMAT csv)`,
      ),
    ),
  );
  const done = streams.map((s) => once(s, 'finish'));
  const buffers = ['', '', ''];
  const now = new Date().toISOString();
  let rows = 0;
  const flush = async (force: boolean): Promise<void> => {
    for (let k = 0; k < 3; k++) {
      if (buffers[k]!.length > (force ? 0 : 1 << 18)) {
        if (!streams[k]!.write(buffers[k]!)) await once(streams[k]!, 'drain');
        buffers[k] = '';
      }
    }
  };
  for (let i = 0; i < N; i++) {
    const p = profileRecord(i) as any;
    buffers[0] +=
      [
        p.url,
        p.public_identifier,
        p.urn,
        p.full_name,
        p.headline,
        p.location.city,
        p.location.region,
        p.location.country,
        p.current_company.name,
        p.current_company.url,
        p.current_company.title,
        p.current_company.industry,
        p.current_company.headcount,
        p.skills,
        p.languages,
        p.connections_count,
        p.followers_count,
        p.scraped_at,
        p.locale,
        'native',
        now,
      ]
        .map(csv)
        .join(',') + '\n';
    p.positions.forEach((x: any, j: number) => {
      buffers[1] +=
        [
          p.url,
          j,
          x.title,
          x.company,
          x.company_url,
          x.network_id,
          x.position_id,
          x.started_at,
          x.ended_at,
          x.description,
          x.skills,
          x.company_industry,
          x.company_headcount,
          'native',
          now,
        ]
          .map(csv)
          .join(',') + '\n';
    });
    p.education.forEach((x: any, j: number) => {
      buffers[2] += [p.url, j, x.school, x.degree, x.field, x.education_id, 'native', now].map(csv).join(',') + '\n';
    });
    rows += 1 + p.positions.length + p.education.length;
    if (i % 256 === 0) await flush(false);
  }
  await flush(true);
  for (const s of streams) s.end();
  await Promise.all(done);
  await serverCpu?.sample();
  await Promise.all(clients.map((c) => c.end()));
  return rows;
}

async function postgresSchemaDrop(schema: string): Promise<void> {
  const client = new pg.Client(postgresConnection(PG_URL));
  await client.connect();
  await client.query(`drop schema if exists "${schema}" cascade`);
  await client.end();
}

// ---------- main ----------

/** One path's runs in a child each, in a fresh directory or schema, dropped afterwards. */
async function runPath(backend: string, path: string, repeat: number, dir: string): Promise<Result> {
  if (backend === 'duckdb') {
    // The best case reads the NDJSON file the native run of the same repetition wrote.
    const where = join(dir, `${path === 'best case' ? 'native' : path.replace(/[^a-z0-9]+/g, '_')}-${repeat}`);
    mkdirSync(where, { recursive: true });
    try {
      return await inChild(backend, path, repeat, where);
    } finally {
      if (path !== 'native' || !BEST) rmSync(where, { recursive: true, force: true });
    }
  }
  const schema = `bench_${path.replace(/[^a-z0-9]+/g, '_')}_${repeat}_${randomBytes(4).toString('hex')}`;
  try {
    return await inChild(backend, path, repeat, schema);
  } finally {
    await postgresSchemaDrop(schema).catch(() => undefined);
  }
}

function printTable(results: Result[]): void {
  const header = [
    'backend',
    'path',
    'runs',
    'min s',
    'median s',
    'max s',
    'records/s (median)',
    'ours/native (medians)',
    'peak RSS MB (max)',
    'CPU s (median)',
    'server CPU s (median)',
    'CPU bound rec/s',
  ];
  const groups = [...new Set(results.map((r) => `${r.backend}\u0000${r.path}`))].map((key) =>
    results.filter((r) => `${r.backend}\u0000${r.path}` === key),
  );
  const lines = groups.map((runs) => {
    const { backend, path } = runs[0]!;
    const seconds = runs.map((r) => r.seconds);
    const native = results.filter((r) => r.backend === backend && r.path === 'native').map((r) => r.seconds);
    const ratio = path !== 'native' && native.length > 0 ? (median(native) / median(seconds)).toFixed(2) : '';
    const servers = runs.map((r) => r.serverCpuSeconds);
    const server =
      backend === 'postgres' ? (servers.includes(null) ? 'n/a' : median(servers as number[]).toFixed(1)) : '';
    const cpu = median(runs.map((r) => r.clientCpuSeconds + (r.serverCpuSeconds ?? 0)));
    const bound = server === 'n/a' ? 'n/a' : (N / (cpu / CORES)).toFixed(0);
    return [
      backend,
      path,
      String(runs.length),
      Math.min(...seconds).toFixed(2),
      median(seconds).toFixed(2),
      Math.max(...seconds).toFixed(2),
      (N / median(seconds)).toFixed(0),
      ratio,
      (Math.max(...runs.map((r) => r.peakRss)) / 2 ** 20).toFixed(0),
      cpu.toFixed(1),
      server,
      bound,
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const format = (cells: string[]): string => cells.map((c, i) => c.padStart(widths[i]!)).join('  ');
  console.log(format(header));
  for (const line of lines) console.log(format(line));
  console.log(
    `Each path ran ${REPEATS} times, alternated (ours, native, ours, native, …), each run in a fresh child process and a fresh file or schema.\n` +
      `ours/native: native's median seconds over ours (records/s from medians): above 1, ours is faster.\n` +
      `CPU s: CPU time of the load on all cores: this process's threads (DuckDB's included) and, for Postgres, the server backends of the run's own connections (server CPU s).\n` +
      `CPU bound rec/s: records/s if that work kept all ${CORES} cores busy with no waiting.` +
      (BEST
        ? `\nbest case: DuckDB's read_json of the NDJSON file already written (its generation not timed), every core, no memory limit.`
        : ''),
  );
}

async function main(): Promise<void> {
  if (RUN) {
    // What the `seedline` entry point does at startup (src/cli/heap-growth.ts): the figures are those of a seedline process.
    limitHeapGrowth();
    const [backend, path, repeat, ...rest] = RUN.split(':') as [string, string, string, ...string[]];
    const paths: Record<string, (where: string) => Promise<number>> = {
      'duckdb:ours': duckdbOurs,
      'duckdb:native': duckdbNative,
      'duckdb:best case': duckdbBestCase,
      'postgres:ours': postgresOurs,
      'postgres:native': postgresNative,
    };
    const pages = (dest: Destination) => loadPages(dest, N, workersOf(path));
    const fn = path.startsWith('pages')
      ? (where: string) => (backend === 'duckdb' ? duckdbOurs : postgresOurs)(where, pages)
      : paths[`${backend}:${path}`];
    if (!fn) throw new Error(`Unknown path ${backend}:${path}`);
    const statements = STATEMENTS
      ? timeStatements(backend === 'duckdb' ? DuckDbDestination : PostgresDestination)
      : null;
    await measure(backend, path, Number(repeat), () => fn(rest.join(':')));
    if (statements)
      console.error(
        `  ${backend} ${path} #${repeat}, time by statement (our destination's sessions):\n${formatStatementTimes(statements)}`,
      );
    return;
  }
  const writes = WRITE_ARG ? `, written ${WRITE_ARG} at a time` : '';
  console.error(
    `bench/load.ts: N=${N} profile records, units of ${UNITS.duckdb} (DuckDB) and ${UNITS.postgres} (Postgres) records${writes}, merge mode, ${REPEATS} runs a path`,
  );
  const backends = ['duckdb', 'postgres'].filter((b) => ONLY === undefined || ONLY === b);
  const dir = mkdtempSync(join(tmpdir(), 'seedline-bench-'));
  const results: Result[] = [];
  try {
    for (const backend of backends) {
      for (let repeat = 1; repeat <= REPEATS; repeat++) {
        results.push(await runPath(backend, 'ours', repeat, dir));
        for (const pages of PAGE_PATHS) results.push(await runPath(backend, pages, repeat, dir));
        results.push(await runPath(backend, 'native', repeat, dir));
        if (backend === 'duckdb' && BEST) {
          results.push(await runPath(backend, 'best case', repeat, dir));
          rmSync(join(dir, `native-${repeat}`), { recursive: true, force: true });
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  printTable(results);
}

await main();

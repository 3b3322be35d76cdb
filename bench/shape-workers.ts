/**
 * Shaping and COPY encoding off the main thread: does a pool of worker threads pay on this
 * machine? (issue 20, item 3: "shaping and encoding off the main thread").
 *
 *   npx tsc -p tsconfig.bench.json && node dist/bench/shape-workers.js [N=200000] [--workers=1,2] [--repeat=3]
 *
 * The engine receives each results page as the text of its HTTP body (500 records) and parses it
 * on the main thread whatever happens next: the ledger, the answer journal and the repairs read
 * the records. What a Postgres unit then costs the main thread is shaping the records into
 * columns and encoding them as binary COPY. Two ways of doing that, alternated run by run:
 *
 * - `main`: per page, JSON.parse, `shapeRecords`, `encodeCopyBinary` of every table, on the main thread.
 * - `workers=k`: per page, JSON.parse on the main thread (needed there anyway), the page's text
 *   posted to one of k workers (up to 2 pages in flight a worker), which parses it again, shapes,
 *   encodes and transfers the COPY buffers back (no copy). The workers are started before the clock.
 * - `workers=k, no main parse`: the same without the main thread's parse: the bound of a design
 *   that moved the engine's whole page handling (ledger, journal, repairs) into the workers.
 *
 * Page texts are made before the clock from a pool of distinct records (generation is not timed).
 * Prints per path min, median and max of wall seconds, main-thread busy seconds (event-loop
 * utilization), and CPU seconds of the process (every thread), with records/s of the medians.
 * No database is involved: this is the client's share of the work, the part a worker could take.
 */
import { Worker, isMainThread, parentPort } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { Profile } from '../schemas/profile.js';
import { encodeCopyBinary } from '../src/destinations/postgres/postgres-copy-encoder.js';
import { shapeRecords } from '../src/normalize/record-shaper.js';
import { tableLayout } from '../src/normalize/table-layout.js';
import { formatTable } from '../src/cli/format-table.js';
import { profileRecord } from './profile-records.js';
import { median } from './stats.js';

const PAGE = 500;
/** Distinct pages generated before the clock and cycled through: 20 pages, 10,000 records. */
const POOL_PAGES = 20;
const layout = tableLayout({ name: 'profiles', schema: Profile, primaryKey: ['url'], writeMode: 'merge' });

/** Shapes one page's records and encodes every table as binary COPY; returns the encoded buffers. */
function shapeAndEncode(records: Record<string, unknown>[]): Buffer[] {
  const batch = shapeRecords(layout, records, { runId: 'bench', loadedAt: Date.now(), rejectNul: true });
  if (batch.rejected.length > 0)
    throw new Error(`${batch.rejected.length} records rejected: ${batch.rejected[0]!.reason}`);
  const buffers: Buffer[] = [];
  for (const rows of [batch.parent, ...batch.children]) {
    const types = rows.shape.columns.map((c) => c.type);
    for (const chunk of encodeCopyBinary(types, rows.columns, rows.length, rows.constant, 1 << 18)) buffers.push(chunk);
  }
  return buffers;
}

/** The records of a results page as the service sends them. */
function recordsOf(text: string): Record<string, unknown>[] {
  return (JSON.parse(text) as { data: Record<string, unknown>[] }).data;
}

// ---------- worker ----------

if (!isMainThread) {
  parentPort!.on('message', ({ id, text }: { id: number; text: string }) => {
    const buffers = shapeAndEncode(recordsOf(text));
    // Each chunk owns its ArrayBuffer (256 KB, past Buffer's pool): transferred, not copied.
    const parts = buffers.map((b) => ({ memory: b.buffer, offset: b.byteOffset, length: b.length }));
    parentPort!.postMessage(
      { id, parts },
      parts.map((p) => p.memory as ArrayBuffer),
    );
  });
}

// ---------- main ----------

interface Run {
  path: string;
  seconds: number;
  mainBusySeconds: number;
  cpuSeconds: number;
  bytes: number;
}

function pagesPool(): string[] {
  return Array.from({ length: POOL_PAGES }, (_, p) =>
    JSON.stringify({ data: Array.from({ length: PAGE }, (_, i) => profileRecord(p * PAGE + i)) }),
  );
}

/** Times `fn` on the wall clock, the main thread's busy time and the process's CPU. */
async function timed(path: string, fn: () => Promise<number>): Promise<Run> {
  const cpu = process.cpuUsage();
  const loop = performance.eventLoopUtilization();
  const started = performance.now();
  const bytes = await fn();
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  return {
    path,
    seconds,
    mainBusySeconds: performance.eventLoopUtilization(loop).active / 1000,
    cpuSeconds: (used.user + used.system) / 1e6,
    bytes,
  };
}

async function onMainThread(pool: readonly string[], pages: number): Promise<number> {
  let bytes = 0;
  for (let p = 0; p < pages; p++) {
    const records = recordsOf(pool[p % pool.length]!);
    for (const buffer of shapeAndEncode(records)) bytes += buffer.length;
    // The engine awaits the server between units: yield as it would, so the loop's busy time is measured the same way.
    if (p % 4 === 3) await new Promise((resolve) => setImmediate(resolve));
  }
  return bytes;
}

/** A pool of workers, each taking up to `perWorker` pages at a time. */
class ShapingPool {
  private readonly waiting = new Map<number, (bytes: number) => void>();
  private readonly load: number[];
  private nextId = 0;

  private constructor(private readonly workers: Worker[]) {
    this.load = workers.map(() => 0);
    workers.forEach((worker, w) =>
      worker.on(
        'message',
        ({ id, parts }: { id: number; parts: { memory: ArrayBuffer; offset: number; length: number }[] }) => {
          this.load[w]!--;
          // What the Postgres session would stream to COPY: the buffers, as they arrive.
          const buffers = parts.map((p) => Buffer.from(p.memory, p.offset, p.length));
          this.waiting.get(id)!(buffers.reduce((n, b) => n + b.length, 0));
          this.waiting.delete(id);
        },
      ),
    );
  }

  static async start(count: number): Promise<ShapingPool> {
    const file = fileURLToPath(import.meta.url);
    const workers = Array.from({ length: count }, () => new Worker(file, { execArgv: process.execArgv }));
    await Promise.all(workers.map((w) => new Promise((resolve) => w.once('online', resolve))));
    return new ShapingPool(workers);
  }

  /** Sends a page to the least busy worker; resolves with the bytes it encoded. */
  shape(text: string): Promise<number> {
    const w = this.load.indexOf(Math.min(...this.load));
    this.load[w]!++;
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.workers[w]!.postMessage({ id, text });
    });
  }

  get busiest(): number {
    return Math.max(...this.load);
  }

  async stop(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

async function inWorkers(
  pool: readonly string[],
  pages: number,
  shaping: ShapingPool,
  perWorker: number,
  mainParses: boolean,
): Promise<number> {
  let bytes = 0;
  const inFlight = new Set<Promise<void>>();
  for (let p = 0; p < pages; p++) {
    const text = pool[p % pool.length]!;
    // The main thread still parses the page: the engine reads the records for its ledger and journal.
    if (mainParses) recordsOf(text);
    const done: Promise<void> = shaping.shape(text).then((n) => {
      bytes += n;
      inFlight.delete(done);
    });
    inFlight.add(done);
    while (shaping.busiest >= perWorker) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  return bytes;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const n = Number(args.find((a) => /^\d+$/.test(a)) ?? 200_000);
  const repeats = Number(args.find((a) => a.startsWith('--repeat='))?.slice(9) ?? 3);
  const workerCounts = (args.find((a) => a.startsWith('--workers='))?.slice(10) ?? '1,2').split(',').map(Number);
  const pages = Math.ceil(n / PAGE);
  const pool = pagesPool();
  console.error(
    `bench/shape-workers.ts: ${pages * PAGE} profile records in pages of ${PAGE}, ${repeats} runs a path, ${availableParallelism()} cores`,
  );
  const runs: Run[] = [];
  for (let repeat = 1; repeat <= repeats; repeat++) {
    runs.push(await timed('main', () => onMainThread(pool, pages)));
    for (const count of workerCounts) {
      const shaping = await ShapingPool.start(count);
      try {
        runs.push(await timed(`workers=${count}`, () => inWorkers(pool, pages, shaping, 2, true)));
        runs.push(await timed(`workers=${count}, no main parse`, () => inWorkers(pool, pages, shaping, 2, false)));
      } finally {
        await shaping.stop();
      }
    }
    for (const run of runs.slice(-1 - 2 * workerCounts.length))
      console.error(
        `  #${repeat} ${run.path}: ${run.seconds.toFixed(2)} s wall, ${run.mainBusySeconds.toFixed(2)} s main thread, ${run.cpuSeconds.toFixed(2)} CPU s`,
      );
  }
  const paths = ['main', ...workerCounts.flatMap((c) => [`workers=${c}`, `workers=${c}, no main parse`])];
  const base = median(runs.filter((r) => r.path === 'main').map((r) => r.seconds));
  const rows = paths.map((path) => {
    const of = runs.filter((r) => r.path === path);
    const wall = of.map((r) => r.seconds);
    const fmt = (v: number) => v.toFixed(2);
    return {
      path,
      min_s: fmt(Math.min(...wall)),
      median_s: fmt(median(wall)),
      max_s: fmt(Math.max(...wall)),
      'records/s': Math.round((pages * PAGE) / median(wall)).toLocaleString('en-US'),
      main_busy_s: fmt(median(of.map((r) => r.mainBusySeconds))),
      cpu_s: fmt(median(of.map((r) => r.cpuSeconds))),
      vs_main: (base / median(wall)).toFixed(2),
      copy_mb: Math.round(of[0]!.bytes / 2 ** 20),
    };
  });
  process.stdout.write(`${formatTable(rows)}\n`);
}

if (isMainThread) await main();

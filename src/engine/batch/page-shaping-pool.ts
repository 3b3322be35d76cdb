import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Meta } from '../../../schemas/common.js';
import type { WriteShaping } from '../../normalize/record-shaper.js';
import type { ShaperSpec } from '../../normalize/table-shaper.js';
import type { ShapedResultsPage } from './results-page-shaping.js';

/** One page for a worker: its text and what shaping it needs (the spec and layouts the worker has not seen yet). */
export interface ShapingRequest {
  id: number;
  stream: string;
  spec?: ShaperSpec;
  text: string;
  /** Partition values by item ref. */
  items: [string, Record<string, unknown>][];
  shapings: { table: string; layoutId: number; layout?: WriteShaping['layout']; rejectNul: boolean }[];
  runId: string;
}

/** A worker's answer: the page shaped, null (the client reads it), or why it failed (`ended`: the pool, not the page). */
export type ShapingAnswer =
  { id: number; decoded: { data: ShapedResultsPage; meta: Meta } | null } | { id: number; error: string; ended?: true };

/** A page to shape, as the batch runner asks it. */
export interface PageToShape {
  stream: string;
  spec: ShaperSpec;
  text: string;
  items: [string, Record<string, unknown>][];
  shapings: readonly WriteShaping[];
  runId: string;
}

interface PoolWorker {
  worker: Worker;
  /** Pages sent and not answered. */
  busy: number;
  streams: Set<string>;
  layouts: Set<number>;
}

/** What a failure of the pool stops: one stream's pages (`stream`), or every page (`sync`). */
export type FailureScope = string;

/**
 * Worker threads that read, validate and shape batch results pages (`decodeResultsPage`), so the
 * main thread is left the HTTP, the ledger and the writes. A worker starts when a page finds the
 * others busy (up to `size`); `close` ends them. A page a worker cannot shape answers null, and the
 * caller reads it on the main thread as before: a worker never loses a page. A stream whose page a
 * worker failed to shape (its schema unknown there, say) has its later pages read on the main
 * thread; a worker that dies, or cannot start, sends every later page there. `onFailure` hears
 * each, once, with the stream (or `sync`) and why.
 */
export class PageShapingPool {
  private readonly workers: PoolWorker[] = [];
  private readonly waiting = new Map<number, { resolve: (answer: ShapingAnswer) => void }>();
  private readonly layoutIds = new WeakMap<WriteShaping['layout'], number>();
  /** Streams whose pages a worker failed to shape. */
  private readonly failedStreams = new Set<string>();
  private nextId = 0;
  private nextLayoutId = 0;
  private failed = false;
  private closed = false;

  constructor(
    private readonly size: number,
    private readonly onFailure: (scope: FailureScope, reason: string) => void = () => undefined,
  ) {}

  /** The page shaped by the least busy worker, or null when no worker could shape it. */
  async shape(page: PageToShape): Promise<{ data: ShapedResultsPage; meta: Meta } | null> {
    if (this.failed || this.closed || this.size < 1 || this.failedStreams.has(page.stream)) return null;
    let target: PoolWorker;
    try {
      target = this.leastBusy();
    } catch (error) {
      this.fail(`a worker thread could not start (${(error as Error).message})`);
      return null;
    }
    const answer = await this.send(target, page);
    if ('error' in answer) {
      if (!answer.ended) this.failStream(page.stream, answer.error);
      return null;
    }
    return answer.decoded;
  }

  /** Ends the workers; pages under way answer null. */
  async close(): Promise<void> {
    this.closed = true;
    const workers = this.workers.splice(0);
    await Promise.all(workers.map((w) => w.worker.terminate()));
    this.answerAll('the page shaping pool closed');
  }

  private async send(target: PoolWorker, page: PageToShape): Promise<ShapingAnswer> {
    const id = this.nextId++;
    const request: ShapingRequest = {
      id,
      stream: page.stream,
      ...(target.streams.has(page.stream) ? {} : { spec: page.spec }),
      text: page.text,
      items: page.items,
      shapings: page.shapings.map((s) => this.shapingFor(target, s)),
      runId: page.runId,
    };
    target.busy++;
    try {
      return await new Promise<ShapingAnswer>((resolve) => {
        this.waiting.set(id, { resolve });
        try {
          target.worker.postMessage(request);
          target.streams.add(page.stream);
        } catch (error) {
          // A value of the stream's that cannot be cloned (in its options, say).
          this.waiting.delete(id);
          resolve({ id, error: `its page could not be sent to a worker thread (${(error as Error).message})` });
        }
      });
    } finally {
      target.busy--;
    }
  }

  /** An idle worker, started if none is and the pool has room; else the least busy. */
  private leastBusy(): PoolWorker {
    const idle = this.workers.find((w) => w.busy === 0);
    if (idle) return idle;
    if (this.workers.length < this.size) return this.start();
    return this.workers.reduce((best, w) => (w.busy < best.busy ? w : best));
  }

  private start(): PoolWorker {
    const worker = workerThread();
    const entry: PoolWorker = { worker, busy: 0, streams: new Set(), layouts: new Set() };
    worker.on('message', (answer: ShapingAnswer) => {
      const waiter = this.waiting.get(answer.id);
      this.waiting.delete(answer.id);
      waiter?.resolve(answer);
    });
    worker.on('messageerror', (error) =>
      this.fail(`an answer of a worker thread could not be read (${error.message})`),
    );
    worker.on('error', (error) => this.fail(`a worker thread failed (${error.message})`));
    worker.on('exit', (code) => {
      if (!this.closed) this.fail(`a worker thread exited with code ${code}`);
    });
    this.workers.push(entry);
    return entry;
  }

  private shapingFor(target: PoolWorker, shaping: WriteShaping): ShapingRequest['shapings'][number] {
    let layoutId = this.layoutIds.get(shaping.layout);
    if (layoutId === undefined) this.layoutIds.set(shaping.layout, (layoutId = this.nextLayoutId++));
    const known = target.layouts.has(layoutId);
    target.layouts.add(layoutId);
    return {
      table: shaping.table,
      layoutId,
      ...(known ? {} : { layout: shaping.layout }),
      rejectNul: shaping.rejectNul,
    };
  }

  /** The stream's later pages are read on the main thread: its next page would fail the same way. */
  private failStream(stream: string, reason: string): void {
    if (this.failed || this.closed || this.failedStreams.has(stream)) return;
    this.failedStreams.add(stream);
    this.onFailure(stream, `a worker thread could not shape its page (${reason})`);
  }

  /** Every later page is read on the main thread, and the pages under way are answered null. */
  private fail(reason: string): void {
    if (this.failed || this.closed) return;
    this.failed = true;
    this.onFailure('sync', reason);
    const workers = this.workers.splice(0);
    for (const w of workers) void w.worker.terminate();
    this.answerAll(reason);
  }

  /** Answers every page under way with `error`; `shape` then answers null. */
  private answerAll(error: string): void {
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const [id, waiter] of waiting) waiter.resolve({ id, error, ended: true });
  }
}

/**
 * A worker's young generation: a page is garbage once shaped, and V8's default (up to 48 MB a
 * thread) only held more of it. 4 MB took ~30 MB off a load's peak RSS with two workers, at the
 * same speed (bench/load.ts --pages=2, 50k records).
 */
const WORKER_LIMITS = { maxYoungGenerationSizeMb: 4 };

/**
 * A thread running `page-shaping-worker`: built, the .js beside this module; from the sources (tsx,
 * vitest), the .ts one, imported once tsx's loader is registered in the thread (a worker does not
 * inherit the loader, nor take `--import` in Node 20).
 */
function workerThread(): Worker {
  if (!import.meta.url.endsWith('.ts'))
    return new Worker(new URL('./page-shaping-worker.js', import.meta.url), { resourceLimits: WORKER_LIMITS });
  // tsx's ESM api (`tsx/esm/api` resolves to its CommonJS build here, whose register() cannot find its loader).
  const tsx = pathToFileURL(
    createRequire(import.meta.url)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs'),
  ).href;
  const entry = new URL('./page-shaping-worker.ts', import.meta.url).href;
  return new Worker(
    `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(entry)}); });`,
    { eval: true, resourceLimits: WORKER_LIMITS },
  );
}

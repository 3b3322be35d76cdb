import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { RateLimiter, type RateLimiterStats } from '../client/index.js';
import { toDate } from '../destinations/sql/system-tables.js';
import type { RunResult } from '../engine/pipeline.js';
import type { WorkItem } from '../destinations/fleet-store.js';

/** Where the metrics read on each scrape what no run reports. */
export interface MetricsSources {
  /**
   * Runs a read-only query of the warehouse built for its schema (seeds due, freshness lag).
   * Default: none, and those gauges stay empty.
   */
  readWarehouse?: (sql: (schema: string) => string) => Promise<Record<string, unknown>[]>;
  /**
   * Items this worker holds now. Default: none: not a worker, and the worker's metrics
   * (`seedline_worker_leases`, `seedline_items_done_total`) are left out.
   */
  leases?: () => Promise<number>;
}

/** Calls counted under one key. */
interface Calls {
  requests: number;
  rateLimited: number;
}

/** What a limiter counted: one client's calls, under the fingerprint of its key. */
interface Tracked {
  keyId: string;
  limiter: { readonly stats: RateLimiterStats };
}

/**
 * The Prometheus metrics of one seedline process (`worker`, `schedule`, `serve`), in their own
 * registry with prom-client's default process metrics. Runs are counted as they end; the calls
 * of the clients under way, the leases and the warehouse gauges are read on each scrape. Keys
 * appear only as fingerprints (`key_…`). The names are listed in docs/metrics.md.
 *
 * @example
 * ```ts
 * const metrics = new SeedlineMetrics({ readWarehouse: (sql) => destination.readQuery(sql(destination.schema)) });
 * metrics.runEnded(result, keyId);
 * const text = await metrics.text();
 * ```
 */
export class SeedlineMetrics {
  /** The registry the metrics live in (not the global one). */
  readonly registry = new Registry();
  private readonly billed: Counter<'key'>;
  private readonly atRisk: Counter<'key'>;
  private readonly requests: Counter<'key'>;
  private readonly rateLimited: Counter<'key'>;
  private readonly runs: Counter<'status'>;
  private readonly itemsDone: Counter;
  private readonly readErrors: Counter;
  private readonly leases: Gauge;
  private readonly seedsDue: Gauge<'stream'>;
  private readonly freshnessLag: Gauge<'stream'>;
  private readonly live = new Set<Tracked>();
  /** Per key: calls of clients whose runs ended, and what the counters were last raised to. */
  private readonly ended = new Map<string, Calls>();
  private readonly reported = new Map<string, Calls>();
  private refreshing: Promise<void> | undefined;

  constructor(private readonly sources: MetricsSources = {}) {
    const registers = [this.registry];
    // A worker's own metrics are left out of the other commands' registries (they would read 0).
    const ofWorker = sources.leases ? registers : [];
    const counter = <L extends string>(name: string, help: string, labelNames: L[] = [], into = registers) =>
      new Counter<L>({ name, help, labelNames, registers: into });
    const gauge = <L extends string>(name: string, help: string, labelNames: L[] = [], into = registers) =>
      new Gauge<L>({ name, help, labelNames, registers: into });
    this.billed = counter('seedline_credits_billed_total', 'Credits billed during this process’s runs', ['key']);
    this.atRisk = counter('seedline_credits_at_risk_total', 'Credits this process’s runs ended with at risk', ['key']);
    this.requests = counter('seedline_requests_total', 'Calls made to the service (attempts)', ['key']);
    this.rateLimited = counter('seedline_rate_limited_total', 'Calls the service answered 429', ['key']);
    this.runs = counter('seedline_runs_total', 'Runs ended, by status', ['status']);
    this.itemsDone = counter('seedline_items_done_total', 'Fleet items this worker finished (done)', [], ofWorker);
    this.readErrors = counter('seedline_metrics_read_errors_total', 'Scrapes whose warehouse or fleet read failed');
    this.leases = gauge('seedline_worker_leases', 'Fleet items this worker holds now', [], ofWorker);
    this.seedsDue = gauge('seedline_seeds_due', 'Seeds pending or failed (due for a fetch), by stream', ['stream']);
    this.freshnessLag = gauge(
      'seedline_freshness_lag_seconds',
      'Seconds since the oldest fetched_at among fetched seeds, by stream',
      ['stream'],
    );
    collectDefaultMetrics({ register: this.registry });
  }

  /** The exposition format's content type. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Counts a run that ended: its status, and the credits billed and at risk under its key. */
  runEnded(result: RunResult, keyId: string): void {
    const { books } = result;
    this.runs.inc({ status: result.status });
    // What it read of jobs earlier runs submitted was billed to those runs (counted where they ran).
    this.billed.inc({ key: keyId }, Math.max(0, books.billed - books.earlierBilled));
    this.atRisk.inc({ key: keyId }, books.atRisk);
  }

  /** `WorkerOptions.onRun`: counts a worker item's run, and the item as done when it was. */
  readonly workerRunEnded = (result: RunResult, _item: WorkItem, keyId: string): void => {
    this.runEnded(result, keyId);
    if (result.status !== 'stopped' && result.status !== 'failed') this.itemsDone.inc();
  };

  /** Counts the calls of a client's limiter on each scrape; the returned function keeps its last counts once its client is done. */
  track(keyId: string, limiter: { readonly stats: RateLimiterStats }): () => void {
    const tracked = { keyId, limiter };
    this.live.add(tracked);
    return () => {
      if (!this.live.delete(tracked)) return;
      this.ended.set(keyId, added(this.ended.get(keyId), limiter.stats));
    };
  }

  /** The metrics in the text exposition format, after reading what is read on scrape. */
  async text(): Promise<string> {
    // Scrapes at once share one read.
    this.refreshing ??= this.refresh().finally(() => (this.refreshing = undefined));
    await this.refreshing;
    return this.registry.metrics();
  }

  private async refresh(): Promise<void> {
    this.countCalls();
    await Promise.all([this.readLeases(), this.readStreams()]);
  }

  private countCalls(): void {
    const totals = new Map(this.ended);
    for (const { keyId, limiter } of this.live) totals.set(keyId, added(totals.get(keyId), limiter.stats));
    for (const [keyId, total] of totals) {
      const last = this.reported.get(keyId) ?? added(undefined, undefined);
      this.requests.inc({ key: keyId }, Math.max(0, total.requests - last.requests));
      this.rateLimited.inc({ key: keyId }, Math.max(0, total.rateLimited - last.rateLimited));
      this.reported.set(keyId, total);
    }
  }

  private async readLeases(): Promise<void> {
    if (!this.sources.leases) return;
    try {
      this.leases.set(await this.sources.leases());
    } catch {
      this.readErrors.inc();
    }
  }

  /** Seeds due and freshness lag of every stream with seeds; on a failed read the last values stay. */
  private async readStreams(): Promise<void> {
    const read = this.sources.readWarehouse;
    if (!read) return;
    let rows: Record<string, unknown>[];
    try {
      rows = await read(
        (schema) =>
          `select stream, sum(case when status in ('pending', 'failed') then 1 else 0 end) as due, ` +
          `min(case when status = 'fetched' then fetched_at end) as oldest from ${schema}._seedline_seeds group by stream`,
      );
    } catch {
      this.readErrors.inc();
      return;
    }
    this.seedsDue.reset();
    this.freshnessLag.reset();
    const now = Date.now();
    for (const row of rows) {
      const stream = String(row.stream);
      this.seedsDue.set({ stream }, Number(row.due ?? 0));
      const oldest = toDate(row.oldest);
      if (oldest) this.freshnessLag.set({ stream }, Math.max(0, (now - oldest.getTime()) / 1000));
    }
  }
}

function added(sum: Calls | undefined, more: Calls | undefined): Calls {
  return {
    requests: (sum?.requests ?? 0) + (more?.requests ?? 0),
    rateLimited: (sum?.rateLimited ?? 0) + (more?.rateLimited ?? 0),
  };
}

/**
 * Runs `run` with a limiter of its own whose calls `metrics` counts, and counts its run when it
 * ends; without metrics, runs it as it is (its client makes its own limiter).
 */
export async function countedRun(
  metrics: SeedlineMetrics | undefined,
  keyId: string,
  run: (limiter: RateLimiter | undefined) => Promise<RunResult>,
): Promise<RunResult> {
  if (!metrics) return run(undefined);
  const limiter = new RateLimiter();
  const release = metrics.track(keyId, limiter);
  try {
    const result = await run(limiter);
    metrics.runEnded(result, keyId);
    return result;
  } finally {
    release();
    limiter.close();
  }
}

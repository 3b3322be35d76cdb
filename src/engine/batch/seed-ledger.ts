import type { BatchRow, SeedRow } from '../../destinations/destination.js';
import type { CompiledBatchStream } from '../../manifest/compile-stream.js';
import type { BatchCosts } from './batch-costs.js';
import { cutToFit } from '../books/budget.js';
import { stopForBudget } from '../books/budget-stop.js';
import { isRecent } from '../books/freshness.js';
import { ChangeWatch } from '../books/change-watch.js';
import { itemsOf } from './job-books.js';
import { LEDGER_PAGE, readOpenBatches, readSeedRows } from '../books/ledger-pages.js';
import type { Partition } from '../../manifest/components/partitions.js';
import { planSeeds, Ranker, takes, type SeedPlan, type SeedTriage } from './seed-plan.js';
import type { LedgerSeed, SeedScan } from './seed-scan.js';
import type { StreamContext, StreamOutcome } from '../stream-context.js';

/** Error types after which a seed is not fetched again until its refresh_after passes (it was paid for). */
const PERMANENT_FAILURES = new Set(['unprocessable_target', 'not_found', 'invalid_request', 'idempotency_conflict']);
/** Error types of items worth another attempt in the same run. */
export const TRANSIENT_FAILURES: ReadonlySet<string> = new Set([
  'upstream_timeout',
  'internal_error',
  'upstream_error',
  'rate_limited',
]);

/**
 * The seed ledger of one batch stream in one run: which seeds need a fetch and which of them the
 * budget takes, the ledger rows of the seeds in play (held while their work runs, updated as this
 * run writes them), and the seeds left for a later run, recorded `pending` at the end.
 * {@link BatchRunner} submits and loads; the rows it writes go through {@link wrote}.
 */
export class SeedLedger {
  /**
   * Ledger rows of the seeds in play (chunks in flight, the batch being read, a retry round), as
   * last written; a seed held without a row maps to undefined. Released when their work is done,
   * so the map holds a few chunks whatever the list's length.
   */
  private readonly rows = new Map<string, SeedRow | undefined>();
  /** Seeds left for a later run because the budget (or a 402) stopped them, to be recorded `pending`. */
  private readonly deferredSeeds: Partition[] = [];
  /** Seed keys in play whose ledger row this run has written. */
  private readonly touched = new Set<string>();
  /** Deferred seeds whose ledger row this run had written when they were deferred. */
  private readonly touchedDeferred = new Set<string>();
  /** How the last plan classified seeds: the submissions classify them the same way. */
  private triage?: SeedTriage;
  /** Seeds Signals watch and their last reported changes (refresh on change), read at the first plan. */
  private watch?: ChangeWatch;

  /** `write` commits ledger rows in one unit of work and hands them back to {@link wrote}. */
  constructor(
    private readonly stream: CompiledBatchStream,
    private readonly ctx: StreamContext,
    private readonly outcome: StreamOutcome,
    private readonly costs: BatchCosts,
    private readonly write: (rows: SeedRow[]) => Promise<void>,
  ) {}

  /** Whether seeds were left for a later run. */
  get deferred(): boolean {
    return this.deferredSeeds.length > 0;
  }

  /**
   * Counts and costs the seeds needing a fetch (not fresh, not failed for good recently, not in a
   * recorded job), and decides which of them `available` credits take: when the budget cannot
   * cover them all, never-fetched seeds go first, then the stalest.
   */
  async plan(scan: SeedScan, open: readonly BatchRow[], available: number): Promise<SeedPlan> {
    await this.changeWatch();
    this.triage = this.triageFor(open);
    const plan = await planSeeds(scan, this.triage, available);
    this.outcome.skipped = plan.skipped;
    if (this.watch) plan.watched = this.watch.watched;
    return plan;
  }

  /** The seeds Signals watch and their Triggers (refresh on change), read once; undefined when the stream refreshes by age only. */
  async changeWatch(): Promise<ChangeWatch | undefined> {
    const rule = this.stream.changeRefresh;
    this.watch ??= rule ? await ChangeWatch.load(this.ctx.destination, rule) : undefined;
    return this.watch;
  }

  /**
   * The seeds the plan's budget cut takes, in chunks of `size` in the list's order, their ledger
   * rows held until their chunk is done; the others are deferred (recorded `pending` at the end).
   */
  async *select(scan: SeedScan, plan: SeedPlan, size: number): AsyncGenerator<Partition[]> {
    const ranks = new Ranker(this.triage!.changed);
    const taken: LedgerSeed[] = [];
    const takenKeys = new Set<string>();
    for await (const chunk of scan.chunks()) {
      for (const seed of chunk) {
        // A seed file edited during the run can repeat a seed the survey never saw: one in play is not taken twice.
        if (
          this.rows.has(seed.partition.key) ||
          takenKeys.has(seed.partition.key) ||
          this.triage!.classify(seed) !== 'todo'
        )
          continue;
        if (!takes(plan.cut, ranks.of(seed))) {
          this.defer([seed.partition]);
          continue;
        }
        taken.push(seed);
        takenKeys.add(seed.partition.key);
        this.countRefresh(seed);
      }
      while (taken.length >= size) yield this.holding(taken.splice(0, size), takenKeys);
    }
    if (taken.length > 0) yield this.holding(taken, takenKeys);
  }

  /** Counts a watched seed fetched before and taken again, by why (refresh on change only). */
  private countRefresh(seed: LedgerSeed): void {
    if (!this.watch?.isWatched(seed.partition.key) || !seed.row?.fetchedAt) return;
    const refreshes = (this.outcome.refreshes ??= { byChange: 0, byAge: 0 });
    if (this.triage?.changed?.(seed)) refreshes.byChange++;
    else refreshes.byAge++;
  }

  private holding(seeds: readonly LedgerSeed[], takenKeys: Set<string>): Partition[] {
    for (const { partition, row } of seeds) {
      this.rows.set(partition.key, row);
      takenKeys.delete(partition.key);
    }
    return seeds.map((s) => s.partition);
  }

  /** Holds the ledger rows of `keys` not held yet (read from the destination); answers the keys it read. */
  async hold(keys: readonly string[]): Promise<string[]> {
    const missing = keys.filter((key) => !this.rows.has(key));
    if (missing.length === 0) return [];
    const rows = await readSeedRows(this.ctx.destination, this.stream.name, missing);
    for (const key of missing) this.rows.set(key, rows.get(key));
    return missing;
  }

  /** Lets go of the ledger rows of seeds whose work is done. */
  release(keys: readonly string[]): void {
    for (const key of keys) {
      this.rows.delete(key);
      this.touched.delete(key);
    }
  }

  /** Counts the held rows of `keys` as written by this run. */
  touch(keys: readonly string[]): void {
    for (const key of keys) this.touched.add(key);
  }

  /** The held ledger row of a seed; undefined when it has none or is not held. */
  row(key: string): SeedRow | undefined {
    return this.rows.get(key);
  }

  /** Takes the rows just committed as the held rows of their seeds, written by this run. */
  wrote(seeds: readonly SeedRow[]): void {
    for (const seed of seeds) {
      this.rows.set(seed.seedKey, seed);
      this.touched.add(seed.seedKey);
    }
  }

  private triageFor(open: readonly BatchRow[]): SeedTriage {
    const inFlight = new Set(open.flatMap((batch) => itemsOf(batch).map((item) => item.ref)));
    const refreshMs = this.stream.refreshAfterMs;
    // One clock for the plan and the submissions: a seed fresh when planned stays fresh when chunked.
    const now = this.ctx.now();
    const written = (row: SeedRow | undefined) =>
      (row?.updatedAt?.getTime() ?? -Infinity) >= this.ctx.runStartedAt.getTime();
    return {
      // A row this run wrote (a journaled answer loaded, a seed done earlier in the run) is never fetched again in it.
      classify: ({ partition, row }) =>
        inFlight.has(partition.key)
          ? 'in_flight'
          : written(row) || (!this.ctx.fullRefresh && this.isFresh(partition.key, row, refreshMs, now))
            ? 'fresh'
            : 'todo',
      worst: (p) => this.costs.costOfSeed(p).worst,
      expected: (p) => this.costs.costOfSeed(p).expected,
      changed: ({ partition, row }) => Boolean(this.watch?.changedSince(partition.key, row?.fetchedAt)),
    };
  }

  /**
   * The seeds the budget can cover (after `held` credits already promised), in priority order;
   * the rest stay pending, and the stream is marked stopped by its budget.
   */
  withinBudget(seeds: Partition[], held = 0): Partition[] {
    const { take, defer } = cutToFit(seeds, (p) => this.costs.worstOf(p), this.ctx.budget.remaining - held);
    if (defer.length > 0) {
      this.defer(defer);
      stopForBudget(
        this.ctx,
        this.outcome,
        this.ctx.budget.stopError(this.costs.worstOf(defer[0]!), defer.length, held),
      );
    }
    return take;
  }

  /**
   * Records the seeds the budget left out as `pending` in the ledger (keeping when they were last
   * fetched, so the next run still takes the stalest first). A seed whose row this run settled
   * (fetched, failed for good, or already pending) keeps it; one left `failed` for a passing
   * reason or `submitted` in a job the service lost (`lostJobs`) is set `pending`. One `submitted`
   * in a job still open (a stop while its results were read) keeps its job: it is paid for, and
   * the next run reads it, or resubmits it should the job be lost. One already answered (fetched,
   * or failed for good) in a batch still open keeps its row whoever wrote it: that batch's cursor
   * is past it, so `pending` would have it fetched and paid for again.
   */
  async recordDeferred(lostJobs: readonly BatchRow[]): Promise<void> {
    if (this.deferredSeeds.length === 0) return;
    const lost = new Set(lostJobs.flatMap((b) => (b.jobId ? [b.jobId] : [])));
    const inOpenBatch = new Set(
      (await readOpenBatches(this.ctx.destination, this.stream.name)).flatMap((b) =>
        itemsOf(b).map((item) => item.ref),
      ),
    );
    for (let i = 0; i < this.deferredSeeds.length; i += LEDGER_PAGE) {
      const deferred = this.deferredSeeds.slice(i, i + LEDGER_PAGE);
      await this.hold(deferred.map((p) => p.key));
      const rows = deferred
        .filter(
          (p) =>
            !this.settledThisRun(p.key) &&
            !this.inOpenJob(p.key, lost) &&
            !(inOpenBatch.has(p.key) && isAnswered(this.rows.get(p.key))),
        )
        .map((p) => this.seedRow(p.key, String(p.values.seed), { status: 'pending', jobId: null, error: null }));
      if (rows.length > 0) await this.write(rows);
      this.release(deferred.map((p) => p.key));
    }
  }

  /** Leaves seeds for a later run, noting which of them this run has written a ledger row for. */
  defer(seeds: readonly Partition[]): void {
    this.deferredSeeds.push(...seeds);
    for (const p of seeds) if (this.touched.has(p.key)) this.touchedDeferred.add(p.key);
  }

  private inOpenJob(key: string, lost: ReadonlySet<string>): boolean {
    const jobId = this.rows.get(key)?.status === 'submitted' ? this.rows.get(key)?.jobId : null;
    return Boolean(jobId) && !lost.has(jobId!);
  }

  private settledThisRun(key: string): boolean {
    const row = this.rows.get(key);
    if (!row || !(this.touched.has(key) || this.touchedDeferred.has(key))) return false;
    return row.status === 'pending' || isAnswered(row);
  }

  /**
   * `fetchedAt` for a failed seed: a failure for good is the service's answer (fresh until
   * refresh_after); one for a passing reason keeps the last successful fetch, so priorities still
   * put a never-fetched seed first and a stale one by its last success.
   */
  answeredAt(error: string): Pick<SeedRow, 'fetchedAt'> {
    return TRANSIENT_FAILURES.has(error.split(':')[0] ?? '') ? {} : { fetchedAt: this.ctx.now() };
  }

  /**
   * Whether a seed's row keeps it from a fetch now: fetched (or failed for good) within
   * refresh_after. A seed a Signal watches is kept for the longer `refresh_after_watched`
   * instead, unless one of its Triggers reported a change after that fetch.
   */
  private isFresh(key: string, row: SeedRow | undefined, refreshMs: number | undefined, now: Date): boolean {
    if (this.watch?.isWatched(key)) {
      if (this.watch.changedSince(key, row?.fetchedAt)) return false;
      refreshMs = this.stream.changeRefresh!.watchedRefreshMs;
    }
    if (!row || !isRecent(row.fetchedAt, refreshMs, now)) return false;
    return row.status === 'fetched' || (row.status === 'failed' && PERMANENT_FAILURES.has(failureType(row)));
  }

  /** A ledger row; `addCredits` adds to what the seed has cost so far (every attempt counts). */
  seedRow(key: string, seed: string, fields: Partial<SeedRow> & Pick<SeedRow, 'status'>, addCredits = 0): SeedRow {
    const previous = this.rows.get(key);
    return {
      stream: this.stream.name,
      seedKey: key,
      seed,
      canonicalUrl: previous?.canonicalUrl ?? null,
      fetchedAt: previous?.fetchedAt ?? null,
      ...fields,
      credits: (previous?.credits ?? 0) + addCredits,
    };
  }
}

/** A ledger row the service has answered for good: fetched, or failed for a reason a retry would not change. */
function isAnswered(row: SeedRow | undefined): boolean {
  return row?.status === 'fetched' || (row?.status === 'failed' && !TRANSIENT_FAILURES.has(failureType(row)));
}

/** The service's error type a failed ledger row was recorded with (`upstream_timeout: …`). */
function failureType(row: SeedRow): string {
  return String(row.error).split(':')[0] ?? '';
}

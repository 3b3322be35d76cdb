import PQueue from 'p-queue';
import type { BatchResultEntry } from '../../schemas/batch.js';
import type { BatchRow, SeedRow } from '../destinations/destination.js';
import type { BatchStreamNode } from '../manifest/manifest-schema.js';
import { sha256, stableJson } from '../util/stable-json.js';
import { crashPoint } from './crash-point.js';
import { cutToFit, type Reservation } from './budget.js';
import { budgetStopOf, stopForBudget } from './budget-stop.js';
import { RunStoppedError } from './engine-errors.js';
import { isRecent, refreshAfterMs } from './freshness.js';
import { LoadWriter } from './load-writer.js';
import { LEDGER_PAGE, readOpenBatches, readSeedRows } from './ledger-pages.js';
import type { Partition } from './partitions.js';
import { planSeeds, Ranker, takes, type SeedPlan, type SeedTriage } from './seed-plan.js';
import { SeedScan, type LedgerSeed } from './seed-scan.js';
import { AnswerJournal } from './answer-journal.js';
import { BatchCosts } from './batch-costs.js';
import { readJobResults } from './batch-results.js';
import { itemsOf, JobBooks } from './job-books.js';
import { creditsOf, errorType, type ServiceResponse } from './service-calls.js';
import { addCharge, noteError, noteStoppedOnRequest, addLoad, type StreamContext, type StreamOutcome } from './stream-context.js';
import { TableShaper, type ShapedRecords } from './table-shaper.js';

/** Bump when the shape of submitted bodies changes, so old idempotency keys are never reused for new bodies. */
const KEY_VERSION = 'v1';
/** Error types after which a seed is not fetched again until its refresh_after passes (it was paid for). */
const PERMANENT_FAILURES = new Set(['unprocessable_target', 'not_found', 'invalid_request', 'idempotency_conflict']);
/** Error types of items worth another attempt in the same run. */
const TRANSIENT_FAILURES = new Set(['upstream_timeout', 'internal_error', 'upstream_error', 'rate_limited']);
/** Submission errors after which the intent can never succeed as written. */
const RETIRING_SUBMIT_ERRORS = new Set(['insufficient_credits', 'invalid_request', 'idempotency_conflict']);

type BatchItemBody = { operation: string; params: Record<string, unknown>; ref: string };

/**
 * The work of one batch stream in one run: which seeds to fetch and what they cost, their batch
 * jobs (intent recorded, submitted, results read page by page with the seed ledger), single
 * retries of items that failed for a passing reason, and the ledger rows of seeds left for later.
 * `runBatchStream` (batch-stream.ts) drives it.
 */
export class BatchRunner {
  /** What its items cost. */
  readonly costs: BatchCosts;
  private readonly shaper: TableShaper;
  private readonly writer: LoadWriter;
  /**
   * Ledger rows of the seeds in play (chunks in flight, the batch being read, a retry round), as
   * last written; a seed held without a row maps to undefined. Released when their work is done,
   * so the map holds a few chunks whatever the list's length.
   */
  private readonly ledger = new Map<string, SeedRow | undefined>();
  /** Recorded jobs the service answered 404 for. */
  private readonly lost: BatchRow[] = [];
  /** Items of this run that failed for a passing reason. */
  private transient: Partition[] = [];
  /** Chunks that failed as a whole (network after retries, 402, a refused body). */
  private failedChunks = 0;
  /** Seeds left for a later run because the budget (or a 402) stopped them, to be recorded `pending`. */
  private readonly deferredSeeds: Partition[] = [];
  /** Seed keys in play whose ledger row this run has written. */
  private readonly touched = new Set<string>();
  /** Deferred seeds whose ledger row this run had written when they were deferred. */
  private readonly touchedDeferred = new Set<string>();
  private done = 0;
  private journal?: AnswerJournal;
  /** How the last plan classified seeds: the submissions classify them the same way. */
  private triage?: SeedTriage;

  constructor(
    private readonly manifest: BatchStreamNode,
    private readonly ctx: StreamContext,
    private readonly outcome: StreamOutcome,
  ) {
    this.costs = new BatchCosts(manifest, ctx);
    this.shaper = new TableShaper(manifest.table, { options: ctx.options, run: { id: ctx.runId, started_at: ctx.runStartedAt.toISOString() } });
    this.writer = new LoadWriter(ctx.destination, ctx.runId, manifest.name, ctx.writeLock);
  }

  /** Opens the scan of the stream's seeds (a seed list is surveyed for repeats once). */
  scanSeeds(): Promise<SeedScan> {
    return SeedScan.open(this.manifest.partitions, this.ctx, this.manifest.name);
  }

  /**
   * Counts and costs the seeds needing a fetch (not fresh, not failed for good recently, not in a
   * recorded job), and decides which of them `available` credits take: when the budget cannot
   * cover them all, never-fetched seeds go first, then the stalest.
   */
  async planSeeds(scan: SeedScan, open: readonly BatchRow[], available: number): Promise<SeedPlan> {
    this.triage = this.triageFor(open);
    const plan = await planSeeds(scan, this.triage, available);
    this.outcome.skipped = plan.skipped;
    return plan;
  }

  /**
   * The seeds the plan's budget cut takes, in chunks of `size` in the list's order, their ledger
   * rows held until their chunk is done; the others are deferred (recorded `pending` at the end).
   */
  async *selectSeeds(scan: SeedScan, plan: SeedPlan, size: number): AsyncGenerator<Partition[]> {
    const ranks = new Ranker();
    const taken: LedgerSeed[] = [];
    const takenKeys = new Set<string>();
    for await (const chunk of scan.chunks()) {
      for (const seed of chunk) {
        // A seed file edited during the run can repeat a seed the survey never saw: one in play is not taken twice.
        if (this.ledger.has(seed.partition.key) || takenKeys.has(seed.partition.key) || this.triage!.classify(seed) !== 'todo') continue;
        if (!takes(plan.cut, ranks.of(seed))) {
          this.defer([seed.partition]);
          continue;
        }
        taken.push(seed);
        takenKeys.add(seed.partition.key);
      }
      while (taken.length >= size) yield this.holding(taken.splice(0, size), takenKeys);
    }
    if (taken.length > 0) yield this.holding(taken, takenKeys);
  }

  private holding(seeds: readonly LedgerSeed[], takenKeys: Set<string>): Partition[] {
    for (const { partition, row } of seeds) {
      this.ledger.set(partition.key, row);
      takenKeys.delete(partition.key);
    }
    return seeds.map((s) => s.partition);
  }

  /** Holds the ledger rows of `keys` not held yet (read from the destination); answers the keys it read. */
  async hold(keys: readonly string[]): Promise<string[]> {
    const missing = keys.filter((key) => !this.ledger.has(key));
    if (missing.length === 0) return [];
    const rows = await readSeedRows(this.ctx.destination, this.manifest.name, missing);
    for (const key of missing) this.ledger.set(key, rows.get(key));
    return missing;
  }

  /** Lets go of the ledger rows of seeds whose work is done. */
  release(keys: readonly string[]): void {
    for (const key of keys) {
      this.ledger.delete(key);
      this.touched.delete(key);
    }
  }

  private triageFor(open: readonly BatchRow[]): SeedTriage {
    const inFlight = new Set(open.flatMap((batch) => itemsOf(batch).map((item) => item.ref)));
    const refreshMs = refreshAfterMs(this.manifest.refresh_after, this.ctx.options);
    // One clock for the plan and the submissions: a seed fresh when planned stays fresh when chunked.
    const now = this.ctx.now();
    const written = (row: SeedRow | undefined) => (row?.updatedAt?.getTime() ?? -Infinity) >= this.ctx.runStartedAt.getTime();
    return {
      // A row this run wrote (a journaled answer loaded, a seed done earlier in the run) is never fetched again in it.
      classify: ({ partition, row }) => (inFlight.has(partition.key) ? 'in_flight' : written(row) || (!this.ctx.fullRefresh && this.isFresh(row, refreshMs, now)) ? 'fresh' : 'todo'),
      worst: (p) => this.costs.costOfSeed(p).worst,
      expected: (p) => this.costs.costOfSeed(p).expected,
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
      stopForBudget(this.ctx, this.outcome, this.ctx.budget.stopError(this.costs.worstOf(defer[0]!), defer.length, held));
    }
    return take;
  }

  /** Loads the answers of single retries that an earlier run paid for but did not load (a crash in between). */
  async loadJournaled(): Promise<void> {
    const rows = (await this.answerJournal()).takeUnasked();
    const held = await this.hold(rows.map((row) => row.partition));
    for (const row of rows) {
      const params = JSON.parse(row.args) as Record<string, unknown>;
      const { values } = partitionOf({ operation: row.call, params, ref: row.partition });
      const { data } = JSON.parse(row.answer) as ServiceResponse;
      await this.loadEntry({ ref: row.partition, status: 'succeeded', credits_used: row.credits, data }, values, null, row.callKey);
    }
    this.release(held);
  }

  private async answerJournal(): Promise<AnswerJournal> {
    this.journal ??= await AnswerJournal.open(this.manifest.name, this.ctx, this.writer, (charge) => addCharge(this.outcome, charge));
    return this.journal;
  }

  /** Seeds of lost jobs whose results were never loaded, as partitions to submit again. */
  async orphanedSeeds(): Promise<Partition[]> {
    const ledger = await readSeedRows(this.ctx.destination, this.manifest.name, this.lost.flatMap((batch) => itemsOf(batch).map((item) => item.ref)));
    return this.lost.flatMap((batch) =>
      itemsOf(batch)
        .filter((item) => ledger.get(item.ref)?.jobId === batch.jobId && ledger.get(item.ref)?.status === 'submitted')
        .map((item) => {
          const partition = partitionOf(item);
          // A new key: the lost job's key may still be held by the service, which would replay the dead job.
          partition.values.resend_of = batch.jobId;
          return partition;
        }),
    );
  }

  /** Records the intent (after reserving its worst case), submits it and reads its results. */
  async submitAndRead(seeds: Partition[]): Promise<void> {
    // Held already, except the seeds an earlier run's batch sends again.
    const held = await this.hold(seeds.map((p) => p.key));
    try {
      await this.submitAndReadHeld(seeds);
    } finally {
      this.release(held);
    }
  }

  private async submitAndReadHeld(seeds: Partition[]): Promise<void> {
    const batch = this.intentFor(seeds);
    const reservation = this.ctx.budget.reserve(this.costs.worstOfBatch(batch));
    try {
      await this.commit([], {
        batches: [batch],
        seeds: seeds.map((p) => this.seedRow(p.key, String(p.values.seed), { status: 'pending', jobId: null })),
      });
    } catch (error) {
      reservation.settle(0);
      throw error;
    }
    crashPoint('after-intent');
    await this.resume(batch, reservation);
  }

  /**
   * Continues a recorded batch: submits an unanswered intent (same key), then reads results from
   * its cursor. A submission holds its worst-case reservation until its items have resolved, and
   * settles each item as its result is read; if reading stops early the unread items stay counted
   * at risk, because they bill at submission. A job an earlier run submitted (`reservation`
   * absent, the row `submitted`) was paid by that run: its results are booked as read, against
   * what that run counted at risk, and spend nothing of this run's limits.
   */
  async resume(batch: BatchRow, reservation?: Reservation): Promise<void> {
    let submitted = batch.status === 'submitted' && batch.jobId ? batch : undefined;
    const books = JobBooks.open(this.ctx, this.outcome, batch, (item) => this.costs.itemCost(item.params).worst, reservation);
    let completed = false;
    let resend: Partition[] = [];
    let held: string[] = [];
    try {
      // A batch of an earlier run: its seeds' rows are read for as long as it is.
      held = await this.hold(itemsOf(batch).map((item) => item.ref));
      if (!submitted) {
        books.sending();
        const answer = await this.submit(batch);
        if (Array.isArray(answer)) {
          resend = answer;
          books.refused();
        } else submitted = answer;
      }
      if (submitted) {
        await this.readResults(submitted, books);
        completed = true;
      }
    } catch (error) {
      if (!submitted) books.failed(error);
      if (errorType(error) !== 'not_found' || submitted !== batch) throw error;
      await this.commit([], { batches: [{ ...batch, status: 'failed' }] });
      this.lost.push(batch);
      this.ctx.reporter.notice(this.manifest.name, `batch job ${batch.jobId} no longer exists at the service: its unread seeds will be fetched again`);
    } finally {
      books.close(completed);
      this.release(held);
    }
    if (resend.length > 0 && !this.ctx.resumeOnly) await this.submitAndRead(resend);
  }

  /**
   * Notes a chunk (or a single retry) that failed as a whole; its seeds stay for a later run. A
   * budget stop or a 402 stops the stream's spending and leaves those seeds `pending` (none are
   * passed for a re-attached batch: its open row already keeps its seeds for the next run).
   */
  async chunkFailed(error: Error, seeds: readonly Partition[]): Promise<void> {
    // A stop request aborts calls in flight: whatever they threw, the chunk is stopped, not failed.
    if (error instanceof RunStoppedError || this.ctx.stop?.aborted) {
      this.defer(seeds);
      noteStoppedOnRequest(this.outcome, error);
      return;
    }
    const stop = await budgetStopOf(error, this.ctx);
    if (stop) {
      this.defer(seeds);
      stopForBudget(this.ctx, this.outcome, stop);
      return;
    }
    this.failedChunks++;
    noteError(this.outcome, error.message);
    this.ctx.reporter.notice(this.manifest.name, error.message);
  }

  /**
   * Retries items that failed for a passing reason (timeout, upstream error) through the single
   * endpoint, which bills only on success (a batch retry would bill the item again whatever its
   * outcome): up to `batch.retry_billed_failures` rounds. Items still failing are left failed, so
   * the next run fetches them.
   */
  async retryTransientFailures(): Promise<void> {
    const rounds = this.ctx.batch.retryBilledFailures ?? 1;
    for (let round = 0; round < rounds && this.transient.length > 0; round++) {
      if (this.ctx.stop?.aborted) {
        noteStoppedOnRequest(this.outcome, new RunStoppedError());
        return;
      }
      await this.retryRound();
    }
    this.leaveTransient();
  }

  private async retryRound(): Promise<void> {
    // Their ledger rows were written this run (failed for a passing reason).
    const keys = this.transient.map((p) => p.key);
    await this.hold(keys);
    for (const key of keys) this.touched.add(key);
    try {
      await this.retryEach(this.withinBudget(this.transient));
    } finally {
      this.release(keys);
    }
  }

  private async retryEach(retry: Partition[]): Promise<void> {
    this.transient = [];
    if (retry.length === 0) return;
    this.ctx.reporter.notice(this.manifest.name, `retrying ${retry.length} items that failed for a passing reason, one by one (billed only on success)`);
    const single = this.manifest.single;
    const queue = new PQueue({ concurrency: this.ctx.concurrency });
    for (const partition of retry) {
      void queue.add(() => (single ? this.retrySingly(partition, single.path) : this.markFailed(partition, 'no single endpoint to retry through')).catch((error: Error) => this.chunkFailed(error, [partition])));
    }
    await queue.onIdle();
  }

  /** Items that failed for a passing reason and were not retried (or failed again): failed this run, fetched by the next. */
  private leaveTransient(): void {
    if (this.transient.length === 0) return;
    this.outcome.failed += this.transient.length;
    const message = `${this.transient.length} item(s) failed for a passing reason (timeout, upstream error) and were not retried in this run (batch.retry_billed_failures: ${this.ctx.batch.retryBilledFailures ?? 1}); the next run fetches them`;
    noteError(this.outcome, message);
    this.ctx.reporter.notice(this.manifest.name, message);
    this.transient = [];
  }

  /**
   * Records the seeds the budget left out as `pending` in the ledger (keeping when they were last
   * fetched, so the next run still takes the stalest first). A seed whose row this run settled
   * (fetched, failed for good, or already pending) keeps it; one left `failed` for a passing
   * reason or `submitted` in a job the service lost is set `pending`. One `submitted` in a job
   * still open (a stop while its results were read) keeps its job: it is paid for, and the next
   * run reads it, or resubmits it should the job be lost. One already answered (fetched, or
   * failed for good) in a batch still open keeps its row whoever wrote it: that batch's cursor
   * is past it, so `pending` would have it fetched and paid for again.
   */
  async recordDeferred(): Promise<void> {
    if (this.deferredSeeds.length === 0) return;
    const lost = new Set(this.lost.flatMap((b) => (b.jobId ? [b.jobId] : [])));
    const inOpenBatch = new Set((await readOpenBatches(this.ctx.destination, this.manifest.name)).flatMap((b) => itemsOf(b).map((item) => item.ref)));
    for (let i = 0; i < this.deferredSeeds.length; i += LEDGER_PAGE) {
      const deferred = this.deferredSeeds.slice(i, i + LEDGER_PAGE);
      await this.hold(deferred.map((p) => p.key));
      const rows = deferred
        .filter((p) => !this.settledThisRun(p.key) && !this.inOpenJob(p.key, lost) && !(inOpenBatch.has(p.key) && isAnswered(this.ledger.get(p.key))))
        .map((p) => this.seedRow(p.key, String(p.values.seed), { status: 'pending', jobId: null, error: null }));
      if (rows.length > 0) await this.commit([], { seeds: rows });
      this.release(deferred.map((p) => p.key));
    }
  }

  /** Leaves seeds for a later run, noting which of them this run has written a ledger row for. */
  private defer(seeds: readonly Partition[]): void {
    this.deferredSeeds.push(...seeds);
    for (const p of seeds) if (this.touched.has(p.key)) this.touchedDeferred.add(p.key);
  }

  private inOpenJob(key: string, lost: ReadonlySet<string>): boolean {
    const jobId = this.ledger.get(key)?.status === 'submitted' ? this.ledger.get(key)?.jobId : null;
    return Boolean(jobId) && !lost.has(jobId!);
  }

  private settledThisRun(key: string): boolean {
    const row = this.ledger.get(key);
    if (!row || !(this.touched.has(key) || this.touchedDeferred.has(key))) return false;
    return row.status === 'pending' || isAnswered(row);
  }

  /** Decides the stream's status from its counters, once everything has run. */
  settleStatus(): void {
    const { outcome } = this;
    if (this.failedChunks > 0 && outcome.records === 0) outcome.status = 'failed';
    else if (this.failedChunks > 0 || this.deferredSeeds.length > 0 || outcome.failed > 0 || outcome.stopped || outcome.stoppedOnRequest) outcome.status = 'partial';
  }

  /** One single call through the answer journal: a crash after its answer arrived loads that answer next run, unpaid. */
  private async retrySingly(partition: Partition, path: string): Promise<void> {
    const worst = this.costs.worstOf(partition);
    const params = this.costs.paramsFor(partition);
    let answer;
    try {
      answer = await (await this.answerJournal()).call({ name: this.manifest.operation, partition: partition.key, args: params, worst }, () => this.ctx.client.request({ method: 'POST', path, body: params, billed: true }));
    } catch (error) {
      // Some single calls bill a 422 (headcount); the journal counted a call lost on the way at its worst case.
      const type = errorType(error);
      if (type === undefined || type === 'insufficient_credits') throw error;
      if (TRANSIENT_FAILURES.has(type)) {
        this.transient.push(partition);
        return;
      }
      await this.markFailed(partition, `${type}: ${(error as Error).message}`);
      return;
    }
    const credits = creditsOf(worst, { response: answer.response });
    await this.loadEntry({ ref: partition.key, status: 'succeeded', credits_used: credits, data: answer.response.data }, partition.values, null, answer.key);
  }

  private async markFailed(partition: Partition, error: string): Promise<void> {
    this.outcome.failed++;
    noteError(this.outcome, `${String(partition.values.seed)}: ${error}`);
    await this.commit([], { seeds: [this.seedRow(partition.key, String(partition.values.seed), { status: 'failed', error, ...this.answeredAt(error) })] });
  }

  /** Sends an intent; answers the submitted row, or the seeds to send again when the service refused one item. */
  private async submit(batch: BatchRow): Promise<BatchRow | Partition[]> {
    const body = JSON.parse(batch.body) as { items: BatchItemBody[] };
    let job;
    try {
      job = await this.ctx.client.submitBatch(body, { idempotencyKey: batch.idempotencyKey });
      crashPoint('after-submit');
    } catch (error) {
      const type = errorType(error) ?? '';
      if (!RETIRING_SUBMIT_ERRORS.has(type)) throw error;
      const { resend, failed } = await this.retire(batch, body.items, type, error as Error);
      // Seeds recorded as failed are the whole story; only a refusal that failed no seed (402) fails the chunk.
      if (failed === 0) throw error;
      return resend;
    }
    const submitted: BatchRow = { ...batch, status: 'submitted', jobId: job.data.job_id };
    await this.commit([], {
      batches: [submitted],
      seeds: body.items.map((item) => this.seedRow(item.ref, seedOf(item), { status: 'submitted', jobId: job.data.job_id })),
    });
    return submitted;
  }

  /**
   * Retires an intent the service refused as written, so it is never resent as is: on 402 its
   * seeds stay pending for a later run; on a 400 naming `items[N]` that seed fails and the others
   * are answered for sending again in a new intent; otherwise every seed fails with the reason.
   */
  private async retire(batch: BatchRow, items: BatchItemBody[], type: string, error: Error): Promise<{ resend: Partition[]; failed: number }> {
    const culprit = type === 'invalid_request' ? /items\[(\d+)\]/.exec(error.message)?.[1] : undefined;
    const failed = type === 'insufficient_credits' ? [] : culprit === undefined ? items : items.filter((_, i) => i === Number(culprit));
    const reason = `${type}: ${error.message}`;
    await this.commit([], {
      batches: [{ ...batch, status: 'failed' }],
      seeds: failed.map((item) => this.seedRow(item.ref, seedOf(item), { status: 'failed', error: reason, fetchedAt: this.ctx.now() })),
    });
    this.outcome.failed += failed.length;
    for (const item of failed) noteError(this.outcome, `${seedOf(item)}: ${reason}`);
    const resend = culprit === undefined ? [] : items.filter((_, i) => i !== Number(culprit)).map(partitionOf);
    return { resend, failed: failed.length };
  }

  private async readResults(batch: BatchRow, books: JobBooks): Promise<void> {
    await readJobResults(this.ctx, batch.jobId!, batch.resultsCursor ?? undefined, (entries, next) => this.loadResults(batch, entries, next, next === null, books));
  }

  private async loadResults(batch: BatchRow, entries: BatchResultEntry[], cursor: string | null, completed: boolean, books: JobBooks): Promise<void> {
    const items = new Map(itemsOf(batch).map((item) => [item.ref, item]));
    const loads = entries.map((entry) => {
      const item = items.get(entry.ref);
      return this.shapeEntry(entry, item ? partitionOf(item).values : { key: entry.ref, seed: entry.ref }, batch.jobId ?? null);
    });
    const saved: BatchRow = { ...batch, resultsCursor: cursor ?? batch.resultsCursor ?? null, status: completed ? 'completed' : 'submitted' };
    await this.commit(
      loads.flatMap((l) => (l.group ? [l.group] : [])),
      { batches: [saved], seeds: loads.map((l) => l.seed) },
    );
    // Booked once the results are committed: a crash before that reads (and books) them again next run.
    books.book(entries);
    crashPoint('mid-results');
    batch.resultsCursor = saved.resultsCursor;
    this.done += entries.length;
    this.ctx.reporter.streamProgress(this.manifest.name, { done: this.done, credits: this.outcome.credits });
  }

  private async loadEntry(entry: Pick<BatchResultEntry, 'ref' | 'status' | 'credits_used' | 'data' | 'error'>, values: Record<string, unknown>, jobId: string | null, answerKey?: string): Promise<void> {
    const load = this.shapeEntry(entry, values, jobId);
    await this.commit(load.group ? [load.group] : [], { seeds: [load.seed], answers: answerKey ? [answerKey] : [] });
    this.ctx.reporter.streamProgress(this.manifest.name, { done: ++this.done, credits: this.outcome.credits });
  }

  /** The rows and the ledger row of one result entry; failures are counted, passing ones kept for a retry. */
  private shapeEntry(entry: Pick<BatchResultEntry, 'ref' | 'status' | 'credits_used' | 'data' | 'error'>, values: Record<string, unknown>, jobId: string | null) {
    const seed = String(values.seed);
    const base = { jobId, fetchedAt: this.ctx.now() };
    if (entry.status === 'succeeded') {
      const group = this.shaper.shape(values, [entry.data]);
      const rejected = group.rejected[0]?.reason;
      const canonicalUrl = (entry.data as { url?: string } | undefined)?.url ?? null;
      const row = this.seedRow(entry.ref, seed, { ...base, status: 'fetched', canonicalUrl, error: rejected ? `record rejected: ${rejected}` : null }, entry.credits_used);
      return { group, seed: row };
    }
    const type = entry.error?.type ?? 'failed';
    const error = `${type}: ${entry.error?.message ?? 'no message'}`;
    if (TRANSIENT_FAILURES.has(type)) this.transient.push({ key: entry.ref, values });
    else {
      this.outcome.failed++;
      noteError(this.outcome, `${seed}: ${error}`);
    }
    return { group: undefined, seed: this.seedRow(entry.ref, seed, { jobId, status: 'failed', error, ...this.answeredAt(error) }, entry.credits_used) };
  }

  /**
   * `fetchedAt` for a failed seed: a failure for good is the service's answer (fresh until
   * refresh_after); one for a passing reason keeps the last successful fetch, so priorities still
   * put a never-fetched seed first and a stale one by its last success.
   */
  private answeredAt(error: string): Pick<SeedRow, 'fetchedAt'> {
    return TRANSIENT_FAILURES.has(error.split(':')[0] ?? '') ? {} : { fetchedAt: this.ctx.now() };
  }

  private intentFor(seeds: Partition[]): BatchRow {
    const sorted = [...seeds].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const items: BatchItemBody[] = sorted.map((p) => ({ operation: this.manifest.operation, params: this.costs.paramsFor(p), ref: p.key }));
    const webhookUrl = this.ctx.batch.webhookUrl;
    const body = JSON.stringify(webhookUrl ? { items, webhook_url: webhookUrl } : { items });
    // Keys derive from what is asked and from the ledger rows of those seeds (last fetch and last
    // write): a recorded intent is resent with its stored key; any later attempt (a refresh, a
    // retry after a failure that kept fetched_at) gets a new one.
    const generation = sorted
      .map((p) => {
        const row = this.ledger.get(p.key);
        return `${row?.fetchedAt?.toISOString() ?? ''}~${row?.updatedAt?.toISOString() ?? ''}${p.values.resend_of ? `@${String(p.values.resend_of)}` : ''}`;
      })
      .join(',');
    const idempotencyKey = `seedline-${KEY_VERSION}-${sha256(stableJson({ stream: this.manifest.name, items, generation, ...(webhookUrl ? { webhookUrl } : {}) })).slice(0, 40)}`;
    return { idempotencyKey, stream: this.manifest.name, bodyHash: sha256(body), body, status: 'intent', itemCount: items.length, jobId: null, resultsCursor: null };
  }

  private isFresh(row: SeedRow | undefined, refreshMs: number | undefined, now: Date): boolean {
    if (!row || !isRecent(row.fetchedAt, refreshMs, now)) return false;
    return row.status === 'fetched' || (row.status === 'failed' && PERMANENT_FAILURES.has(failureType(row)));
  }

  /** A ledger row; `addCredits` adds to what the seed has cost so far (every attempt counts). */
  private seedRow(key: string, seed: string, fields: Partial<SeedRow> & Pick<SeedRow, 'status'>, addCredits = 0): SeedRow {
    const previous = this.ledger.get(key);
    return {
      stream: this.manifest.name,
      seedKey: key,
      seed,
      canonicalUrl: previous?.canonicalUrl ?? null,
      fetchedAt: previous?.fetchedAt ?? null,
      ...fields,
      credits: (previous?.credits ?? 0) + addCredits,
    };
  }

  private async commit(groups: ShapedRecords[], ledgers: { batches?: BatchRow[]; seeds?: SeedRow[]; answers?: string[] }): Promise<void> {
    const counts = await this.writer.inUnit(groups, async (unit) => {
      if (ledgers.seeds?.length) await unit.saveSeeds(ledgers.seeds);
      if (ledgers.batches?.length) await unit.saveBatches(ledgers.batches);
      if (ledgers.answers?.length) await unit.dropAnswers(this.manifest.name, ledgers.answers);
    });
    addLoad(this.outcome, counts);
    for (const seed of ledgers.seeds ?? []) {
      this.ledger.set(seed.seedKey, seed);
      this.touched.add(seed.seedKey);
    }
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


/** A recorded item as a partition that resends exactly its recorded params. */
function partitionOf(item: BatchItemBody): Partition {
  return { key: item.ref, values: { ...item.params, params: item.params, key: item.ref, seed: seedOf(item) } };
}

function seedOf(item: BatchItemBody): string {
  return String(item.params.url ?? item.params.company_url ?? item.ref);
}

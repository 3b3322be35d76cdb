import PQueue from 'p-queue';
import type { BatchResultEntry } from '../../../schemas/batch.js';
import type { BatchRow, SeedRow } from '../../destinations/destination.js';
import type { CompiledBatchStream } from '../../manifest/compile-stream.js';
import { sha256, stableJson } from '../../util/stable-json.js';
import { crashPoint } from '../../util/crash-point.js';
import type { Reservation } from '../books/budget.js';
import { budgetStopOf, stopForBudget } from '../books/budget-stop.js';
import { isDestinationLost, RunStoppedError } from '../engine-errors.js';
import type { LoadWriter } from '../../load/load-writer.js';
import { readSeedRows } from '../books/ledger-pages.js';
import type { Partition } from '../../manifest/components/partitions.js';
import { SeedLedger, TRANSIENT_FAILURES } from './seed-ledger.js';
import { applyTriggerDiffs } from './trigger-apply.js';
import type { SeedPlan } from './seed-plan.js';
import { SeedScan } from './seed-scan.js';
import { AnswerJournal } from '../books/answer-journal.js';
import { BatchCosts } from './batch-costs.js';
import { readJobResults } from './batch-results.js';
import { intentRow, itemsOf, JobBooks } from './job-books.js';
import { creditsOf, errorType, type ServiceResponse } from '../service-calls.js';
import {
  addCharge,
  noteError,
  noteStoppedOnRequest,
  addLoad,
  runScope,
  streamWriter,
  type StreamContext,
  type StreamOutcome,
} from '../stream-context.js';
import { TableShaper, type ShapedRecords } from '../../normalize/table-shaper.js';
import { entryFacts, type EntryFacts, type ResultEntry, type ValuesOf, valuesLookup } from './results-page-shaping.js';
import { shapedGroups, workerDecoder, type ShapedPage } from './shaped-results.js';

/** Bump when the shape of submitted bodies changes, so old idempotency keys are never reused for new bodies. */
const KEY_VERSION = 'v1';
/** Submission errors after which the intent can never succeed as written. */
const RETIRING_SUBMIT_ERRORS = new Set(['insufficient_credits', 'invalid_request', 'idempotency_conflict']);

type BatchItemBody = { operation: string; params: Record<string, unknown>; ref: string };

/**
 * The work of one batch stream in one run: its batch jobs (intent recorded, submitted, results
 * read page by page with the seed ledger) and single retries of items that failed for a passing
 * reason. Which seeds to fetch, and the ledger rows of seeds in play or left for later, are its
 * {@link SeedLedger}'s. `runBatchStream` (batch-stream.ts) drives it.
 */
export class BatchRunner {
  /** What its items cost. */
  readonly costs: BatchCosts;
  private readonly shaper: TableShaper;
  private readonly writer: LoadWriter;
  /** The seeds this run takes or defers, and the ledger rows of those in play. */
  private readonly ledger: SeedLedger;
  /** Recorded jobs the service answered 404 for. */
  private readonly lost: BatchRow[] = [];
  /** Items of this run that failed for a passing reason. */
  private transient: Partition[] = [];
  /** Chunks that failed as a whole (network after retries, 402, a refused body). */
  private failedChunks = 0;
  private done = 0;
  private journal?: AnswerJournal;

  constructor(
    private readonly stream: CompiledBatchStream,
    private readonly ctx: StreamContext,
    private readonly outcome: StreamOutcome,
  ) {
    this.costs = new BatchCosts(stream, ctx);
    this.shaper = new TableShaper(stream.table, runScope(ctx));
    this.writer = streamWriter(ctx, stream.name);
    this.ledger = new SeedLedger(stream, ctx, outcome, this.costs, (rows) => this.commit([], { seeds: rows }));
  }

  /**
   * Opens the scan of the stream's seeds (a seed list is surveyed for repeats once), and tells the
   * destination how many keys its ledger and table are about to take, a seed and a record each.
   */
  async scanSeeds(): Promise<SeedScan> {
    const scan = await SeedScan.open(this.stream.partitions, this.ctx, this.stream.name);
    const table = this.stream.table.fixedName;
    if (table !== null) await this.ctx.destination.expectKeys?.(this.stream.name, table, scan.keys);
    return scan;
  }

  /** Writes what Triggers said since their seeds' last fetch into their rows, at no cost (see {@link applyTriggerDiffs}). */
  async applyTriggers(): Promise<void> {
    const watch = await this.ledger.changeWatch();
    if (watch) await applyTriggerDiffs(this.stream, this.ctx, watch, this.outcome);
  }

  /** The seeds needing a fetch and those the budget takes ({@link SeedLedger.plan}). */
  planSeeds(scan: SeedScan, open: readonly BatchRow[], available: number): Promise<SeedPlan> {
    return this.ledger.plan(scan, open, available);
  }

  /** The plan's seeds in chunks of `size`, their ledger rows held ({@link SeedLedger.select}). */
  selectSeeds(scan: SeedScan, plan: SeedPlan, size: number): AsyncGenerator<Partition[]> {
    return this.ledger.select(scan, plan, size);
  }

  /** Holds the ledger rows of `keys` not held yet; answers the keys it read ({@link SeedLedger.hold}). */
  hold(keys: readonly string[]): Promise<string[]> {
    return this.ledger.hold(keys);
  }

  /** Lets go of the ledger rows of seeds whose work is done. */
  release(keys: readonly string[]): void {
    this.ledger.release(keys);
  }

  /** The seeds the budget can cover after `held` credits; the rest are deferred ({@link SeedLedger.withinBudget}). */
  withinBudget(seeds: Partition[], held = 0): Partition[] {
    return this.ledger.withinBudget(seeds, held);
  }

  /** Loads the answers of single retries that an earlier run paid for but did not load (a crash in between). */
  async loadJournaled(): Promise<void> {
    const rows = (await this.answerJournal()).takeUnasked();
    const held = await this.hold(rows.map((row) => row.partition));
    for (const row of rows) {
      const params = JSON.parse(row.args) as Record<string, unknown>;
      const { values } = partitionOf({ operation: row.call, params, ref: row.partition });
      const { data } = JSON.parse(row.answer) as ServiceResponse;
      await this.loadEntry(
        { ref: row.partition, status: 'succeeded', credits_used: row.credits, data },
        values,
        null,
        row.callKey,
      );
    }
    this.release(held);
  }

  private async answerJournal(): Promise<AnswerJournal> {
    this.journal ??= await AnswerJournal.open(this.stream.name, this.ctx, this.writer, (charge) =>
      addCharge(this.outcome, charge),
    );
    return this.journal;
  }

  /** Seeds of lost jobs whose results were never loaded, as partitions to submit again. */
  async orphanedSeeds(): Promise<Partition[]> {
    const ledger = await readSeedRows(
      this.ctx.destination,
      this.stream.name,
      this.lost.flatMap((batch) => itemsOf(batch).map((item) => item.ref)),
    );
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
        seeds: seeds.map((p) => this.ledger.seedRow(p.key, String(p.values.seed), { status: 'pending', jobId: null })),
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
    const books = JobBooks.open(
      this.ctx,
      this.outcome,
      batch,
      (item) => this.costs.itemCost(item.params).worst,
      reservation,
    );
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
      this.ctx.reporter.notice(
        this.stream.name,
        `batch job ${batch.jobId} no longer exists at the service: its unread seeds will be fetched again`,
      );
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
      this.ledger.defer(seeds);
      noteStoppedOnRequest(this.outcome, error);
      return;
    }
    const stop = await budgetStopOf(error, this.ctx);
    if (stop) {
      this.ledger.defer(seeds);
      stopForBudget(this.ctx, this.outcome, stop);
      return;
    }
    // The destination went away: the run stops after this stream (its seeds stay for the next run).
    if (isDestinationLost(error)) this.ctx.destinationLost?.(error);
    this.failedChunks++;
    noteError(this.outcome, error.message);
    this.ctx.reporter.notice(this.stream.name, error.message);
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
    this.ledger.touch(keys);
    try {
      await this.retryEach(this.withinBudget(this.transient));
    } finally {
      this.release(keys);
    }
  }

  private async retryEach(retry: Partition[]): Promise<void> {
    this.transient = [];
    if (retry.length === 0) return;
    this.ctx.reporter.notice(
      this.stream.name,
      `retrying ${retry.length} items that failed for a passing reason, one by one (billed only on success)`,
    );
    const single = this.stream.items.singlePath;
    const queue = new PQueue({ concurrency: this.ctx.concurrency });
    for (const partition of retry) {
      void queue.add(() =>
        (single
          ? this.retrySingly(partition, single)
          : this.markFailed(partition, 'no single endpoint to retry through')
        ).catch((error: Error) => this.chunkFailed(error, [partition])),
      );
    }
    await queue.onIdle();
  }

  /** Items that failed for a passing reason and were not retried (or failed again): failed this run, fetched by the next. */
  private leaveTransient(): void {
    if (this.transient.length === 0) return;
    this.outcome.failed += this.transient.length;
    const message = `${this.transient.length} item(s) failed for a passing reason (timeout, upstream error) and were not retried in this run (batch.retry_billed_failures: ${this.ctx.batch.retryBilledFailures ?? 1}); the next run fetches them`;
    noteError(this.outcome, message);
    this.ctx.reporter.notice(this.stream.name, message);
    this.transient = [];
  }

  /** Records the seeds left for a later run as `pending`, but for those of jobs still open ({@link SeedLedger.recordDeferred}). */
  recordDeferred(): Promise<void> {
    return this.ledger.recordDeferred(this.lost);
  }

  /** Decides the stream's status from its counters, once everything has run. */
  settleStatus(): void {
    const { outcome } = this;
    if (this.failedChunks > 0 && outcome.records === 0) outcome.status = 'failed';
    else if (
      this.failedChunks > 0 ||
      this.ledger.deferred ||
      outcome.failed > 0 ||
      outcome.stopped ||
      outcome.stoppedOnRequest
    )
      outcome.status = 'partial';
  }

  /** One single call through the answer journal: a crash after its answer arrived loads that answer next run, unpaid. */
  private async retrySingly(partition: Partition, path: string): Promise<void> {
    const worst = this.costs.worstOf(partition);
    const params = this.costs.paramsFor(partition);
    let answer;
    try {
      answer = await (
        await this.answerJournal()
      ).call({ name: this.stream.items.operation, partition: partition.key, args: params, worst }, () =>
        this.ctx.client.request({ method: 'POST', path, body: params, billed: true }),
      );
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
    await this.loadEntry(
      { ref: partition.key, status: 'succeeded', credits_used: credits, data: answer.response.data },
      partition.values,
      null,
      answer.key,
    );
  }

  private async markFailed(partition: Partition, error: string): Promise<void> {
    this.outcome.failed++;
    noteError(this.outcome, `${String(partition.values.seed)}: ${error}`);
    await this.commit([], {
      seeds: [
        this.ledger.seedRow(partition.key, String(partition.values.seed), {
          status: 'failed',
          error,
          ...this.ledger.answeredAt(error),
        }),
      ],
    });
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
      seeds: body.items.map((item) =>
        this.ledger.seedRow(item.ref, seedOf(item), { status: 'submitted', jobId: job.data.job_id }),
      ),
    });
    return submitted;
  }

  /**
   * Retires an intent the service refused as written, so it is never resent as is: on 402 its
   * seeds stay pending for a later run; on a 400 naming `items[N]` that seed fails and the others
   * are answered for sending again in a new intent; otherwise every seed fails with the reason.
   */
  private async retire(
    batch: BatchRow,
    items: BatchItemBody[],
    type: string,
    error: Error,
  ): Promise<{ resend: Partition[]; failed: number }> {
    const culprit = type === 'invalid_request' ? /items\[(\d+)\]/.exec(error.message)?.[1] : undefined;
    const failed =
      type === 'insufficient_credits'
        ? []
        : culprit === undefined
          ? items
          : items.filter((_, i) => i === Number(culprit));
    const reason = `${type}: ${error.message}`;
    await this.commit([], {
      batches: [{ ...batch, status: 'failed' }],
      seeds: failed.map((item) =>
        this.ledger.seedRow(item.ref, seedOf(item), { status: 'failed', error: reason, fetchedAt: this.ctx.now() }),
      ),
    });
    this.outcome.failed += failed.length;
    for (const item of failed) noteError(this.outcome, `${seedOf(item)}: ${reason}`);
    const resend = culprit === undefined ? [] : items.filter((_, i) => i !== Number(culprit)).map(partitionOf);
    return { resend, failed: failed.length };
  }

  private async readResults(batch: BatchRow, books: JobBooks): Promise<void> {
    const jobId = batch.jobId!;
    const cursor = batch.resultsCursor ?? undefined;
    const items = itemValues(batch);
    const valuesOf = valuesLookup(items);
    const load = (page: BatchResultEntry[] | ShapedPage, next: string | null) => {
      if (!Array.isArray(page))
        return this.commitResults(
          batch,
          shapedGroups(page, valuesOf, this.shaper),
          this.seedRows(page.entries, valuesOf, batch),
          next,
          books,
          page.entries,
        );
      const loads = page.map((entry) => this.shapeEntry(entry, valuesOf(entry.ref), batch.jobId ?? null));
      return this.commitResults(
        batch,
        loads.flatMap((l) => (l.group ? [l.group] : [])),
        loads.map((l) => l.seed),
        next,
        books,
        page,
      );
    };
    const decode = workerDecoder(this.ctx, this.stream.name, this.shaper, items);
    const { client } = this.ctx;
    // From the start, every item of the job is still to come: its end is read when it comes.
    const expected = cursor === undefined ? batch.itemCount : undefined;
    if (!decode || !client.getBatchResultsDecoded)
      return readJobResults(this.ctx, jobId, cursor, load, undefined, expected);
    await readJobResults(
      this.ctx,
      jobId,
      cursor,
      load,
      (query) => client.getBatchResultsDecoded!<ShapedPage>(jobId, query, decode),
      expected,
    );
  }

  private seedRows(entries: readonly EntryFacts[], valuesOf: ValuesOf, batch: BatchRow): SeedRow[] {
    return entries.map((facts) => this.seedRowOf(facts, valuesOf(facts.ref), batch.jobId ?? null));
  }

  /** Commits a results page's rows and ledger rows with the cursor after it, then books what its entries billed. */
  private async commitResults(
    batch: BatchRow,
    groups: ShapedRecords[],
    seeds: SeedRow[],
    cursor: string | null,
    books: JobBooks,
    entries: readonly Pick<BatchResultEntry, 'ref' | 'credits_used'>[],
  ): Promise<void> {
    const saved: BatchRow = {
      ...batch,
      resultsCursor: cursor ?? batch.resultsCursor ?? null,
      status: cursor === null ? 'completed' : 'submitted',
    };
    await this.commit(groups, { batches: [saved], seeds });
    // Booked once the results are committed: a crash before that reads (and books) them again next run.
    books.book(entries);
    crashPoint('mid-results');
    batch.resultsCursor = saved.resultsCursor;
    this.done += entries.length;
    this.ctx.reporter.streamProgress(this.stream.name, { done: this.done, credits: this.outcome.credits });
  }

  private async loadEntry(
    entry: ResultEntry,
    values: Record<string, unknown>,
    jobId: string | null,
    answerKey?: string,
  ): Promise<void> {
    const load = this.shapeEntry(entry, values, jobId);
    await this.commit(load.group ? [load.group] : [], { seeds: [load.seed], answers: answerKey ? [answerKey] : [] });
    this.ctx.reporter.streamProgress(this.stream.name, { done: ++this.done, credits: this.outcome.credits });
  }

  /** The rows and the ledger row of one result entry. */
  private shapeEntry(
    entry: ResultEntry,
    values: Record<string, unknown>,
    jobId: string | null,
  ): { group?: ShapedRecords; seed: SeedRow } {
    const group = entry.status === 'succeeded' ? this.shaper.shape(values, [entry.data]) : undefined;
    return { ...(group ? { group } : {}), seed: this.seedRowOf(entryFacts(entry, group), values, jobId) };
  }

  /** The ledger row of a result entry; failures are counted, passing ones kept for a retry. */
  private seedRowOf(facts: EntryFacts, values: Record<string, unknown>, jobId: string | null): SeedRow {
    const seed = String(values.seed);
    if (facts.status === 'succeeded') {
      const error = facts.rejection ? `record rejected: ${facts.rejection}` : null;
      return this.ledger.seedRow(
        facts.ref,
        seed,
        { jobId, fetchedAt: this.ctx.now(), status: 'fetched', canonicalUrl: facts.canonicalUrl, error },
        facts.credits_used,
      );
    }
    const type = facts.error?.type ?? 'failed';
    const error = `${type}: ${facts.error?.message ?? 'no message'}`;
    if (TRANSIENT_FAILURES.has(type)) this.transient.push({ key: facts.ref, values });
    else {
      this.outcome.failed++;
      noteError(this.outcome, `${seed}: ${error}`);
    }
    return this.ledger.seedRow(
      facts.ref,
      seed,
      { jobId, status: 'failed', error, ...this.ledger.answeredAt(error) },
      facts.credits_used,
    );
  }

  private intentFor(seeds: Partition[]): BatchRow {
    const sorted = [...seeds].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const items: BatchItemBody[] = sorted.map((p) => ({
      operation: this.stream.items.operation,
      params: this.costs.paramsFor(p),
      ref: p.key,
    }));
    const webhookUrl = this.ctx.batch.webhookUrl;
    const body = JSON.stringify(webhookUrl ? { items, webhook_url: webhookUrl } : { items });
    // Keys derive from what is asked and from the ledger rows of those seeds (last fetch and last
    // write): a recorded intent is resent with its stored key; any later attempt (a refresh, a
    // retry after a failure that kept fetched_at) gets a new one.
    const generation = sorted
      .map((p) => {
        const row = this.ledger.row(p.key);
        return `${row?.fetchedAt?.toISOString() ?? ''}~${row?.updatedAt?.toISOString() ?? ''}${p.values.resend_of ? `@${String(p.values.resend_of)}` : ''}`;
      })
      .join(',');
    const idempotencyKey = `seedline-${KEY_VERSION}-${sha256(stableJson({ stream: this.stream.name, items, generation, ...(webhookUrl ? { webhookUrl } : {}) })).slice(0, 40)}`;
    return intentRow(this.stream.name, idempotencyKey, body, items.length, undefined, this.ctx.apiKey?.keyId);
  }

  private async commit(
    groups: ShapedRecords[],
    ledgers: { batches?: BatchRow[]; seeds?: SeedRow[]; answers?: string[] },
  ): Promise<void> {
    const counts = await this.writer.inUnit(groups, async (unit) => {
      if (ledgers.seeds?.length) await unit.saveSeeds(ledgers.seeds);
      if (ledgers.batches?.length) await unit.saveBatches(ledgers.batches);
      if (ledgers.answers?.length) await unit.dropAnswers(this.stream.name, ledgers.answers);
    });
    addLoad(this.outcome, counts);
    this.ledger.wrote(ledgers.seeds ?? []);
  }
}

/** A recorded item as a partition that resends exactly its recorded params. */
function partitionOf(item: BatchItemBody): Partition {
  return { key: item.ref, values: { ...item.params, params: item.params, key: item.ref, seed: seedOf(item) } };
}

function seedOf(item: BatchItemBody): string {
  return String(item.params.url ?? item.params.company_url ?? item.ref);
}

/** The items of a recorded job as `[ref, partition values]`. */
function itemValues(batch: BatchRow): [string, Record<string, unknown>][] {
  return itemsOf(batch).map((item) => [item.ref, partitionOf(item).values]);
}

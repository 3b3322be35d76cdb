import type { BatchResultEntry } from '../../../schemas/batch.js';
import type { BatchRow } from '../../destinations/destination.js';
import type { CompiledRequestStream } from '../../manifest/compile-stream.js';
import { sha256, stableJson } from '../../util/stable-json.js';
import { readJobResults } from '../batch/batch-results.js';
import { intentRow, itemsOf, JobBooks } from '../batch/job-books.js';
import { cutToFit, type Reservation } from '../books/budget.js';
import { stopForBudget } from '../books/budget-stop.js';
import { crashPoint } from '../../util/crash-point.js';
import type { Partition } from '../../manifest/components/partitions.js';
import type { PaidAnswer } from '../books/answer-journal.js';
import type { Pass, TakenAnswer } from './partition-pass.js';
import { costOfCall, errorType, type BatchItemOf } from '../service-calls.js';
import { type StreamContext, type StreamOutcome } from '../stream-context.js';
import { ownsBatch, resumable, withJobSlot } from '../fleet/item-scope.js';
import { RoundsOfAnotherKeyError } from '../engine-errors.js';

/** Item failures worth asking again in the next round (a failed paged or search item is refunded: batch rule 2, except those of an operation whose failures bill). */
const TRANSIENT = new Set(['upstream_timeout', 'internal_error', 'upstream_error', 'rate_limited']);
/** Rounds a page that failed for a passing reason is asked in, in all, before its partition fails for this run. */
const ATTEMPTS = 3;

/** One pass's answer from a round: what it loads, and the answers it came from (journal keys of any single call it made, when they arrived). */
export interface RoundAnswer {
  partition: Partition;
  taken: TakenAnswer;
  answers: PaidAnswer[];
}

/** What page rounds need of the stream's partition runner. */
export interface RoundRunner {
  openPass(partition: Partition, resume?: boolean): Pass;
  argsOf(pass: Pass): Record<string, unknown>;
  takeAnswer(
    pass: Pass,
    args: Record<string, unknown>,
    response: { data: unknown; meta: Record<string, never> },
    answers: PaidAnswer[],
  ): Promise<TakenAnswer>;
  recordFailure(partition: Partition, error: Error): Promise<void>;
  /** Commits a results page: the passes' rows and states with the batch row that says how far it was read (and drops their journaled answers). */
  commitRound(taken: readonly RoundAnswer[], batch: BatchRow): Promise<void>;
  /** Records a batch row alone (an intent, a submitted job, a refused one). */
  saveBatch(batch: BatchRow): Promise<void>;
}

type Item = BatchItemOf & { ref: string };

/**
 * Page rounds: a request stream's pages asked as batch items instead of single calls. A round is
 * one job per `batch.chunk_size` passes, each item asking one pass's next page (the next page of
 * N partitions is one job of N items). Its intent (exact body, deterministic Idempotency-Key) is
 * committed before it is sent; each page of its results commits with the passes' states and the
 * results cursor. A crashed run re-attaches to the job, or resends the intent with its key: no
 * page is billed twice.
 */
export class PageRounds {
  private done = 0;
  /** Rounds sent by this run: part of each intent's key, so a page asked again in a later round is a new job, not the first one replayed. */
  private rounds = 0;
  /** The path of each batch operation asked, whose `x-credits` the service may state (a search variant has its own). */
  private readonly paths = new Map<string, string>();
  /** Failed attempts of each pass's current page (by partition key). */
  private readonly attempts = new Map<string, number>();

  constructor(
    private readonly stream: CompiledRequestStream,
    private readonly ctx: StreamContext,
    private readonly runner: RoundRunner,
    private readonly outcome: StreamOutcome,
  ) {}

  /** Whether a partition's pages can go as batch items (its call, with its arguments, has a batch operation). */
  batchable(partition: Partition): boolean {
    return this.batchItem(this.runner.openPass(partition)) !== undefined;
  }

  /**
   * Finishes the rounds earlier runs left open (paid for, or maybe paid for): each item whose pass
   * still stands at the page it asked is answered from the job; the rest were loaded already.
   */
  async resumeOpen(partitions: readonly Partition[]): Promise<void> {
    const byKey = new Map(partitions.map((p) => [p.key, p]));
    const foreign: BatchRow[] = [];
    for (const batch of await this.openBatches()) {
      if (!resumable(this.ctx, batch)) {
        foreign.push(batch);
        continue;
      }
      const passes = new Map<string, Pass>();
      for (const item of itemsOf(batch)) {
        const { key, page } = parseRef(item.ref);
        const partition = byKey.get(key);
        if (partition) this.paths.set(item.operation, this.stream.requester.pathOf(partition));
        if (!partition) {
          this.ctx.reporter.notice(
            this.stream.name,
            `${key}: no longer a partition of this stream, so its page in batch job ${batch.jobId ?? batch.idempotencyKey} is not loaded`,
          );
          continue;
        }
        const pass = this.runner.openPass(partition, true);
        if (pass.page.number === page) passes.set(item.ref, pass);
      }
      await withJobSlot(this.ctx, () => this.runJob(batch, passes));
    }
    // A round recorded with another of the fleet's keys is that key's to read; until it is, no other page is asked.
    if (foreign.length > 0) throw new RoundsOfAnotherKeyError(this.stream.name, foreign);
  }

  /** Keys of the partitions whose pages the rounds earlier runs left open ask: `resumeOpen` needs those partitions. */
  async openKeys(): Promise<Set<string>> {
    const keys = new Set<string>();
    for (const batch of await this.openBatches()) for (const item of itemsOf(batch)) keys.add(parseRef(item.ref).key);
    return keys;
  }

  private async openBatches(): Promise<BatchRow[]> {
    return (await this.ctx.destination.readBatches(this.stream.name)).filter(
      (b) => (b.status === 'intent' || b.status === 'submitted') && ownsBatch(this.ctx, b, (ref) => parseRef(ref).key),
    );
  }

  /** Asks the partitions' pages round by round, until every pass has ended (or the budget stops them). */
  async run(partitions: readonly Partition[]): Promise<void> {
    let passes = partitions.map((p) => this.runner.openPass(p));
    while (passes.length > 0) {
      const going: Pass[] = [];
      for (let i = 0; i < passes.length; i += this.ctx.batch.chunkSize) {
        if (this.ctx.stop?.aborted) return;
        going.push(...(await this.round(passes.slice(i, i + this.ctx.batch.chunkSize))));
      }
      passes = going;
    }
  }

  /** One job asking the next page of each pass that fits the budget; answers the passes that go on. */
  private async round(passes: readonly Pass[]): Promise<Pass[]> {
    const asked = passes.map((pass) => ({ pass, item: this.itemOf(pass) }));
    const worst = (a: { item: Item }) => this.worstOfItem(a.item);
    const { take, defer } = cutToFit(asked, worst, this.ctx.budget.remaining);
    if (defer.length > 0)
      stopForBudget(this.ctx, this.outcome, this.ctx.budget.stopError(worst(defer[0]!), defer.length));
    if (take.length === 0) return [];
    const batch = this.intentFor(take.map((a) => a.item));
    const reservation = this.ctx.budget.reserve(this.worstOf(batch));
    try {
      await this.runner.saveBatch(batch);
    } catch (error) {
      reservation.settle(0);
      throw error;
    }
    crashPoint('after-intent');
    return withJobSlot(this.ctx, () => this.runJob(batch, new Map(take.map((a) => [a.item.ref, a.pass])), reservation));
  }

  /**
   * Submits an unanswered intent (same key) and reads the job's results from its cursor. Without
   * `reservation`, the batch is an earlier run's: that run counted it at risk, so an intent is
   * paid for again here (and settled against it) and a submitted job's bills are booked against it.
   */
  private async runJob(batch: BatchRow, passes: ReadonlyMap<string, Pass>, reservation?: Reservation): Promise<Pass[]> {
    let submitted = batch.status === 'submitted' && batch.jobId ? batch : undefined;
    const books = JobBooks.open(this.ctx, this.outcome, batch, (item) => this.worstOfItem(item), reservation);
    let completed = false;
    const going: Pass[] = [];
    try {
      if (!submitted) {
        books.sending();
        submitted = await this.submit(batch);
      }
      const job = submitted;
      const cursor = job.resultsCursor ?? undefined;
      await readJobResults(
        this.ctx,
        job.jobId!,
        cursor,
        async (entries, next) => {
          going.push(...(await this.loadResults(job, entries, next, passes, books)));
        },
        undefined,
        cursor === undefined ? job.itemCount : undefined,
      );
      completed = true;
    } catch (error) {
      // A refused intent is retired (its pages are asked again in a new round); one whose answer was lost stays open for its key.
      if (!submitted) {
        if (books.failed(error)) await this.runner.saveBatch({ ...batch, status: 'failed' });
      } else if (errorType(error) === 'not_found') {
        // The service no longer knows the job: its pages are asked again by the next round or run.
        await this.runner.saveBatch({ ...submitted, status: 'failed' });
        this.ctx.reporter.notice(
          this.stream.name,
          `batch job ${submitted.jobId} no longer exists at the service: its pages will be asked again`,
        );
        return [];
      }
      throw error;
    } finally {
      books.close(completed);
    }
    return going;
  }

  private async submit(batch: BatchRow): Promise<BatchRow> {
    const job = await this.ctx.client.submitBatch(JSON.parse(batch.body) as { items: Record<string, unknown>[] }, {
      idempotencyKey: batch.idempotencyKey,
    });
    crashPoint('after-submit');
    const submitted: BatchRow = { ...batch, status: 'submitted', jobId: job.data.job_id };
    await this.runner.saveBatch(submitted);
    return submitted;
  }

  /** Loads a page of results: answers go to their passes, failures are recorded; answers the passes that go on. */
  private async loadResults(
    batch: BatchRow,
    entries: BatchResultEntry[],
    next: string | null,
    passes: ReadonlyMap<string, Pass>,
    books: JobBooks,
  ): Promise<Pass[]> {
    const taken: (RoundAnswer & { pass: Pass })[] = [];
    const failed: { pass: Pass; entry: BatchResultEntry }[] = [];
    // A page's answer is as old as its job: a pass it ends ends when the job was sent, so the next window covers what came after.
    const receivedAt = batch.createdAt ?? this.ctx.now();
    for (const entry of entries) {
      const pass = passes.get(entry.ref);
      if (!pass) continue;
      if (entry.status !== 'succeeded') {
        failed.push({ pass, entry });
        continue;
      }
      const response = { data: entry.data, meta: {} };
      const answers: PaidAnswer[] = [
        { response: { data: entry.data, meta: { creditsUsed: entry.credits_used } }, receivedAt },
      ];
      taken.push({
        partition: pass.partition,
        pass,
        answers,
        taken: await this.runner.takeAnswer(pass, this.runner.argsOf(pass), response, answers),
      });
    }
    const saved: BatchRow = {
      ...batch,
      resultsCursor: next ?? batch.resultsCursor ?? null,
      status: next === null ? 'completed' : 'submitted',
    };
    await this.runner.commitRound(taken, saved);
    batch.resultsCursor = saved.resultsCursor;
    books.book(entries);
    crashPoint('mid-results');
    const again: Pass[] = [];
    for (const { pass, entry } of failed) {
      if (this.askAgain(pass, entry)) again.push(pass);
      else await this.runner.recordFailure(pass.partition, failureOf(entry));
    }
    for (const t of taken) this.attempts.delete(t.partition.key);
    this.done += taken.filter((t) => !t.taken.more).length + failed.length - again.length;
    this.ctx.reporter.streamProgress(this.stream.name, { done: this.done, credits: this.outcome.credits });
    return [...taken.filter((t) => t.taken.more).map((t) => t.pass), ...again];
  }

  /** Whether a page that failed for a passing reason is asked again in the next round (at most {@link ATTEMPTS} in all). */
  private askAgain(pass: Pass, entry: BatchResultEntry): boolean {
    // An item whose failure bills anyway (a Sales Navigator search, rule 1) would be paid again for each attempt.
    if (!TRANSIENT.has(entry.error?.type ?? '') || this.batchItem(pass)?.failuresBilled) return false;
    const attempts = (this.attempts.get(pass.partition.key) ?? 0) + 1;
    this.attempts.set(pass.partition.key, attempts);
    return attempts < ATTEMPTS;
  }

  private batchItem(pass: Pass) {
    return this.stream.requester.batchItemOf(pass.partition, this.runner.argsOf(pass));
  }

  private itemOf(pass: Pass): Item {
    const { operation, params } = this.batchItem(pass)!;
    this.paths.set(operation, this.stream.requester.pathOf(pass.partition));
    return { operation, params, ref: refOf(pass.partition.key, pass.page.number) };
  }

  /** An item's worst case: the stream's cost with its params, or the service's own for the path its operation stands for. */
  private worstOfItem(item: BatchItemOf): number {
    return costOfCall(this.ctx.costs, this.stream.cost, this.paths.get(item.operation), item.params).worst;
  }

  private worstOf(batch: BatchRow): number {
    return itemsOf(batch).reduce((n, item) => n + this.worstOfItem(item), 0);
  }

  /** A round's intent; its key follows from the stream, the run, the round and exactly what is asked. */
  private intentFor(items: readonly Item[]): BatchRow {
    const body = JSON.stringify({ items });
    const round = ++this.rounds;
    const idempotencyKey = `seedline-rounds-v1-${sha256(stableJson({ stream: this.stream.name, run: this.ctx.runId, round, items })).slice(0, 40)}`;
    return intentRow(this.stream.name, idempotencyKey, body, items.length, this.ctx.now(), this.ctx.apiKey?.keyId);
  }
}

/** An item's ref: the page it asks and its partition (unique within a job: one page per pass a round). */
function refOf(key: string, page: number): string {
  return `${page}:${key}`;
}

function parseRef(ref: string): { key: string; page: number } {
  const at = ref.indexOf(':');
  return { page: Number(ref.slice(0, at)), key: ref.slice(at + 1) };
}

/** A failed result entry as the error its single call would have thrown (typed, so it is judged the same way). */
function failureOf(entry: BatchResultEntry): Error {
  const type = entry.error?.type ?? 'failed';
  return Object.assign(new Error(`${type}: ${entry.error?.message ?? 'no message'}`), { type });
}

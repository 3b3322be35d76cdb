import type { BatchResultEntry } from '../../../schemas/batch.js';
import type { BatchRow } from '../../destinations/destination.js';
import type { Reservation } from '../books/budget.js';
import { sha256 } from '../../util/stable-json.js';
import { errorType } from '../service-calls.js';
import type { StreamContext, StreamOutcome } from '../stream-context.js';

/** A batch item as recorded in an intent's body. */
export interface RecordedItem {
  operation: string;
  params: Record<string, unknown>;
  ref: string;
}

/** How long the service keeps an Idempotency-Key (docs/service-assumptions.md#idempotency-keys). */
const IDEMPOTENCY_KEY_LIFETIME_MS = 24 * 3_600_000;

/** Submission answers that prove no job was created (so nothing billed). */
const CREATES_NOTHING = new Set([
  'invalid_request',
  'insufficient_credits',
  'idempotency_conflict',
  'rate_limited',
  'invalid_api_key',
]);

/** A job's intent as recorded before it is sent: its exact body (and its hash), its key and item count; no job yet. */
export function intentRow(
  stream: string,
  idempotencyKey: string,
  body: string,
  itemCount: number,
  createdAt?: Date,
  keyId?: string,
): BatchRow {
  return {
    idempotencyKey,
    stream,
    bodyHash: sha256(body),
    body,
    status: 'intent',
    itemCount,
    jobId: null,
    resultsCursor: null,
    ...(createdAt ? { createdAt } : {}),
    ...(keyId ? { keyId } : {}),
  };
}

/** The items of a recorded intent or job (none once a completed job's body was emptied). */
export function itemsOf(batch: BatchRow): RecordedItem[] {
  // A completed job's body is emptied (src/destinations/sql/system-tables.ts): it holds no item to send or read again.
  if (batch.body === '') return [];
  return (JSON.parse(batch.body) as { items: RecordedItem[] }).items;
}

/**
 * The budget and books of one recorded batch job in this run, shared by batch streams and page
 * rounds. A job this run submits holds its worst case until its items resolve, each settled as
 * its result is read; items never read stay at risk once the job may have billed. An earlier
 * run's intent is paid for here (reserved first, then settled against what that run counted at
 * risk). An earlier run's submitted job books its results against that run's at-risk items and
 * spends nothing of this run's limits.
 *
 * @example
 * ```ts
 * const books = JobBooks.open(ctx, outcome, batch, (item) => worstOf(item), reservation);
 * books.sending();                       // before the POST
 * books.book(entries);                   // after each results page commits
 * books.close(completed);                // in finally
 * ```
 */
export class JobBooks {
  private mayHaveBilled: boolean;

  private constructor(
    private readonly ctx: StreamContext,
    private readonly outcome: StreamOutcome,
    private readonly batch: BatchRow,
    private readonly items: ReadonlyMap<string, RecordedItem>,
    private readonly worstOf: (item: RecordedItem) => number,
    private readonly reservation: Reservation | undefined,
    submitted: boolean,
  ) {
    this.mayHaveBilled = submitted;
  }

  /** The books of `batch`; `reservation` is this run's, when it recorded the intent itself. Throws a budget stop when an earlier run's intent does not fit. */
  static open(
    ctx: StreamContext,
    outcome: StreamOutcome,
    batch: BatchRow,
    worstOf: (item: RecordedItem) => number,
    reservation?: Reservation,
  ): JobBooks {
    const items = itemsOf(batch);
    const submitted = batch.status === 'submitted' && Boolean(batch.jobId);
    if (!reservation && !submitted) {
      const worst = items.reduce((n, item) => n + worstOf(item), 0);
      reservation = ctx.budget.reserve(worst);
      ctx.budget.bookEarlier(0, worst);
    }
    return new JobBooks(
      ctx,
      outcome,
      batch,
      new Map(items.map((item) => [item.ref, item])),
      worstOf,
      reservation,
      submitted,
    );
  }

  /**
   * The submission is about to go out: from now on its items may have billed, even if the answer
   * is lost. An intent older than the service keeps Idempotency-Keys is warned about: should its
   * first submission have reached the service (a crash before the job id was saved), the resend
   * creates and bills a second job, and nothing the service shows can tell beforehand.
   */
  sending(): void {
    this.mayHaveBilled = true;
    const ageMs = this.ctx.now().getTime() - (this.batch.createdAt?.getTime() ?? Number.POSITIVE_INFINITY);
    if (!(ageMs > IDEMPOTENCY_KEY_LIFETIME_MS)) return;
    this.ctx.reporter.notice(
      this.outcome.stream,
      `resending batch intent ${this.batch.idempotencyKey}, recorded ${Math.floor(ageMs / 3_600_000)} h ago: the service keeps an Idempotency-Key 24 h, so if its first submission reached the service, this creates and bills a second job`,
    );
  }

  /** The submission failed; answers whether the service proved it created no job (nothing billed). A lost answer proves nothing. */
  failed(error: unknown): boolean {
    if (!CREATES_NOTHING.has(errorType(error) ?? '')) return false;
    this.mayHaveBilled = false;
    return true;
  }

  /** The service refused the items as written and created no job. */
  refused(): void {
    this.mayHaveBilled = false;
  }

  /** Books results once they are committed, in the run and the stream. */
  book(entries: readonly Pick<BatchResultEntry, 'ref' | 'credits_used'>[]): void {
    for (const entry of entries) {
      const item = this.items.get(entry.ref);
      const worst = item ? this.worstOf(item) : 0;
      if (this.reservation) this.reservation.part(worst, entry.credits_used);
      else this.ctx.budget.bookEarlier(entry.credits_used, worst);
      this.outcome.credits += entry.credits_used;
    }
  }

  /** Settles this run's reservation: items never read of a job that may have billed stay at risk. */
  close(completed: boolean): void {
    if (!this.reservation) return;
    const atRisk = this.mayHaveBilled && !completed ? this.reservation.held : 0;
    this.reservation.settle(0, atRisk);
    this.outcome.creditsAtRisk += atRisk;
  }
}

import type { CapRead } from '../../manifest/components/caps.js';
import type { Partition } from '../../manifest/components/partitions.js';
import type { CompiledRequestStream } from '../../manifest/compile-stream.js';
import { laterIso } from '../../manifest/components/incremental.js';
import type { TableShaper, ShapedRecords } from '../../normalize/table-shaper.js';
import type { BatchRow, StateRow } from '../../destinations/destination.js';
import { crashPoint } from '../../util/crash-point.js';
import { RunStoppedError } from '../engine-errors.js';
import type { LoadWriter } from '../../load/load-writer.js';
import type { AnswerJournal, PaidAnswer } from '../books/answer-journal.js';
import type { RoundAnswer, RoundRunner } from './page-rounds.js';
import { costOfCall, errorType, UNPROCESSABLE } from '../service-calls.js';
import { addLoad, noteError, type StreamContext, type StreamOutcome } from '../stream-context.js';
import { noticeRetentionGap } from './retention-gap.js';
import type { DuePartition } from './request-plan.js';
import {
  endOfPass,
  firstAnswerAt,
  hasStoppingPoint,
  pagesThisRun,
  renderArgs,
  stateRow,
  type PageAnswer,
  type PageState,
  type PartitionState,
  type Pass,
  type TakenAnswer,
  type WindowAsked,
} from './partition-pass.js';

/** Pages of a replace-mode stream, gathered to be written in one unit at the end. */
export interface PageBuffer {
  groups: ShapedRecords[];
  states: StateRow[];
  /** Journal keys of the buffered pages' answers. */
  answers: (string | undefined)[];
}

/**
 * Runs the partitions of one request stream in one run: each pass page by page, each page
 * committed with the state that resumes after it, its paid answers dropped from the journal.
 */
export class PartitionRunner implements RoundRunner {
  /** The state of each partition in flight as last committed (or as read when its chunk came): `track`ed, then `forget`. */
  private readonly current = new Map<string, PartitionState>();
  /** Partitions whose pass this run left pending at `max_pages`, before reaching the items already loaded. */
  cutAtMaxPages = 0;

  constructor(
    private readonly stream: CompiledRequestStream,
    private readonly ctx: StreamContext,
    private readonly shaper: TableShaper,
    private readonly writer: LoadWriter,
    private readonly outcome: StreamOutcome,
    private readonly journal: AnswerJournal,
    private readonly buffer?: PageBuffer,
  ) {}

  /** Holds the saved states of partitions about to run. */
  track(due: readonly DuePartition[]): void {
    for (const { partition, saved } of due) if (saved) this.current.set(partition.key, saved);
  }

  /** Lets go of the state of a partition done with (run, failed or skipped). */
  forget(key: string): void {
    this.current.delete(key);
  }

  /**
   * Pages through one partition, committing each page with the state that resumes after it; the
   * last page's load is handed back under way (`lastLoad`), its answer already journaled.
   */
  async run(partition: Partition): Promise<{ lastLoad: Promise<void> }> {
    const pass = this.openPass(partition);
    noticeRetentionGap(this.stream, this.ctx, partition, pass.saved);
    for (;;) {
      const args = this.argsOf(pass);
      // Every billed answer of this page (the call, and pieces of a cut answer) is dropped from the journal as it loads.
      const answers: PaidAnswer[] = [];
      const asks = renderArgs(this.stream, this.ctx, partition, pass.saved, pass.page, { withoutClock: true });
      const response = await this.fetch(partition, args, answers, asks);
      const taken = await this.takeAnswer(pass, args, response, answers);
      const load = this.commit(partition, taken.shaped, taken.state, answers);
      if (!taken.more) {
        // Marked handled here: the caller attaches its own handler a tick later.
        load.catch(() => undefined);
        return { lastLoad: load };
      }
      await load;
      if (this.ctx.stop?.aborted) throw new RunStoppedError();
    }
  }

  /**
   * Starts (or resumes) a partition's pass from its state as last committed. `resume` takes up a
   * pass left pending even under a full refresh (to load a batch round an earlier run paid for).
   */
  openPass(partition: Partition, resume = false): Pass {
    const saved = this.current.get(partition.key) ?? {};
    // A full refresh starts every pass afresh and ignores `newest` while paging, but keeps it in
    // the state, so a failure part-way does not cost the next normal run its stopping point.
    const page: PageState = (this.ctx.fullRefresh && !resume ? undefined : saved.pending) ?? { number: 1 };
    const limit = pagesThisRun(this.stream, saved, page, this.stream.paginator.maxPages(partition));
    // Whether this pass has reached the items of earlier passes (a full refresh reads on past them).
    return { partition, saved, page, limit, reachedStop: !hasStoppingPoint(this.stream, saved), pagesRead: 1 };
  }

  /** The arguments of a pass's next call. */
  argsOf(pass: Pass): Record<string, unknown> {
    return renderArgs(this.stream, this.ctx, pass.partition, pass.saved, pass.page);
  }

  /**
   * Takes the answer to a pass's call: the records to load, the state to commit with them, and
   * whether the pass goes on (it is then moved to its next page).
   */
  async takeAnswer(
    pass: Pass,
    args: Record<string, unknown>,
    response: PageAnswer,
    answers: PaidAnswer[],
  ): Promise<TakenAnswer> {
    const { partition, saved, page } = pass;
    const read = await this.readPastCap(partition, args, this.recordsIn(response, partition), answers);
    const { fresh, reachedKnown, newest } = this.stream.incremental.read(
      read.records,
      saved.newest,
      partition,
      this.ctx.fullRefresh,
    );
    pass.reachedStop ||= reachedKnown;
    const passNewest = laterIso(page.newest, newest);
    const more = reachedKnown && !this.ctx.fullRefresh ? undefined : this.stream.paginator.next(response, page);
    const atLimit = more !== undefined && pass.limit !== undefined && pass.pagesRead >= pass.limit;
    // Cut at max_pages short of the stopping point, the pass stays pending: completing it would
    // move the stopping point past the items not read yet, and no later pass would read them.
    const next = atLimit && pass.reachedStop ? undefined : more;
    const state: PartitionState = next
      ? { ...saved, pending: { ...next, newest: passNewest }, error: undefined }
      : endOfPass(
          saved,
          passNewest,
          partition,
          read,
          firstAnswerAt(answers, this.ctx.now()),
          this.windowAsked(saved, args),
        );
    const shaped = this.shaper.shape(partition.values, fresh);
    if (next && atLimit) this.cutAtMaxPages++;
    if (!next || atLimit) return { shaped, state, more: false };
    pass.page = { ...next, newest: passNewest };
    pass.pagesRead++;
    return { shaped, state, more: true };
  }

  /**
   * Marks a partition failed in its state, keeping where its pass stood (pages already loaded are
   * not asked for again), so the run can go on. A resumed page the service refuses (an expired
   * pagination token) restarts the pass next time instead of failing forever.
   */
  async recordFailure(partition: Partition, error: Error): Promise<void> {
    this.outcome.failed++;
    const message = `${partition.key}: ${error.message}`;
    noteError(this.outcome, message);
    this.ctx.reporter.notice(this.stream.name, message);
    const { pending, ...rest } = this.current.get(partition.key) ?? {};
    const type = errorType(error);
    // Buffered (replace-mode) pages were never written, so their place in the pass must not be kept.
    const keepPending = !this.buffer && type !== 'invalid_request' && type !== UNPROCESSABLE;
    const state: PartitionState = {
      ...rest,
      ...(keepPending && pending ? { pending } : {}),
      // A target the service cannot process was billed: it waits for refresh_after like a done one.
      ...(type === UNPROCESSABLE ? { completed_at: this.ctx.now().toISOString() } : {}),
      error: error.message,
    };
    try {
      await this.writer.inUnit([], (unit) => unit.saveState([stateRow(this.stream.name, partition.key, state)]));
    } catch (writeError) {
      noteError(this.outcome, `${partition.key}: its failure could not be recorded: ${(writeError as Error).message}`);
    }
  }

  async commitRound(taken: readonly RoundAnswer[], batch: BatchRow): Promise<void> {
    const counts = await this.writer.inUnit(
      taken.map((t) => t.taken.shaped),
      async (unit) => {
        await unit.saveState(taken.map((t) => stateRow(this.stream.name, t.partition.key, t.taken.state)));
        await unit.saveBatches([batch]);
        await this.journal.drop(
          unit,
          taken.flatMap((t) => t.answers.map((a) => a.key)),
        );
      },
    );
    addLoad(this.outcome, counts);
    for (const t of taken) this.current.set(t.partition.key, t.taken.state);
  }

  async saveBatch(batch: BatchRow): Promise<void> {
    await this.writer.inUnit([], (unit) => unit.saveBatches([batch]));
  }

  /** Writes everything buffered by a replace-mode stream in one unit. */
  async flushBuffered(buffer: PageBuffer): Promise<void> {
    await this.writeUnit(buffer.groups, buffer.states, buffer.answers);
  }

  /** Which window `args` ask: every record (a full refresh), a held window again, or what is new since the last pass. */
  private windowAsked(saved: PartitionState, args: Record<string, unknown>): WindowAsked {
    if (this.ctx.fullRefresh) return 'all';
    return this.stream.cap.reopens(saved.held, args) ? 'held' : 'new';
  }

  private recordsIn(response: unknown, partition: Partition): unknown[] {
    return this.stream.requester.recordsOf(response, partition);
  }

  /** An answer cut at the service's cap: read its window again in pieces, or hold the window (`cap` of the stream). */
  private readPastCap(
    partition: Partition,
    args: Record<string, unknown>,
    records: unknown[],
    answers: PaidAnswer[],
  ): Promise<CapRead> {
    return this.stream.cap.read(partition, args, records, {
      // A cut answer needs the user's action (a larger cap): said now, and again under Problems in the summary.
      notice: (message) => {
        this.ctx.reporter.notice(this.stream.name, message);
        noteError(this.outcome, message);
      },
      read: async (pieceArgs) => this.recordsIn(await this.fetch(partition, pieceArgs, answers), partition),
    });
  }

  /** One call through the answer journal; its answer is added to `answers` (the page's, dropped as it loads). */
  private async fetch(
    partition: Partition,
    args: Record<string, unknown>,
    answers: PaidAnswer[],
    asks?: Record<string, unknown>,
  ): Promise<PageAnswer> {
    const request = this.stream.requester.requestOf(partition, args);
    const worst = costOfCall(this.ctx.costs, this.stream.cost, request.path, args).worst;
    const call = {
      name: `${request.method} ${request.path}`,
      partition: partition.key,
      args,
      worst,
      ...(asks ? { asks } : {}),
      values: partition.values,
    };
    const answer = await this.journal.call(call, () => this.ctx.client.request(request));
    answers.push(answer);
    return answer.response as PageAnswer;
  }

  private async commit(
    partition: Partition,
    shaped: ShapedRecords,
    state: PartitionState,
    answers: readonly PaidAnswer[],
  ): Promise<void> {
    const row = stateRow(this.stream.name, partition.key, state);
    const keys = answers.map((a) => a.key);
    if (this.buffer) {
      this.buffer.groups.push(shaped);
      this.buffer.states.push(row);
      this.buffer.answers.push(...keys);
      return;
    }
    await this.writeUnit([shaped], [row], keys);
    this.current.set(partition.key, state);
  }

  private async writeUnit(
    groups: ShapedRecords[],
    states: StateRow[],
    answers: readonly (string | undefined)[],
  ): Promise<void> {
    const counts = await this.writer.inUnit(groups, async (unit) => {
      await unit.saveState(states);
      await this.journal.drop(unit, answers);
      crashPoint('mid-page');
    });
    addLoad(this.outcome, counts);
  }
}

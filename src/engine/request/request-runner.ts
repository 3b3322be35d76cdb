import PQueue from 'p-queue';
import type { Partition } from '../../manifest/components/partitions.js';
import type { CompiledRequestStream } from '../../manifest/compile-stream.js';
import { TableShaper } from '../../normalize/table-shaper.js';
import { StreamDefinitionError } from '../engine-errors.js';
import { budgetStopOf, stopForBudget, type BudgetStop } from '../books/budget-stop.js';
import { DestinationLostError, isDestinationLost, RunStoppedError } from '../engine-errors.js';
import { AnswerJournal } from '../books/answer-journal.js';
import { PageRounds } from './page-rounds.js';
import { LoadsBehind } from './loads-behind.js';
import { PartitionRunner } from './partition-runner.js';
import {
  addCharge,
  emptyOutcome,
  runScope,
  noteError,
  noteStoppedOnRequest,
  streamWriter,
  type StreamContext,
  type StreamOutcome,
} from '../stream-context.js';
import { journaledDue, RequestPartitions, type DuePartition } from './request-plan.js';

/** Runs a request stream: per partition, page by page, each page committed with its state. */
export async function runRequestStream(
  stream: CompiledRequestStream,
  ctx: StreamContext,
  outcome = emptyOutcome(stream.name),
): Promise<StreamOutcome> {
  const partitions = await RequestPartitions.open(stream, ctx);
  try {
    return await runOver(partitions, stream, ctx, outcome);
  } finally {
    await partitions.close();
  }
}

async function runOver(
  partitions: RequestPartitions,
  stream: CompiledRequestStream,
  ctx: StreamContext,
  outcome: StreamOutcome,
): Promise<StreamOutcome> {
  // Rounds an earlier run left open were paid for: their pages load first, so the partitions they finish are fresh now.
  // Until they are done no other page is asked: it could be one of theirs, bought again.
  const unfinished = await resumeOpenRounds(partitions, stream, ctx, outcome).then(
    () => undefined,
    async (error: Error) =>
      error instanceof RunStoppedError
        ? error
        : ctx.stop?.aborted
          ? new RunStoppedError()
          : ((await budgetStopOf(error, ctx)) ?? Promise.reject(error)),
  );
  if (unfinished instanceof RunStoppedError) {
    noteStoppedOnRequest(outcome, unfinished);
    outcome.status = 'partial';
    return outcome;
  }
  if (unfinished) {
    stopForBudget(ctx, outcome, unfinished);
    outcome.status = 'partial';
    return outcome;
  }
  const plan = await partitions.plan();
  outcome.skipped = plan.partitions - plan.todo;
  outcome.worstCaseCredits = plan.cost.worst;
  outcome.estimatedCredits = plan.cost.expected;
  ctx.reporter.streamStarted(stream.name, plan.todo);

  const shaper = new TableShaper(stream.table, runScope(ctx));
  const writer = streamWriter(ctx, stream.name);
  // Replace-mode tables swap in whole: their pages are gathered and written in one unit at the end.
  const buffer =
    plan.first && shaper.definitionFor(plan.first.values).writeMode === 'replace'
      ? { groups: [], states: [], answers: [] }
      : undefined;
  if (buffer && plan.cost.worst > 0) {
    throw new StreamDefinitionError(
      `stream "${stream.name}" writes its table in replace mode (whole, once every page is read) but its call costs credits: ` +
        'a budget stop or a 402 part-way would drop pages already paid for. Use write_mode merge or append for a priced call.',
    );
  }
  const journal = await AnswerJournal.open(stream.name, ctx, writer, (charge) => addCharge(outcome, charge));
  const runner = new PartitionRunner(stream, ctx, shaper, writer, outcome, journal, buffer);
  const rounds = stream.pagesAsBatchItems ? new PageRounds(stream, ctx, runner, outcome) : undefined;

  const queue = new PQueue({ concurrency: ctx.concurrency });
  let done = 0;
  let budgetStop: BudgetStop | RunStoppedError | undefined;
  const stopOf = async (error: unknown) =>
    error instanceof RunStoppedError
      ? error
      : ctx.stop?.aborted
        ? new RunStoppedError()
        : await budgetStopOf(error, ctx);
  // The destination went away: no partition is started after it (its answer could not be saved), and the stream fails.
  let lost: DestinationLostError | undefined;
  const failed = async (partition: Partition, error: unknown) => {
    // A stop request aborts calls in flight: whatever they threw, the partition is stopped, not failed.
    const stop = await stopOf(error);
    if (stop) budgetStop ??= stop;
    else if (isDestinationLost(error)) lost ??= destinationLost(ctx, error);
    else await runner.recordFailure(partition, error as Error);
  };
  const settled = (partition: Partition) => {
    runner.forget(partition.key);
    ctx.reporter.streamProgress(stream.name, { done: ++done, credits: outcome.credits });
  };
  const behind = new LoadsBehind(ctx.concurrency);
  const runAlone = async (partition: Partition) => {
    if (budgetStop || lost) return runner.forget(partition.key);
    if (ctx.stop?.aborted) budgetStop = new RunStoppedError();
    if (budgetStop) return runner.forget(partition.key);
    let lastLoad: Promise<void>;
    try {
      ({ lastLoad } = await runner.run(partition));
    } catch (error) {
      await failed(partition, error);
      return settled(partition);
    }
    // Its last answer is journaled: the partition's slot goes to the next call while that page loads.
    await behind.add(lastLoad.catch((error: unknown) => failed(partition, error)).finally(() => settled(partition)));
  };
  const runChunk = async (chunk: readonly DuePartition[]) => {
    runner.track(chunk);
    const inRounds = rounds ? chunk.filter((due) => rounds.batchable(due.partition)).map((due) => due.partition) : [];
    // A set, not inRounds.includes: at 100k partitions the list scan per partition was 10^10 comparisons.
    const inRoundKeys = new Set(inRounds.map((p) => p.key));
    for (const { partition } of chunk) if (!inRoundKeys.has(partition.key)) void queue.add(() => runAlone(partition));
    if (rounds && inRounds.length > 0) {
      await rounds.run(inRounds).catch(async (error: Error) => {
        const stop = await stopOf(error);
        if (stop) budgetStop ??= stop;
        else if (isDestinationLost(error)) lost ??= destinationLost(ctx, error);
        else {
          outcome.failed += 1;
          noteError(outcome, `a batch round failed: ${error.message}`);
        }
      });
      for (const key of inRoundKeys) runner.forget(key);
    }
    await queue.onSizeLessThan(ctx.concurrency);
  };
  // The partitions due come a chunk at a time, each when the queue has room: only those in flight are held.
  try {
    for await (const chunk of partitions.due(plan)) {
      if (ctx.stop?.aborted) budgetStop ??= new RunStoppedError();
      if (budgetStop || lost) break;
      await runChunk(chunk);
    }
    if (ctx.stop?.aborted) budgetStop ??= new RunStoppedError();
  } catch (error) {
    // A chunk that could not be read (its states, a seed file) ends the stream, once the calls under way have ended.
    budgetStop ??= new RunStoppedError();
    await queue.onIdle();
    await behind.drain();
    throw error;
  }
  await queue.onIdle();
  await behind.drain();
  // Answers an earlier run paid for and never loaded, of partitions this run did not make (a fresh store, its parent
  // table empty): their partitions run now and take them from the journal (docs/airbyte.md#checkpoints).
  if (!budgetStop && !lost) {
    const journaled = await journaledDue(journal.unaskedPartitions(), stream, ctx);
    runner.track(journaled);
    for (const { partition } of journaled) void queue.add(() => runAlone(partition));
    await queue.onIdle();
  }
  await behind.drain();
  if (lost) throw lost;
  if (buffer && !budgetStop && outcome.failed === 0) await runner.flushBuffered(buffer);
  if (outcome.failed > 0) outcome.status = outcome.failed === plan.todo && outcome.records === 0 ? 'failed' : 'partial';
  if (runner.cutAtMaxPages > 0) {
    if (outcome.status === 'succeeded') outcome.status = 'partial';
    const message = `${runner.cutAtMaxPages} partition(s) stopped at max_pages with more new items to read; the next run goes on from there (a larger max_pages catches up sooner)`;
    noteError(outcome, message);
    ctx.reporter.notice(stream.name, message);
  }
  if (budgetStop instanceof RunStoppedError) {
    outcome.status = 'partial';
    noteStoppedOnRequest(outcome, budgetStop);
  } else if (budgetStop) stopForBudget(ctx, outcome, budgetStop);
  return outcome;
}

/** Loads the batch rounds (see `PageRounds`) an earlier run of this stream left open. */
async function resumeOpenRounds(
  partitions: RequestPartitions,
  stream: CompiledRequestStream,
  ctx: StreamContext,
  outcome: StreamOutcome,
): Promise<void> {
  if (
    ctx.resumeOnly ||
    !(await ctx.destination.readBatches(stream.name)).some((b) => b.status === 'intent' || b.status === 'submitted')
  )
    return;
  const shaper = new TableShaper(stream.table, runScope(ctx));
  const writer = streamWriter(ctx, stream.name);
  const journal = await AnswerJournal.open(stream.name, ctx, writer, (charge) => addCharge(outcome, charge));
  const runner = new PartitionRunner(stream, ctx, shaper, writer, outcome, journal);
  const rounds = new PageRounds(stream, ctx, runner, outcome);
  const open = await partitions.find(await rounds.openKeys());
  runner.track(open);
  await rounds.resumeOpen(open.map((due) => due.partition));
}

/** Tells the run its destination went away; the stream stops with the error. */
function destinationLost(ctx: StreamContext, error: unknown): DestinationLostError {
  ctx.destinationLost?.(error);
  return error instanceof DestinationLostError ? error : new DestinationLostError(error);
}

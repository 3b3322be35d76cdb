import PQueue from 'p-queue';
import { refreshSaving } from '../books/refresh-saving.js';
import type { BatchRow } from '../../destinations/destination.js';
import type { CompiledBatchStream } from '../../manifest/compile-stream.js';
import { BatchRunner } from './batch-runner.js';
import type { BatchCosts } from './batch-costs.js';
import { ANY_TABLE, partitionsToCome, timesRows } from '../partitions/rows-to-come.js';
import { stopForBudget } from '../books/budget-stop.js';
import { RunStoppedError } from '../engine-errors.js';
import { readOpenBatches } from '../books/ledger-pages.js';
import type { Partition } from '../../manifest/components/partitions.js';
import type { SeedScan } from './seed-scan.js';
import { ownsBatch, resumable, withJobSlot } from '../fleet/item-scope.js';
import { emptyOutcome, type StreamContext, type StreamOutcome, type StreamPlan } from '../stream-context.js';

/**
 * Runs a batch stream: chunks stale seeds into jobs of at most `chunkSize` items; records each
 * intent (key, body hash, body) before the POST and the job id after it; reads results page by
 * page, each page committed with the seed ledger and the results cursor. A restarted run
 * re-attaches to recorded jobs and resubmits unanswered intents with the same Idempotency-Key.
 */
export async function runBatchStream(
  stream: CompiledBatchStream,
  ctx: StreamContext,
  outcome = emptyOutcome(stream.name),
): Promise<StreamOutcome> {
  const runner = new BatchRunner(stream, ctx, outcome);
  // Answers of single retries an earlier run paid for and did not load load first: their seeds are then fresh.
  if (!ctx.resumeOnly) await runner.loadJournaled();
  const open = await openBatches(ctx, stream.name);
  // Batches of an earlier run are finished first. Unsent intents cost this run: leave room for
  // them. Submitted jobs were paid by the run that submitted them (it kept their worst case on
  // record until it ended), so this run neither holds room for them nor counts them again.
  const held = unsentCredits(
    runner,
    open.filter((b) => resumable(ctx, b)),
  );
  if (!ctx.resumeOnly) await runner.applyTriggers();
  const scan = ctx.resumeOnly ? undefined : await runner.scanSeeds();
  try {
    return await runScanned(stream, ctx, outcome, { runner, open, held, scan });
  } finally {
    await scan?.close();
  }
}

/** The rest of `runBatchStream`, once its seeds' scan is open (none when it only resumes jobs). */
async function runScanned(
  stream: CompiledBatchStream,
  ctx: StreamContext,
  outcome: StreamOutcome,
  opened: { runner: BatchRunner; open: BatchRow[]; held: number; scan: SeedScan | undefined },
): Promise<StreamOutcome> {
  const { runner, open, held, scan } = opened;
  const plan = scan ? await runner.planSeeds(scan, open, ctx.budget.remaining - held) : undefined;
  outcome.worstCaseCredits = runner.costs.costOfPlan(plan, 'worst') + runner.costs.retriesOfOpen(open);
  outcome.estimatedCredits = runner.costs.costOfPlan(plan, 'expected');
  if (plan?.cut.deferred)
    stopForBudget(ctx, outcome, ctx.budget.stopError(plan.cut.firstDeferredWorst, plan.cut.deferred, held));
  ctx.reporter.streamStarted(stream.name, (plan?.cut.taken ?? 0) + open.reduce((n, b) => n + b.itemCount, 0));

  // A stop leaves unstarted chunks for the next run; jobs already submitted are re-attached then.
  const queue = new PQueue({ concurrency: jobSlots(ctx) });
  const enqueue = (chunkSeeds: Partition[], chunkJob: (seeds: Partition[]) => Promise<void>) => {
    // p-queue keeps finished tasks referenced until its queue compacts (up to ~100 of them): a task lets go of its
    // chunk when it starts, or a million seeds' chunks pile up behind those references.
    let task: { seeds: Partition[]; job: (seeds: Partition[]) => Promise<void> } | null = {
      seeds: chunkSeeds,
      job: chunkJob,
    };
    void queue.add(() => {
      const { seeds, job } = task!;
      task = null;
      // A 429 re-reads the account: follow a changed concurrent_batch_jobs from the next job on.
      queue.concurrency = jobSlots(ctx);
      const run = () =>
        withJobSlot(ctx, async () => {
          await runner.hold(seeds.map((p) => p.key));
          await job(seeds);
        });
      return (ctx.stop?.aborted ? Promise.reject(new RunStoppedError()) : run())
        .catch((error: Error) => runner.chunkFailed(error, seeds))
        .finally(() => runner.release(seeds.map((p) => p.key)));
    });
  };
  try {
    // A re-attached batch stopped early defers none of its seeds: its row stays open, so the next run
    // reads the job from its cursor (or resends the intent with its key). Deferring them would set
    // the seeds an earlier run already loaded `pending`, behind a cursor that never reads them again.
    // A job recorded with another of the fleet's keys waits for that key; its seeds are not asked again meanwhile.
    for (const batch of open) if (resumable(ctx, batch)) enqueue([], () => runner.resume(batch));
    if (scan && plan) {
      // Chunks are made as job slots free up, so only the chunks in flight are held, whatever the list's length.
      for await (const seeds of runner.selectSeeds(scan, plan, spreadChunkSize(plan.cut.taken, ctx.batch))) {
        enqueue(seeds, (taken) => runner.submitAndRead(taken));
        await queue.onSizeLessThan(jobSlots(ctx));
      }
    }
    await queue.onIdle();
    if (ctx.resumeOnly) {
      runner.settleStatus();
      return outcome;
    }
    // Jobs the service no longer knows (expired, or an embedded sandbox that restarted) lost their
    // results: their seeds are fetched again, within the budget.
    for (const seeds of chunk(runner.withinBudget(await runner.orphanedSeeds()), ctx.batch.chunkSize))
      enqueue(seeds, (taken) => runner.submitAndRead(taken));
    await queue.onIdle();
    await runner.retryTransientFailures();
    await runner.recordDeferred();
    runner.settleStatus();
    return outcome;
  } catch (error) {
    // Jobs under way still commit units: the stream ends (and its tables settle) once they are done.
    queue.clear();
    await queue.onIdle();
    throw error;
  }
}

/**
 * What a batch stream would do now, without calling the service: seeds to fetch, submissions and
 * their credits. `upstream` are the plans of the streams before it in the run: a stream whose
 * items are rows of their tables counts an item for every row they may load, at most.
 */
export async function planBatchStream(
  stream: CompiledBatchStream,
  ctx: StreamContext,
  upstream: readonly StreamPlan[] = [],
): Promise<StreamPlan> {
  const runner = new BatchRunner(stream, ctx, emptyOutcome(stream.name));
  const open = await openBatches(ctx, stream.name);
  const scan = await runner.scanSeeds();
  const plan = await runner.planSeeds(scan, open, Infinity).finally(() => scan.close());
  const toCome = itemsToCome(stream, runner.costs, ctx, upstream);
  const resumed = open.reduce((n, b) => n + b.itemCount, 0);
  const unsent = unsentCredits(runner, open);
  const items = plan.todo + Math.ceil(toCome.expectedItems);
  const chunks = items === 0 ? 0 : Math.ceil(items / spreadChunkSize(items, ctx.batch));
  return {
    stream: stream.name,
    units: plan.todo + toCome.items,
    resumed,
    skipped: plan.skipped,
    ...(stream.changeRefresh && plan.watched !== undefined
      ? {
          dueByChange: plan.byChange,
          refreshSaving: await refreshSaving(
            ctx.destination,
            stream.name,
            plan.watched,
            stream.refreshAfterMs,
            plan.perSeed,
            ctx.now(),
          ),
        }
      : {}),
    calls: chunks + open.length,
    worstCaseCredits: runner.costs.costOfPlan(plan, 'worst') + unsent + runner.costs.retriesOfOpen(open) + toCome.worst,
    estimatedCredits: runner.costs.costOfPlan(plan, 'expected') + unsent + Math.ceil(toCome.expected),
    next: plan.next,
    // Items failed for a passing reason are retried alone, as billed single calls.
    maxCallCredits: runner.costs.retriesAlone() ? Math.max(plan.maxWorst, toCome.perItem) : 0,
    // One record an item: what bounds the partitions of a stream reading this table (any table, when its name reads the seed).
    rows: {
      [stream.table.fixedName ?? ANY_TABLE]: {
        worst: plan.todo + resumed + toCome.items,
        expected: plan.todo + resumed + toCome.expectedItems,
      },
    },
  };
}

/** Items of parent rows the streams before this one may load in this run (none for a stream of seed lists). */
function itemsToCome(
  stream: CompiledBatchStream,
  costs: BatchCosts,
  ctx: StreamContext,
  upstream: readonly StreamPlan[],
) {
  const toCome = { items: 0, expectedItems: 0, worst: 0, expected: 0, perItem: 0 };
  for (const { parentRows, partitions } of partitionsToCome(stream.partitions.parents, ctx, upstream)) {
    for (const partition of partitions) {
      const cost = costs.costOfSeed(partition);
      toCome.items += parentRows.worst;
      toCome.expectedItems += parentRows.expected;
      toCome.worst += timesRows(parentRows.worst, costs.withRetries(cost.worst));
      toCome.expected += parentRows.expected * cost.expected;
      toCome.perItem = Math.max(toCome.perItem, cost.worst);
    }
  }
  return toCome;
}

/** Batch jobs the account may run at once, as last read from GET /v1/account. */
function jobSlots(ctx: StreamContext): number {
  return Math.max(1, ctx.client.account?.rate_limit?.concurrent_batch_jobs ?? ctx.batch.concurrentJobs);
}

/** Worst case of the recorded intents never sent: the only part of earlier runs' batches still to be paid (by this run). */
function unsentCredits(runner: BatchRunner, open: readonly BatchRow[]): number {
  return open.filter((b) => b.status === 'intent').reduce((n, b) => n + runner.costs.worstOfBatch(b), 0);
}

async function openBatches(ctx: StreamContext, stream: string): Promise<BatchRow[]> {
  const open = await readOpenBatches(ctx.destination, stream);
  // Resume-only reads jobs already submitted (the named ones, when named) and never sends an unsent intent: that would spend.
  const owned = open.filter((b) => ownsBatch(ctx, b, (ref) => ref));
  return ctx.resumeOnly
    ? owned.filter((b) => b.status === 'submitted' && b.jobId && (!ctx.resumeJobs || ctx.resumeJobs.includes(b.jobId)))
    : owned;
}

/** Submission is free, so seeds are spread over every job slot the account allows: five jobs of 200 resolve about five times sooner than one of 1,000. */
function spreadChunkSize(seeds: number, batch: StreamContext['batch']): number {
  return Math.min(batch.chunkSize, Math.max(1, Math.ceil(seeds / Math.max(1, batch.concurrentJobs))));
}

function chunk<T>(items: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}

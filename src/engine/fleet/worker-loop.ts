import type { SeedlineConfig } from '../../config/config-schema.js';
import type { Destination } from '../../destinations/destination.js';
import type { FleetStore, RoundRow, RoundSpec, WorkItem, WorkItemSpec } from '../../destinations/fleet-store.js';
import type { CompiledStream, ManifestsByName } from '../../manifest/compile-stream.js';
import { runId as newRunId } from '../../util/run-id.js';
import { sleep } from '../../util/sleep.js';
import { budgetLimits } from '../books/run-limits.js';
import type { CostModel } from '../books/cost-model.js';
import { RunStoppedError } from '../engine-errors.js';
import { planSync, prepareSync, runSync, selectStreams, type RunResult } from '../pipeline.js';
import type { ServiceClient } from '../service-calls.js';
import type { Reporter } from '../stream-context.js';

/** What a worker works with and how. */
export interface WorkerOptions {
  /** This worker's id in `_seedline_workers` (unique in the fleet). */
  workerId: string;
  /** A fingerprint of the API key it calls with (never the key). */
  keyId: string;
  host: string;
  config: SeedlineConfig;
  baseDir: string;
  manifests: ManifestsByName;
  /** The Postgres destination, locked in shared mode. */
  destination: Destination;
  fleet: FleetStore;
  client: ServiceClient;
  costs: CostModel;
  reporter: Reporter;
  /** `credits_remaining` when the worker connected, for `budget.keep_balance` of a round it opens. */
  balance: number | undefined;
  /** Batch jobs the key may run at once (GET /v1/account), shared by the fleet. */
  jobSlots: number;
  /** How long a lease lasts without a heartbeat (the worker renews it every third of that). */
  leaseMs: number;
  /** Parts each stream of seeds or parent rows is cut into, so workers share it. */
  shards: number;
  /** Exit once no round is open and the round this worker joined is done (for cron and orchestrators). */
  untilIdle: boolean;
  /** A new round opens at most this often; and how often an idle worker looks for one. */
  roundEveryMs: number;
  /** How often a worker waiting for items held by others looks again. */
  claimPollMs: number;
  /** Aborted to stop: the item under way stops after its page commits and is left due for another worker. */
  stop: AbortSignal;
  /** Told of each item's run once it ended (metrics). Default: none. */
  onRun?: (result: RunResult, item: WorkItem, keyId: string) => void;
}

/** What a worker did before it exited. */
export interface WorkerSummary {
  items: number;
  credits: number;
  runs: RunResult[];
}

/**
 * A worker of the fleet: takes the items of the open round one at a time, each a shard of a
 * stream run as a sync of its own (its run in `_seedline_runs`), under the credits the round
 * grants it, the key's shared request window and batch job slots. Its leases are renewed while it
 * works; if it dies they run out and another worker takes its item over, re-attaching to the jobs
 * it recorded (their Idempotency-Keys) and loading the answers it journaled. See docs/workers.md.
 */
export async function runWorker(options: WorkerOptions): Promise<WorkerSummary> {
  const { fleet, workerId } = options;
  await fleet.ensureTables();
  await fleet.registerWorker({ workerId, host: options.host, pid: process.pid, keyId: options.keyId });
  const keeper = new LeaseKeeper(options);
  const summary: WorkerSummary = { items: 0, credits: 0, runs: [] };
  let joined = false;
  try {
    while (!options.stop.aborted) {
      const round = await currentRound(options, joined);
      if (round === 'exit') break;
      if (round === null) {
        await sleep(options.roundEveryMs, options.stop);
        continue;
      }
      joined = true;
      const item = await fleet.claim(round.roundId, workerId, options.leaseMs);
      if (item === 'idle') continue;
      if (item === 'waiting') {
        await sleep(options.claimPollMs, options.stop);
        continue;
      }
      const result = await keeper.working(item, (stop) => runItem(options, item, stop));
      summary.items++;
      if (result) {
        options.onRun?.(result, item, options.keyId);
        summary.runs.push(result);
        summary.credits += result.credits;
      }
    }
  } finally {
    keeper.close();
    await fleet.stopWorker(workerId).catch(() => undefined);
  }
  return summary;
}

/** The open round; else one this worker opens (at once when it has joined none yet); null: wait; `exit`: done. */
async function currentRound(options: WorkerOptions, joined: boolean): Promise<RoundRow | null | 'exit'> {
  const open = await options.fleet.openRoundNow();
  if (open) return open;
  if (options.untilIdle && joined) return 'exit';
  const round = await options.fleet.openRound(await roundSpec(options), {
    minGapMs: joined ? options.roundEveryMs : 0,
  });
  return round ?? (options.untilIdle ? 'exit' : null);
}

/**
 * A new round: every configured stream, dependencies first, each a phase; a stream of seeds or
 * parent rows cut into `shards` items, any other one item. Its credit limit is the least of the
 * run budget, what the month has left and the balance above `keep_balance`.
 */
export async function roundSpec(
  options: Pick<WorkerOptions, 'config' | 'manifests' | 'destination' | 'balance' | 'shards'>,
): Promise<RoundSpec> {
  const streams = selectStreams({ config: options.config, manifests: options.manifests });
  const items: WorkItemSpec[] = streams.flatMap((stream, phase) => {
    const shards = shareable(stream) ? Math.max(1, options.shards) : 1;
    return Array.from({ length: shards }, (_, shard) => ({
      item: `${stream.name}#${shard + 1}/${shards}`,
      stream: stream.name,
      phase,
      shard,
      shards,
    }));
  });
  const limits = await budgetLimits(options, options.balance);
  const creditLimit = Math.min(limits.perRun ?? Infinity, limits.monthLeft ?? Infinity, limits.balanceLeft ?? Infinity);
  return {
    roundId: newRunId('round'),
    creditLimit: Math.max(0, Math.min(creditLimit, Number.MAX_SAFE_INTEGER)),
    items,
  };
}

/** Streams whose partitions come from seed lists or parent rows: enough of them to share out. */
function shareable(stream: CompiledStream): boolean {
  return stream.partitions.parents.length > 0 || stream.partitions.origins.some((o) => o.seeds !== undefined);
}

/**
 * Runs one item: plans its shard (no call) for its worst case, takes a grant of the round's
 * credits for it, and syncs the shard within that grant. Its end is recorded with what it spent;
 * a run stopped on request leaves the item due again.
 */
async function runItem(options: WorkerOptions, item: WorkItem, stop: AbortSignal): Promise<RunResult | undefined> {
  const { fleet, workerId } = options;
  if (item.takenOverRun) await markTakenOver(options.destination, item.takenOverRun);
  const prepared = await prepareSync({
    config: options.config,
    baseDir: options.baseDir,
    manifests: options.manifests,
    destination: options.destination,
    only: [item.stream],
    shard: { index: item.shard, of: item.shards },
    scheduleGroup: `worker ${item.roundId}`,
  });
  const [plan] = await planSync(prepared, options.costs);
  const runId = newRunId('run');
  const granted = await fleet.grant(item.roundId, item.item, workerId, plan?.worstCaseCredits ?? 0, runId);
  let result: RunResult | undefined;
  try {
    result = await runSync(prepared, {
      client: options.client,
      reporter: options.reporter,
      runId,
      limits: { perRun: granted },
      concurrentBatchJobs: options.jobSlots,
      costs: options.costs,
      stop,
      jobSlot: () => takeJobSlot(options),
    });
  } catch (error) {
    await fleet.finish(item.roundId, item.item, workerId, {
      status: stop.aborted ? 'due' : 'failed',
      runId,
      spent: granted,
      error: (error as Error).message,
    });
    if (!stop.aborted) options.reporter.notice(item.item, `failed: ${(error as Error).message}`);
    return undefined;
  }
  const { books } = result;
  await fleet.finish(item.roundId, item.item, workerId, {
    status: result.status === 'stopped' ? 'due' : result.status === 'failed' ? 'failed' : 'done',
    runId,
    spent: Math.max(0, books.billed - books.earlierBilled) + books.atRisk,
    error: result.streams.flatMap((s) => s.errors).join('\n') || null,
  });
  return result;
}

/** Holds one of the key's batch job slots, waiting while the fleet holds them all. */
async function takeJobSlot(options: WorkerOptions): Promise<() => Promise<void>> {
  for (;;) {
    if (options.stop.aborted) throw new RunStoppedError();
    const slot = await options.fleet.takeJobSlot(options.keyId, options.workerId, options.jobSlots, options.leaseMs);
    if (slot !== null) return () => options.fleet.releaseJobSlot(options.keyId, slot, options.workerId);
    await sleep(options.claimPollMs, options.stop);
  }
}

/** The run of a worker whose lease ran out is recorded `interrupted`: its work goes on in this one. */
async function markTakenOver(destination: Destination, runId: string): Promise<void> {
  const run = (await destination.readRuns(1000, 'running')).find((r) => r.runId === runId);
  if (run)
    await destination.saveRun({
      ...run,
      status: 'interrupted',
      error: 'its worker stopped renewing its lease; another worker took its item over and resumed its work',
    });
}

/**
 * Renews the worker's leases every third of their length while it lives, and stops the item
 * under way once another worker holds it (its lease ran out: a pause, a lost connection).
 */
class LeaseKeeper {
  private readonly timer: ReturnType<typeof setInterval>;
  private current: { item: WorkItem; stop: AbortController } | undefined;

  constructor(private readonly options: WorkerOptions) {
    this.timer = setInterval(() => void this.beat(), Math.max(50, Math.floor(options.leaseMs / 3)));
  }

  /** Runs `work` on `item` with a stop signal that aborts on the worker's stop or the item's loss. */
  async working<T>(item: WorkItem, work: (stop: AbortSignal) => Promise<T>): Promise<T> {
    const stop = new AbortController();
    const forward = () => stop.abort(new RunStoppedError());
    this.options.stop.addEventListener('abort', forward, { once: true });
    this.current = { item, stop };
    try {
      return await work(stop.signal);
    } finally {
      this.current = undefined;
      this.options.stop.removeEventListener('abort', forward);
    }
  }

  close(): void {
    clearInterval(this.timer);
  }

  private async beat(): Promise<void> {
    const { fleet, workerId, leaseMs, reporter } = this.options;
    try {
      await fleet.heartbeat(workerId, leaseMs);
      const current = this.current;
      if (current && !(await fleet.holds(current.item.roundId, current.item.item, workerId))) {
        reporter.notice(
          current.item.item,
          'another worker took this item over (this worker missed its lease): stopping it',
        );
        current.stop.abort(new RunStoppedError());
      }
    } catch (error) {
      reporter.notice('worker', `heartbeat failed (${(error as Error).message}); trying again`);
    }
  }
}

import type { RoundRow, WorkItem } from '../../destinations/fleet-store.js';
import { sleep } from '../../util/sleep.js';
import { RunStoppedError } from '../engine-errors.js';
import type { RunResult } from '../pipeline.js';
import { runItem } from './item-run.js';
import { roundSpec } from './round-spec.js';
import type { WorkerOptions } from './worker-options.js';

export type { WorkerOptions } from './worker-options.js';

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
  await fleet.registerWorker({
    workerId,
    host: options.host,
    pid: process.pid,
    keyId: options.keys.map((key) => key.keyId).join(','),
  });
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
      const { result, key } = await keeper.working(item, (stop) => runItem(options, item, stop));
      summary.items++;
      if (result && key) {
        options.onRun?.(result, item, key.keyId);
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

import type { Destination } from '../../destinations/destination.js';
import type { ItemEnd, WorkItem } from '../../destinations/fleet-store.js';
import { runId as newRunId } from '../../util/run-id.js';
import { sleep } from '../../util/sleep.js';
import { RunStoppedError } from '../engine-errors.js';
import { planSync, prepareSync, runSync, type RunResult } from '../pipeline.js';
import type { WorkerOptions } from './worker-options.js';
import { grantToUsableKey, watchedClient, type WorkerKey } from './worker-key.js';

/** An item's run and the key it called with; no run when no key could take it. */
export interface ItemOutcome {
  result?: RunResult;
  key?: WorkerKey;
}

/**
 * Runs one item: plans its shard (no call) for its worst case, chooses a key with credits left,
 * takes a grant of the round's and the key's credits, and syncs the shard within it. Its end is
 * recorded with what it spent. A run stopped on request, or whose key was refused (401) or ran out
 * of credits (402), leaves the item due for another worker or key; that key takes no more items.
 */
export async function runItem(options: WorkerOptions, item: WorkItem, stop: AbortSignal): Promise<ItemOutcome> {
  const { fleet, workerId } = options;
  const finish = async (end: ItemEnd) => {
    if (!(await fleet.finish(item.roundId, item.item, workerId, end)))
      options.reporter.notice(
        item.item,
        'another worker took this item over (this worker missed its lease): what this run committed stays, the item is that worker’s',
      );
  };
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
  const chosen = await grantToUsableKey(fleet, item, options.keys, workerId, plan?.worstCaseCredits ?? 0, runId);
  if (!chosen) {
    const reason = 'no API key has credits left in this round (each was refused, or spent what it may)';
    await finish({ status: 'failed', runId: null, spent: 0, error: reason });
    options.reporter.notice(item.item, reason);
    return {};
  }
  const { key, granted } = chosen;
  const watched = watchedClient(key);
  try {
    const result = await runSync(prepared, {
      client: watched.client,
      reporter: options.reporter,
      runId,
      limits: { perRun: granted },
      concurrentBatchJobs: key.jobSlots,
      costs: options.costs,
      stop,
      jobSlot: () => takeJobSlot(options, key),
      apiKey: { keyId: key.keyId, primary: key.primary },
    });
    const refusal = watched.refusal();
    if (refusal) await fleet.refuseKey(item.roundId, key.keyId, refusal);
    const { books } = result;
    const errors = result.streams.flatMap((s) => s.errors);
    if (result.status === 'failed') options.reporter.notice(item.item, `failed: ${errors.join('; ')}`);
    await finish({
      status: refusal || result.status === 'stopped' ? 'due' : result.status === 'failed' ? 'failed' : 'done',
      runId,
      spent: Math.max(0, books.billed - books.earlierBilled) + books.atRisk,
      error: errors.join('\n') || null,
    });
    return { result, key };
  } catch (error) {
    const refusal = watched.refusal();
    if (refusal) await fleet.refuseKey(item.roundId, key.keyId, refusal);
    // What the run spent is not known here: its whole grant counts.
    await finish({
      status: stop.aborted || refusal ? 'due' : 'failed',
      runId,
      spent: granted,
      error: (error as Error).message,
    });
    if (!stop.aborted) options.reporter.notice(item.item, `failed: ${(error as Error).message}`);
    return { key };
  }
}

/** Holds one of the key's batch job slots, waiting while the fleet holds them all. */
async function takeJobSlot(options: WorkerOptions, key: WorkerKey): Promise<() => Promise<void>> {
  const { fleet, workerId } = options;
  for (;;) {
    if (options.stop.aborted) throw new RunStoppedError();
    const slot = await fleet.takeJobSlot(key.keyId, workerId, key.jobSlots, options.leaseMs);
    if (slot !== null) return () => fleet.releaseJobSlot(key.keyId, slot, workerId);
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

import type { BatchRow } from '../../destinations/destination.js';
import { itemsOf } from '../batch/job-books.js';
import type { StreamContext } from '../stream-context.js';

/** Whether a recorded batch belongs to this run's partitions (by its first item; `keyOf` reads a partition key from a ref). */
export function ownsBatch(ctx: StreamContext, batch: BatchRow, keyOf: (ref: string) => string): boolean {
  if (!ctx.owns) return true;
  const first = itemsOf(batch)[0];
  return first === undefined || ctx.owns(keyOf(first.ref));
}

/**
 * Whether this run may re-attach to (or send) a recorded batch: it was recorded with the key the
 * run calls with (a job belongs to one account; another key would not find it and buy it again).
 */
export function resumable(ctx: StreamContext, batch: BatchRow): boolean {
  if (!ctx.apiKey) return true;
  return batch.keyId ? batch.keyId === ctx.apiKey.keyId : ctx.apiKey.primary;
}

/** Runs `job` holding one of the account's shared batch job slots (see `StreamContext.jobSlot`). */
export async function withJobSlot<T>(ctx: StreamContext, job: () => Promise<T>): Promise<T> {
  const release = await ctx.jobSlot?.();
  try {
    return await job();
  } finally {
    await release?.();
  }
}

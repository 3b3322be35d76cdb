import type { BatchRow } from '../../destinations/destination.js';
import type { CompiledBatchStream } from '../../manifest/compile-stream.js';
import type { Cost } from '../books/cost-model.js';
import { itemsOf } from './job-books.js';
import type { Partition } from '../../manifest/components/partitions.js';
import type { SeedPlan } from './seed-plan.js';
import { costOfCall, itemParams } from '../service-calls.js';
import type { StreamContext } from '../stream-context.js';

/**
 * What the items of a batch stream cost: each seed's item (the stream's cost, or the service's own
 * for the single endpoint it stands for when higher), a plan's seeds, recorded batches, and the
 * single retries an item whose failure bills may need.
 */
export class BatchCosts {
  constructor(
    private readonly stream: CompiledBatchStream,
    private readonly ctx: StreamContext,
  ) {}

  /** Worst-case credits of one seed's item (what the service bills or reserves at submission). */
  worstOf(partition: Partition): number {
    return this.costOfSeed(partition).worst;
  }

  /**
   * Worst or expected credits of the seeds a plan counts. The worst case counts each single retry
   * `batch.retry_billed_failures` allows of an item whose failure is billed; the budget holds
   * room for those retries only when they happen (a retry that does not fit leaves its seed pending).
   */
  costOfPlan(plan: SeedPlan | undefined, which: 'worst' | 'expected'): number {
    const total = plan?.[which] ?? 0;
    return which === 'worst' ? this.withRetries(total) : total;
  }

  /** A worst case of items with the single retries of billed failures `batch.retry_billed_failures` allows. */
  withRetries(worst: number): number {
    return worst * (1 + this.billedRetries());
  }

  /** A seed's item cost. */
  costOfSeed(partition: Partition): Cost {
    return this.itemCost(this.paramsFor(partition));
  }

  /** An item's cost: the stream's, or the service's own for the single endpoint it stands for when higher. */
  itemCost(params: Record<string, unknown>): Cost {
    return costOfCall(this.ctx.costs, this.stream.cost, this.stream.items.singlePath, params);
  }

  /** Worst case of the single retries items of recorded batches (earlier runs') may need, beyond what those batches cost. */
  retriesOfOpen(open: readonly BatchRow[]): number {
    return open.reduce((n, b) => n + this.worstOfBatch(b), 0) * this.billedRetries();
  }

  /** Single retries of an item whose failure billed: only where a single endpoint can retry it. */
  private billedRetries(): number {
    return this.stream.items.failedItemsBilled && this.retriesAlone() ? (this.ctx.batch.retryBilledFailures ?? 1) : 0;
  }

  /** Whether items that failed for a passing reason are retried alone, through the operation's single endpoint. */
  retriesAlone(): boolean {
    return this.stream.items.singlePath !== undefined && (this.ctx.batch.retryBilledFailures ?? 1) > 0;
  }

  /** Worst-case credits of a recorded intent or job: the sum over its items. */
  worstOfBatch(batch: BatchRow): number {
    return itemsOf(batch).reduce((n, item) => n + this.itemCost(item.params).worst, 0);
  }

  /** An item's params: rendered from the stream (or given by a re-read item), as its single endpoint would send them. */
  paramsFor(partition: Partition): Record<string, unknown> {
    const given = partition.values.params as Record<string, unknown> | undefined;
    return given ?? itemParams(this.stream.items.singlePath, this.stream.items.paramsOf(partition));
  }
}

import { SEED_CHUNK } from '../../config/seed-list.js';
import { regroup } from '../../util/regroup.js';
import type { Partition } from '../../manifest/components/partitions.js';
import type { CompiledRequestStream } from '../../manifest/compile-stream.js';
import { partitionContext, tableChunks } from '../partitions/partition-context.js';
import { addCost, passCost, type PassCost } from './pass-estimate.js';
import { isFresh, readStates, type PartitionState } from './partition-pass.js';
import { PartitionScan } from '../partitions/partition-scan.js';
import { addRows, type PlannedRows, type StreamContext } from '../stream-context.js';

/** Stale partitions gathered per pass over the scan when they run stalest first: a window's partitions are held, not the stream's. */
export const STALE_WINDOW = 20 * SEED_CHUNK;

/** A partition due now, with its saved state (undefined when it has none). */
export interface DuePartition {
  partition: Partition;
  saved: PartitionState | undefined;
}

/** What a request stream has due now, found in one pass over its partitions without holding them. */
export interface RequestPlan {
  /** Every partition (repeats dropped). */
  partitions: number;
  /** Partitions due. */
  todo: number;
  /** Credits of a pass over each partition due. */
  cost: PassCost;
  /** Keys of the first three due, in priority order. */
  next: string[];
  /** The first partition due in priority order; undefined when none is. */
  first: Partition | undefined;
  /** Due partitions a pass completed before: position in the scan of each, stalest first (ties in the scan's order). */
  stalest: Float64Array;
  /** Rows the passes may load, per table. */
  rows: Record<string, PlannedRows>;
}

/**
 * A request stream's partitions (a `PartitionScan`) with their saved states, read a chunk of keys
 * at a time: a plan in one pass, then the partitions due in priority order, never-completed ones
 * first in the scan's order, then the longest since their last complete pass. Stale partitions
 * are ordered through 16 bytes each, and read back `STALE_WINDOW` at a time by a pass each.
 * `close` when done.
 */
export class RequestPartitions {
  private constructor(
    private readonly stream: CompiledRequestStream,
    private readonly ctx: StreamContext,
    private readonly scan: PartitionScan,
  ) {}

  /** Opens the scan of the stream's partitions. */
  static async open(stream: CompiledRequestStream, ctx: StreamContext): Promise<RequestPartitions> {
    return new RequestPartitions(
      stream,
      ctx,
      await PartitionScan.open(stream.partitions, partitionContext(ctx), tableChunks(ctx)),
    );
  }

  /** Counts the partitions due and the credits of their passes. */
  async plan(): Promise<RequestPlan> {
    const plan: RequestPlan = {
      partitions: 0,
      todo: 0,
      cost: { worst: 0, expected: 0, perCall: 0 },
      next: [],
      first: undefined,
      stalest: new Float64Array(0),
      rows: {},
    };
    const times: number[] = [];
    const positions: number[] = [];
    const oldest: Stale[] = [];
    for await (const chunk of this.withStates()) {
      for (const { partition, saved } of chunk) {
        const position = plan.partitions++;
        if (!this.isDue(partition, saved)) continue;
        plan.todo++;
        const pass = passCost(this.stream, this.ctx, partition, saved ?? {});
        addCost(plan.cost, pass);
        addRows(plan.rows, this.stream.table.nameOf(partition.values), pass.records);
        const at = completedAt(saved);
        if (at === undefined) {
          if (plan.next.length < 3) plan.next.push(partition.key);
          plan.first ??= partition;
          continue;
        }
        times.push(at);
        positions.push(position);
        keepOldest(oldest, { partition, at, position });
      }
    }
    plan.next.push(...oldest.slice(0, 3 - plan.next.length).map((o) => o.partition.key));
    plan.first ??= oldest[0]?.partition;
    const order = Uint32Array.from(times.keys()).sort((a, b) => times[a]! - times[b]! || positions[a]! - positions[b]!);
    plan.stalest = Float64Array.from(order, (i) => positions[i]!);
    return plan;
  }

  /** The partitions due, in priority order, in chunks of 1,000 with their states as they are now; stale ones gathered `window` at a time. */
  async *due(plan: RequestPlan, window = STALE_WINDOW): AsyncGenerator<DuePartition[]> {
    yield* regroup(this.neverCompleted(), SEED_CHUNK);
    yield* regroup(this.stalest(plan, window), SEED_CHUNK);
  }

  private async *neverCompleted(): AsyncGenerator<DuePartition[]> {
    for await (const chunk of this.withStates())
      yield chunk.filter(({ partition, saved }) => completedAt(saved) === undefined && this.isDue(partition, saved));
  }

  private async *stalest(plan: RequestPlan, window: number): AsyncGenerator<DuePartition[]> {
    for (let from = 0; from < plan.stalest.length; from += window) {
      const gathered = await this.atPositions(plan.stalest.subarray(from, from + window));
      for (let i = 0; i < gathered.length; i += SEED_CHUNK) {
        const chunk = gathered.slice(i, i + SEED_CHUNK);
        const states = await readStates(
          this.ctx.destination,
          this.stream.name,
          chunk.map((p) => p.key),
        );
        const due = chunk
          .map((partition) => ({ partition, saved: states.get(partition.key) }))
          .filter(({ partition, saved }) => this.isDue(partition, saved));
        if (due.length > 0) yield due;
      }
    }
  }

  /** The partitions of these keys with their states (those no longer partitions of the stream are absent). */
  async find(keys: ReadonlySet<string>): Promise<DuePartition[]> {
    const found: Partition[] = [];
    if (keys.size > 0)
      for await (const partitions of this.scan.chunks()) found.push(...partitions.filter((p) => keys.has(p.key)));
    const states = await readStates(
      this.ctx.destination,
      this.stream.name,
      found.map((p) => p.key),
    );
    return found.map((partition) => ({ partition, saved: states.get(partition.key) }));
  }

  /** Removes what the scan copied to disk. */
  close(): Promise<void> {
    return this.scan.close();
  }

  private isDue(partition: Partition, saved: PartitionState | undefined): boolean {
    return this.ctx.fullRefresh || !isFresh(saved, partition, this.stream.refreshAfterMs, this.ctx.now());
  }

  private async *withStates(): AsyncGenerator<DuePartition[]> {
    for await (const partitions of this.scan.chunks()) {
      const states = await readStates(
        this.ctx.destination,
        this.stream.name,
        partitions.map((p) => p.key),
      );
      yield partitions.map((partition) => ({ partition, saved: states.get(partition.key) }));
    }
  }

  /** The partitions at these positions of the scan, in the order given (one pass). */
  private async atPositions(wanted: Float64Array): Promise<Partition[]> {
    const slot = new Map<number, number>();
    wanted.forEach((position, i) => slot.set(position, i));
    const found: Partition[] = new Array(wanted.length);
    let position = 0;
    for await (const partitions of this.scan.chunks()) {
      for (const partition of partitions) {
        const at = slot.get(position++);
        if (at !== undefined) found[at] = partition;
      }
    }
    return found.filter((p) => p !== undefined);
  }
}

/** A due partition a pass completed before: when (ms), and where in the scan. */
interface Stale {
  partition: Partition;
  at: number;
  position: number;
}

/** Keeps the three stalest in `oldest`, stalest first. */
function keepOldest(oldest: Stale[], entry: Stale): void {
  const last = oldest[2];
  if (last && (last.at < entry.at || (last.at === entry.at && last.position < entry.position))) return;
  oldest.push(entry);
  oldest.sort((a, b) => a.at - b.at || a.position - b.position);
  oldest.length = Math.min(oldest.length, 3);
}

/** When a partition's last complete pass ended (ms); undefined when it never completed one (or the time is unreadable). */
function completedAt(saved: PartitionState | undefined): number | undefined {
  const at = saved?.completed_at ? Date.parse(saved.completed_at) : NaN;
  return Number.isNaN(at) ? undefined : at;
}

/**
 * Partitions made from the answer journal (`AnswerJournal.unaskedPartitions`), with their states,
 * those not fresh: a run that did not make them from its own sources runs them, taking the answers.
 */
export async function journaledDue(
  partitions: readonly Partition[],
  stream: CompiledRequestStream,
  ctx: Pick<StreamContext, 'destination' | 'now'>,
): Promise<DuePartition[]> {
  if (partitions.length === 0) return [];
  const states = await readStates(
    ctx.destination,
    stream.name,
    partitions.map((p) => p.key),
  );
  return partitions
    .map((partition) => ({ partition, saved: states.get(partition.key) }))
    .filter(({ partition, saved }) => !isFresh(saved, partition, stream.refreshAfterMs, ctx.now()));
}

import { SEED_CHUNK, type SeedList } from '../config/seed-list.js';
import type { SeedRow } from '../destinations/destination.js';
import type { PartitionNode } from '../manifest/manifest-schema.js';
import { renderTemplate } from '../manifest/template.js';
import { readSeedRows } from './ledger-pages.js';
import { partitionContext } from './partition-context.js';
import { isTruthy, resolvePartitions, seedListOf, seedPartition, type Partition } from './partitions.js';
import { RepeatFinder } from './repeat-finder.js';
import { seedKey } from './seed-keys.js';
import type { StreamContext } from './stream-context.js';

/** A seed of a batch stream with its ledger row, when it has one. */
export interface LedgerSeed {
  partition: Partition;
  /** The seed's row in `_seedline_seeds` when the chunk was read; undefined for a seed never recorded. */
  row: SeedRow | undefined;
}

/**
 * The partitions of a batch stream, read in chunks with the ledger rows of their keys, as many
 * times as the stream needs (its plan, then its submissions). A `seeds` node reads its seed list
 * again on each pass (a CSV file from disk) and the ledger a chunk of keys at a time, so a pass
 * holds one chunk whatever the list's length. Repeats of a key are dropped (first wins) exactly,
 * found by a survey pass when the scan opens. Other partition nodes are resolved whole.
 *
 * @example
 * ```ts
 * const scan = await SeedScan.open(manifest.partitions, ctx, manifest.name);
 * for await (const chunk of scan.chunks()) for (const { partition, row } of chunk) classify(partition, row);
 * ```
 */
export class SeedScan {
  private constructor(
    private readonly ctx: StreamContext,
    private readonly stream: string,
    private readonly source: { list: SeedList; node: Extract<PartitionNode, { type: 'seeds' }>; repeats: RepeatFinder } | { partitions: Partition[] },
  ) {}

  /** Opens the scan of `node`: a seed list is surveyed once for repeated keys. */
  static async open(node: PartitionNode, ctx: StreamContext, stream: string): Promise<SeedScan> {
    const list = node.type === 'seeds' && holds(node, ctx) ? seedListOf(ctx.seeds[node.seeds]) : undefined;
    if (node.type !== 'seeds' || !list) return new SeedScan(ctx, stream, { partitions: await resolvePartitions(node, partitionContext(ctx)) });
    const repeats = new RepeatFinder();
    for await (const seeds of list.chunks()) for (const seed of seeds) repeats.survey(seedKey(node.seed_kind, seed));
    repeats.surveyed();
    return new SeedScan(ctx, stream, { list, node, repeats });
  }

  /** One pass: the partitions in the list's order, repeats dropped, a chunk at a time with their ledger rows. */
  async *chunks(size = SEED_CHUNK): AsyncGenerator<LedgerSeed[]> {
    for await (const partitions of this.partitionChunks(size)) {
      const rows = await readSeedRows(this.ctx.destination, this.stream, partitions.map((p) => p.key));
      yield partitions.map((partition) => ({ partition, row: rows.get(partition.key) }));
    }
  }

  private async *partitionChunks(size: number): AsyncGenerator<Partition[]> {
    const { source } = this;
    if ('partitions' in source) {
      for (let i = 0; i < source.partitions.length; i += size) yield source.partitions.slice(i, i + size);
      return;
    }
    source.repeats.startPass();
    for await (const seeds of source.list.chunks(size)) {
      const partitions = seeds.map((seed) => seedPartition(source.node, seed)).filter((p) => source.repeats.isFirst(p.key));
      if (partitions.length > 0) yield partitions;
    }
  }
}

/** Whether a node's `when` holds (a node without one always does). */
function holds(node: PartitionNode, ctx: StreamContext): boolean {
  return !('when' in node) || node.when === undefined || isTruthy(renderTemplate(node.when, { options: ctx.options, seeds: ctx.seeds }));
}

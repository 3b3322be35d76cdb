import { SEED_CHUNK } from '../config/seed-list.js';
import type { PartitionNode } from '../manifest/manifest-schema.js';
import { regroup } from '../util/regroup.js';
import { SpoolFile } from '../util/spool-file.js';
import {
  holds,
  parentPartitions,
  resolvePartitions,
  seedListOf,
  seedPartition,
  type Partition,
  type PartitionContext,
} from './partitions.js';
import { RepeatFinder } from './repeat-finder.js';

/** Reads the given columns of a table's rows, a chunk at a time, in one query (none when the table does not exist). */
export type TableChunks = (table: string, columns: readonly string[]) => AsyncIterable<Record<string, unknown>[]>;

/** One pass over a node's partitions, in chunks of about `size` (repeats kept). */
type ChunkSource = (size: number) => AsyncGenerator<Partition[]>;

/**
 * The partitions of a stream, read in chunks as many times as the stream needs, without holding
 * them: a `seeds` node's list (a CSV file, a query's answer) and a `parent` node's rows are read
 * once, when the scan opens, into a temporary file that each pass reads again. So every pass sees
 * the same partitions in the same order (a file edited during the run, or a query without `order
 * by` answering in another order, cannot make a pass disagree with the plan), and no read
 * transaction stays open on the warehouse while the stream writes. A `union` reads its nodes in
 * turn; `list`, `months` and `single` nodes, which the config spells out, are resolved whole.
 * Repeats of a key are dropped (first wins) exactly, found by a survey pass when the scan opens.
 * Passes run one at a time; `close` removes the copies.
 *
 * @example
 * ```ts
 * const scan = await PartitionScan.open(manifest.partitions, partitionContext(ctx), tableChunks(ctx));
 * try {
 *   for await (const partitions of scan.chunks()) handle(partitions);
 * } finally {
 *   await scan.close();
 * }
 * ```
 */
export class PartitionScan {
  private passing = false;

  private constructor(
    private readonly source: ChunkSource,
    private readonly repeats: RepeatFinder,
    private readonly spools: readonly SpoolFile[],
  ) {}

  /** Opens the scan of `node`: parent rows are copied, and every key is surveyed once for repeats. */
  static async open(node: PartitionNode, context: PartitionContext, tables: TableChunks): Promise<PartitionScan> {
    const spools: SpoolFile[] = [];
    try {
      const source = await sourceOf(node, context, tables, spools);
      const repeats = new RepeatFinder();
      for await (const partitions of source(SEED_CHUNK))
        for (const partition of partitions) repeats.survey(partition.key);
      repeats.surveyed();
      return new PartitionScan(source, repeats, spools);
    } catch (error) {
      await Promise.all(spools.map((spool) => spool.remove()));
      throw error;
    }
  }

  /** One pass: the partitions in the source's order, repeats dropped, a chunk for each `size` seeds or parent rows (an expanded parent row gives several partitions). */
  async *chunks(size = SEED_CHUNK): AsyncGenerator<Partition[]> {
    if (this.passing) throw new Error('PartitionScan: a pass is already under way (passes run one at a time)');
    this.passing = true;
    try {
      this.repeats.startPass();
      for await (const partitions of this.source(size)) {
        const first = partitions.filter((p) => this.repeats.isFirst(p.key));
        if (first.length > 0) yield first;
      }
    } finally {
      this.passing = false;
    }
  }

  /** Removes the copies of parent rows. */
  async close(): Promise<void> {
    await Promise.all(this.spools.map((spool) => spool.remove()));
  }
}

async function sourceOf(
  node: PartitionNode,
  context: PartitionContext,
  tables: TableChunks,
  spools: SpoolFile[],
): Promise<ChunkSource> {
  if (!holds(node, context)) return async function* () {};
  if (node.type === 'seeds') {
    const list = seedListOf(context.seeds[node.seeds]);
    if (!list) return async function* () {};
    const spool = await SpoolFile.fill(list.chunks());
    spools.push(spool);
    return async function* (size) {
      for await (const seeds of regroup(spool.chunks(), size))
        yield seeds.map((seed) => seedPartition(node, String(seed)));
    };
  }
  if (node.type === 'parent') {
    const spool = await SpoolFile.fill(tables(node.table, node.columns));
    spools.push(spool);
    return async function* (size) {
      for await (const rows of regroup(spool.chunks(), size))
        yield parentPartitions(node, rows as Record<string, unknown>[], context);
    };
  }
  if (node.type === 'union') {
    const parts: ChunkSource[] = [];
    for (const child of node.of) parts.push(await sourceOf(child, context, tables, spools));
    return async function* (size) {
      for (const part of parts) yield* part(size);
    };
  }
  const partitions = await resolvePartitions(node, context);
  return async function* (size) {
    for (let i = 0; i < partitions.length; i += size) yield partitions.slice(i, i + size);
  };
}

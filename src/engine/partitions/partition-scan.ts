import { SEED_CHUNK } from '../../config/seed-list.js';
import type {
  ChunkSource,
  Partition,
  PartitionContext,
  PartitionSource,
  TableChunks,
} from '../../manifest/components/partitions.js';
import { SpoolFile } from '../../util/spool-file.js';
import { RepeatFinder } from './repeat-finder.js';

export type { TableChunks } from '../../manifest/components/partitions.js';

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
 * const scan = await PartitionScan.open(stream.partitions, partitionContext(ctx), tableChunks(ctx));
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

  /** Opens the scan of a stream's partitions: seeds and parent rows are copied, and every key is surveyed once for repeats. */
  static async open(
    partitions: PartitionSource,
    context: PartitionContext,
    tables: TableChunks,
  ): Promise<PartitionScan> {
    const spools: SpoolFile[] = [];
    const spool = async (chunks: AsyncIterable<unknown[]>) => {
      const copy = await SpoolFile.fill(chunks);
      spools.push(copy);
      return copy;
    };
    try {
      const source = await partitions.open(context, { tables, spool });
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

  /** Keys the survey met, repeats included: at least the partitions a pass yields. */
  get keys(): number {
    return this.repeats.keysSurveyed;
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

import { SEED_CHUNK } from '../../config/seed-list.js';
import type { SeedRow } from '../../destinations/destination.js';
import type { PartitionSource } from '../../manifest/components/partitions.js';
import { readSeedRows } from '../books/ledger-pages.js';
import { partitionContext, tableChunks } from '../partitions/partition-context.js';
import { PartitionScan } from '../partitions/partition-scan.js';
import type { Partition } from '../../manifest/components/partitions.js';
import type { StreamContext } from '../stream-context.js';

/** A seed of a batch stream with its ledger row, when it has one. */
export interface LedgerSeed {
  partition: Partition;
  /** The seed's row in `_seedline_seeds` when the chunk was read; undefined for a seed never recorded. */
  row: SeedRow | undefined;
}

/**
 * The partitions of a batch stream (a `PartitionScan`: never held whole, repeats dropped), read
 * in chunks with the ledger rows of their keys, as many times as the stream needs (its plan, then
 * its submissions). The ledger is read a chunk of keys at a time, so a pass holds one chunk
 * whatever the list's length. `close` when done.
 *
 * @example
 * ```ts
 * const scan = await SeedScan.open(stream.partitions, ctx, stream.name);
 * for await (const chunk of scan.chunks()) for (const { partition, row } of chunk) classify(partition, row);
 * await scan.close();
 * ```
 */
export class SeedScan {
  private constructor(
    private readonly ctx: StreamContext,
    private readonly stream: string,
    private readonly partitions: PartitionScan,
  ) {}

  /** Opens the scan of a stream's partitions (see `PartitionScan.open`). */
  static async open(partitions: PartitionSource, ctx: StreamContext, stream: string): Promise<SeedScan> {
    return new SeedScan(ctx, stream, await PartitionScan.open(partitions, partitionContext(ctx), tableChunks(ctx)));
  }

  /** Keys the seed list holds, repeats included: at least the seeds a pass yields. */
  get keys(): number {
    return this.partitions.keys;
  }

  /** One pass: the partitions in the list's order, repeats dropped, a chunk at a time with their ledger rows. */
  async *chunks(size = SEED_CHUNK): AsyncGenerator<LedgerSeed[]> {
    for await (const partitions of this.partitions.chunks(size)) {
      const rows = await readSeedRows(
        this.ctx.destination,
        this.stream,
        partitions.map((p) => p.key),
      );
      yield partitions.map((partition) => ({ partition, row: rows.get(partition.key) }));
    }
  }

  /** Removes what the scan copied to disk. */
  close(): Promise<void> {
    return this.partitions.close();
  }
}

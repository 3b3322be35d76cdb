import type { Destination } from '../../destinations/destination.js';
import type { CompiledBatchStream } from '../../manifest/compile-stream.js';
import { partitionContext, tableChunks } from '../partitions/partition-context.js';
import { PartitionScan } from '../partitions/partition-scan.js';

/** A seed of a batch stream: its ledger key and the seed as the user wrote it. */
export interface StreamSeed {
  key: string;
  seed: string;
}

/**
 * The seeds a batch stream would read now, a chunk at a time in the list's order, repeats dropped:
 * what a state that does not carry the seeds is read against.
 * @param seeds the resolved seed lists (`PreparedSync.seeds`)
 */
export async function* batchStreamSeeds(
  stream: CompiledBatchStream,
  seeds: Record<string, unknown>,
  destination: Destination,
): AsyncGenerator<StreamSeed[]> {
  const sources = { seeds, destination, now: () => new Date() };
  const scan = await PartitionScan.open(stream.partitions, partitionContext(sources), tableChunks(sources));
  try {
    for await (const partitions of scan.chunks())
      yield partitions.map((p) => ({ key: p.key, seed: String(p.values.seed ?? p.key) }));
  } finally {
    await scan.close();
  }
}

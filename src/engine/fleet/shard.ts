import type { CompiledStream } from '../../manifest/compile-stream.js';
import type { Partition, PartitionSource } from '../../manifest/components/partitions.js';

/** A part of a stream's partitions: those whose key hashes to `index` of `of` (a worker's item). */
export interface Shard {
  /** From 0 to `of - 1`. */
  index: number;
  /** How many parts the stream is cut into. */
  of: number;
}

/**
 * Whether a partition key falls in `shard`: FNV-1a of the key modulo the count, so every
 * process, on any host, puts a key in the same part, and the parts cover every key exactly once.
 */
export function inShard(key: string, shard: Shard): boolean {
  if (shard.of <= 1) return true;
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % shard.of === shard.index;
}

/**
 * The stream cut to the partitions of `shard`: its seed lists, parent rows, lists and months are
 * read whole and filtered, so any kind of partition source can be shared out between workers.
 */
export function shardStream<S extends CompiledStream>(stream: S, shard: Shard): S {
  if (shard.of <= 1) return stream;
  return { ...stream, partitions: shardPartitions(stream.partitions, shard) };
}

function shardPartitions(source: PartitionSource, shard: Shard): PartitionSource {
  const keep = (partitions: readonly Partition[]) => partitions.filter((p) => inShard(p.key, shard));
  return {
    ...source,
    resolve: async (ctx) => keep(await source.resolve(ctx)),
    open: async (ctx, io) => {
      const chunks = await source.open(ctx, io);
      return async function* (size) {
        for await (const partitions of chunks(size)) {
          const kept = keep(partitions);
          if (kept.length > 0) yield kept;
        }
      };
    },
  };
}

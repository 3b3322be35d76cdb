import { compilePartitions, type Partition, type PartitionContext } from '../../src/manifest/components/partitions.js';
import type { PartitionNode } from '../../src/manifest/manifest-schema.js';

/** What partition resolution reads in a test: the stream's options beside the run's seeds, tables and clock. */
export type OptionsAndContext = PartitionContext & { options: Record<string, unknown> };

/** The partitions of a `partitions` node compiled with `ctx.options`, as a stream resolves them whole. */
export function resolvePartitions(node: PartitionNode, { options, ...ctx }: OptionsAndContext): Promise<Partition[]> {
  return compilePartitions(node, options).resolve(ctx);
}

/** A `partitions` node compiled with `options`. */
export function partitionSource(node: PartitionNode, options: Record<string, unknown>) {
  return compilePartitions(node, options);
}

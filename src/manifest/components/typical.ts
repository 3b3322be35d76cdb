import { compileTemplate } from '../compiled-template.js';
import { StreamDefinitionError } from '../manifest-error.js';
import type { TypicalNode } from '../manifest-schema.js';
import type { Partition } from './partitions.js';

/**
 * The records a partition usually holds (a compiled `typical` node): what a plan expects a first
 * pass to read. Undefined when the manifest states none.
 */
export type TypicalRecords = (partition: Partition) => number | undefined;

/** Compiles a `typical` node with the stream's options. */
export function compileTypical(
  node: TypicalNode | undefined,
  options: Record<string, unknown>,
  stream: string,
): TypicalRecords {
  if (node === undefined) return () => undefined;
  const records = compileTemplate(node.records, { options });
  return (partition) => {
    const rendered = records({ partition: partition.values });
    const count = typeof rendered === 'string' && rendered.trim() !== '' ? Number(rendered) : rendered;
    if (typeof count !== 'number' || !Number.isFinite(count) || count < 0)
      throw new StreamDefinitionError(
        `stream "${stream}": typical.records renders to ${JSON.stringify(rendered)} for ${partition.key}; give a number of records (0 or more), or a $switch whose every case is one`,
      );
    return count;
  };
}

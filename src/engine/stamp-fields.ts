import type { StampField } from '../manifest/manifest-schema.js';
import { renderTemplate } from '../manifest/template.js';
import { StreamDefinitionError } from './engine-errors.js';
import type { Partition } from './partitions.js';

/** The fields a partition's records are stamped by (`incremental.field`), in the order tried. */
export function stampFields(field: StampField, partition: Partition, stream: string): readonly string[] {
  if (Array.isArray(field)) return field;
  const value = String(renderTemplate(field.by, { partition: partition.values }));
  const fields = field.cases[value];
  if (!fields)
    throw new StreamDefinitionError(
      `stream "${stream}": incremental.field has no case for "${value}" (cases: ${Object.keys(field.cases).join(', ')})`,
    );
  return fields;
}

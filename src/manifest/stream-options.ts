import { z } from 'zod';
import type { StreamManifest } from './manifest-schema.js';
import { optionSchema, type JsonSchemaNode } from './option-schema.js';

const ContractMode = z.enum(['evolve', 'discard_value', 'discard_row', 'freeze']);

/**
 * What a stream does with data that does not fit its schema, modelled on dlt's schema contracts:
 * `tables` (a table not yet in the destination), `columns` (a field outside the schema),
 * `data_type` (a value that does not fit its column). `evolve` (default) keeps everything
 * (misfits in `_extra`), `discard_value` drops what does not fit, `discard_row` sends the record
 * to `_seedline_rejected`, `freeze` does too and makes the stream `partial`. One mode sets all three.
 */
export const SchemaContractConfig = z
  .union([
    ContractMode,
    z.strictObject({
      tables: ContractMode.default('evolve'),
      columns: ContractMode.default('evolve'),
      data_type: ContractMode.default('evolve'),
    }),
  ])
  .transform((contract) =>
    typeof contract === 'string' ? { tables: contract, columns: contract, data_type: contract } : contract,
  );

/** The options of one configured stream, defaults applied. */
export interface StreamOptions {
  [option: string]: unknown;
  schema_contract?: z.output<typeof SchemaContractConfig>;
}

const compiled = new WeakMap<StreamManifest, z.ZodType<StreamOptions>>();

/**
 * The schema of a stream's key under `streams:` in the config: the options its manifest declares
 * (JSON Schema, see `optionSchema`), and `schema_contract`; any other key is refused.
 */
export function streamOptionsSchema(manifest: StreamManifest): z.ZodType<StreamOptions> {
  const known = compiled.get(manifest);
  if (known) return known;
  const shape = Object.fromEntries(
    Object.entries(manifest.options).map(([name, node]) => [
      name,
      optionSchema(node as JsonSchemaNode, `options.${name}`),
    ]),
  );
  let schema = z.strictObject({
    ...shape,
    schema_contract: SchemaContractConfig.optional(),
  }) as unknown as z.ZodType<StreamOptions>;
  if (manifest.description) schema = schema.describe(manifest.description);
  compiled.set(manifest, schema);
  return schema;
}

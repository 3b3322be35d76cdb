import { z } from 'zod';
import { SeedlineConfig, seedlineConfigFor } from './config-schema.js';
import type { Manifests } from '../manifest/load-manifests.js';

/** Where the committed JSON Schema lives in the package (what `# yaml-language-server: $schema=` points at). */
export const CONFIG_JSON_SCHEMA_PATH = 'schemas/seedline.config.schema.json';

/** `${VAR}` or `${VAR:-default}`: where a number or true/false is expected, a lone placeholder is read as one. */
const PLACEHOLDER = '^\\$\\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\\}$';

type JsonSchema = Record<string, unknown>;

/**
 * The JSON Schema of a seedline config file, generated from the zod schema the loader validates
 * with (zod 4 `toJSONSchema`, input side: defaults are optional), for editors' completion and
 * checks. Two things the loader accepts are added: a bare stream key (`profiles:` is YAML null)
 * and `${VAR}` where a number or true/false is expected. With `manifests`, `streams:` takes their
 * streams (the built-in ones and a `streams_dir`'s); by default the built-in ones.
 */
export function configJsonSchema(manifests?: Manifests): JsonSchema {
  const config = manifests ? seedlineConfigFor(manifests) : SeedlineConfig;
  const generated = z.toJSONSchema(config, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const schema = allowPlaceholders(generated) as JsonSchema;
  allowBareStreams(schema);
  return {
    $schema: generated.$schema,
    $id: 'https://seedline.dev/schemas/seedline.config.schema.json',
    title: 'seedline config',
    description:
      'A seedline config file: api, destination, seeds, streams, budget, batch, webhooks, signals, schedule. See docs/configuration.md.',
    ...Object.fromEntries(Object.entries(schema).filter(([key]) => key !== '$schema')),
  };
}

/** Every number, integer or boolean schema also takes a lone `${VAR}`. */
function allowPlaceholders(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(allowPlaceholders);
  if (node === null || typeof node !== 'object') return node;
  const walked = Object.fromEntries(
    Object.entries(node).map(([key, value]) => [key, allowPlaceholders(value)]),
  ) as JsonSchema;
  if (!['number', 'integer', 'boolean'].includes(String(walked.type))) return walked;
  const { default: fallback, description, ...typed } = walked;
  return {
    ...(description === undefined ? {} : { description }),
    ...(fallback === undefined ? {} : { default: fallback }),
    anyOf: [typed, { type: 'string', pattern: PLACEHOLDER }],
  };
}

/** `streams.<name>:` with nothing after it runs the stream with its defaults, like `{}`. */
function allowBareStreams(schema: JsonSchema): void {
  const streams = (schema.properties as Record<string, JsonSchema> | undefined)?.streams;
  const properties = streams?.properties as Record<string, JsonSchema> | undefined;
  if (!properties) return;
  for (const [name, options] of Object.entries(properties)) properties[name] = { anyOf: [options, { type: 'null' }] };
}

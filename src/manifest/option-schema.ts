import { z } from 'zod';
import { isDuration } from '../util/duration.js';

/** A JSON Schema node as a manifest writes it. */
export type JsonSchemaNode = Record<string, unknown>;

/** An option schema a manifest declares wrongly: `at` names the key (`options.kinds.items`). */
export class OptionSchemaError extends Error {
  constructor(
    readonly at: string,
    message: string,
  ) {
    super(`${at}: ${message}`);
  }
}

/** The JSON Schema keywords a manifest's options may use; any other is refused (it would be silently ignored). */
const KEYWORDS = new Set([
  'type',
  'enum',
  'const',
  'default',
  'description',
  'format',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'items',
  'minItems',
  'maxItems',
  'properties',
  'required',
  'additionalProperties',
  'oneOf',
  'errorMessage',
]);

/**
 * The zod schema of one stream option declared as JSON Schema (the subset {@link KEYWORDS}, plus
 * `format: duration`, `errorMessage` for the message a failed `pattern` or `oneOf` gives, and
 * draft-3 style `required: true` on an option that has no default and must be given). An option
 * without `default` or `required: true` is optional.
 *
 * @example
 * ```ts
 * optionSchema({ type: 'integer', minimum: 1, default: 10 }, 'options.max_pages').parse(undefined); // 10
 * ```
 */
export function optionSchema(node: JsonSchemaNode, at: string): z.ZodType {
  const mustBeGiven = node.required === true;
  const schema = nodeSchema(typeof node.required === 'boolean' ? withoutKey(node, 'required') : node, at);
  return mustBeGiven || node.default !== undefined ? schema : schema.optional();
}

function withoutKey(node: JsonSchemaNode, key: string): JsonSchemaNode {
  return Object.fromEntries(Object.entries(node).filter(([name]) => name !== key));
}

function nodeSchema(node: JsonSchemaNode, at: string): z.ZodType {
  if (node === null || typeof node !== 'object' || Array.isArray(node))
    throw new OptionSchemaError(at, 'expected a JSON Schema object such as { type: integer, default: 10 }');
  for (const key of Object.keys(node))
    if (!KEYWORDS.has(key))
      throw new OptionSchemaError(at, `"${key}" is not a keyword options may use (known: ${[...KEYWORDS].join(', ')})`);
  let schema = baseSchema(node, at);
  if (typeof node.description === 'string') schema = schema.describe(node.description);
  if (node.default !== undefined) schema = withDefault(schema, node.default, at);
  return schema;
}

function withDefault(schema: z.ZodType, value: unknown, at: string): z.ZodType {
  const checked = schema.safeParse(value);
  if (!checked.success)
    throw new OptionSchemaError(
      `${at}.default`,
      `the default ${JSON.stringify(value)} does not fit the option's own schema`,
    );
  return schema.default(value as never);
}

function baseSchema(node: JsonSchemaNode, at: string): z.ZodType {
  if (node.enum !== undefined) return enumSchema(node.enum, at);
  if (node.const !== undefined) return z.literal(node.const as string | number | boolean);
  switch (node.type) {
    case 'string':
      return stringSchema(node, at);
    case 'integer':
    case 'number':
      return numberSchema(node);
    case 'boolean':
      return z.boolean();
    case 'array':
      return arraySchema(node, at);
    case 'object':
      return objectSchema(node, at);
    default:
      throw new OptionSchemaError(
        at,
        `expected type string, integer, number, boolean, array or object (or an enum), not ${JSON.stringify(node.type)}`,
      );
  }
}

function enumSchema(values: unknown, at: string): z.ZodType {
  if (!Array.isArray(values) || values.length === 0)
    throw new OptionSchemaError(`${at}.enum`, 'expected a list of values');
  if (values.every((v) => typeof v === 'string')) return z.enum(values as [string, ...string[]]);
  return z.union(
    values.map((v) => z.literal(v as string | number | boolean)) as unknown as [z.ZodType, z.ZodType, ...z.ZodType[]],
  );
}

function stringSchema(node: JsonSchemaNode, at: string): z.ZodType {
  if (node.format === 'duration')
    return z.string().refine(isDuration, { message: 'expected a duration such as 12h, 7d or 0s' });
  if (node.format !== undefined)
    throw new OptionSchemaError(`${at}.format`, `only format: duration is known, not ${JSON.stringify(node.format)}`);
  let schema = z.string();
  if (typeof node.minLength === 'number') schema = schema.min(node.minLength);
  if (typeof node.maxLength === 'number') schema = schema.max(node.maxLength);
  if (typeof node.pattern === 'string') {
    const message =
      typeof node.errorMessage === 'string' ? node.errorMessage : `expected text matching ${node.pattern}`;
    schema = schema.regex(new RegExp(node.pattern, 'u'), message);
  }
  return schema;
}

function numberSchema(node: JsonSchemaNode): z.ZodType {
  let schema = node.type === 'integer' ? z.number().int() : z.number();
  if (typeof node.minimum === 'number') schema = schema.min(node.minimum);
  if (typeof node.maximum === 'number') schema = schema.max(node.maximum);
  return schema;
}

function arraySchema(node: JsonSchemaNode, at: string): z.ZodType {
  let schema = z.array(
    node.items === undefined ? z.unknown() : nodeSchema(node.items as JsonSchemaNode, `${at}.items`),
  );
  if (typeof node.minItems === 'number') schema = schema.min(node.minItems);
  if (typeof node.maxItems === 'number') schema = schema.max(node.maxItems);
  return schema;
}

function objectSchema(node: JsonSchemaNode, at: string): z.ZodType {
  const properties = (node.properties ?? {}) as Record<string, JsonSchemaNode>;
  const required = new Set(Array.isArray(node.required) ? (node.required as string[]) : []);
  if (Object.keys(properties).length === 0) return z.record(z.string(), z.unknown());
  const shape = Object.fromEntries(
    Object.entries(properties).map(([name, child]) => {
      const schema = nodeSchema(child, `${at}.properties.${name}`);
      return [name, required.has(name) || child.default !== undefined ? schema : schema.optional()];
    }),
  );
  const object = node.additionalProperties === false ? z.strictObject(shape) : z.looseObject(shape);
  return node.oneOf === undefined ? object : withExactlyOne(object, node, at);
}

/** `oneOf` of branches that each only require some keys: exactly one branch's keys are given. */
function withExactlyOne(object: z.ZodType, node: JsonSchemaNode, at: string): z.ZodType {
  const branches = node.oneOf as JsonSchemaNode[];
  const keys = Array.isArray(branches) ? branches.map((b) => b?.required) : [];
  if (keys.length === 0 || !keys.every((k) => Array.isArray(k) && k.length > 0)) {
    throw new OptionSchemaError(
      `${at}.oneOf`,
      'options support oneOf only as a choice of required keys ([{ required: [a] }, { required: [b] }])',
    );
  }
  const message =
    typeof node.errorMessage === 'string'
      ? node.errorMessage
      : `give exactly one of ${keys.map((k) => (k as string[]).join(' and ')).join(' or ')}`;
  const path = (keys[0] as string[])[0]!;
  return object.refine(
    (value) =>
      keys.filter((branch) =>
        (branch as string[]).every((key) => (value as Record<string, unknown>)[key] !== undefined),
      ).length === 1,
    { path: [path], message },
  );
}

import { z } from 'zod';
import { describeIssues } from '../../schemas/common.js';
import { contractReason, UNFIT, type ContractMode } from './table-definition.js';

/** A record made to fit its schema, and the fields taken out of it (`location.city`). */
export type Repaired = { row: Record<string, unknown>; fields: string[] } | { reason: string };

/** Rounds of taking fields out: a field taken out can uncover no more than one level of issues below it. */
const MAX_ROUNDS = 4;

/**
 * Repairs a record its schema refused, so that a paid record loads unless its key is bad. null or
 * absent where a value is expected is a NULL column. Each field of the wrong shape is taken out
 * (its column is NULL) and, under `evolve`, kept as received on the object that held it, under
 * {@link UNFIT}, for the row's `_extra`. `discard_row` and `freeze` (`schema_contract.data_type`)
 * reject a record with such a field instead, as does a bad primary key.
 *
 * @param relaxed the schema with every field but the key nullable (see {@link relaxSchema})
 */
export function repairRecord(
  record: unknown,
  error: z.ZodError,
  relaxed: z.ZodType,
  primaryKey: readonly string[],
  mode: ContractMode,
): Repaired {
  const reason = describeIssues(error);
  if (record === null || typeof record !== 'object' || Array.isArray(record)) return { reason };
  if (error.issues.some((issue) => issue.path.length === 0 || primaryKey.includes(String(issue.path[0]))))
    return { reason };
  let candidate = record as Record<string, unknown>;
  const taken: { path: string[]; raw: unknown }[] = [];
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const parsed = relaxed.safeParse(candidate);
    if (parsed.success) {
      const row = parsed.data as Record<string, unknown>;
      if (mode === 'evolve') for (const { path, raw } of taken) keepUnfit(row, path, raw);
      return { row, fields: taken.map(({ path }) => path.join('.')) };
    }
    // null or absent where the schema wants a value is a NULL column, not a misfit: only values of the wrong shape meet the contract.
    if (round === 0 && (mode === 'discard_row' || mode === 'freeze'))
      return { reason: contractReason(describeIssues(parsed.error), 'data_type', mode) };
    // Paths read from the round's candidate before any is taken out; a path under one already taken adds nothing.
    const start = candidate;
    for (const issue of parsed.error.issues) {
      const path = presentPath(start, issue.path.map(String));
      if (path.length === 0 || primaryKey.includes(path[0]!)) return { reason };
      if (taken.some((t) => isPrefix(t.path, path))) continue;
      taken.push({ path, raw: valueAt(record, path) });
      candidate = without(candidate, path);
    }
  }
  return { reason };
}

/**
 * The schema with every field but the primary key nullable and optional, nested objects too, so a
 * field taken out leaves a valid record. A list's item that does not fit stays as received: the
 * record shaper keeps it in `_extra` (or discards it, as the contract says).
 */
export function relaxSchema(schema: z.ZodType, primaryKey: readonly string[]): z.ZodType {
  const object = unwrap(schema);
  if (!(object instanceof z.ZodObject)) return schema;
  const shape = Object.fromEntries(
    Object.entries(object.shape as Record<string, z.ZodType>).map(([key, field]) => [
      key,
      primaryKey.includes(key) ? field : relaxField(field),
    ]),
  );
  return z.looseObject(shape);
}

function relaxField(field: z.ZodType): z.ZodType {
  const inner = unwrap(field);
  if (inner instanceof z.ZodObject) return relaxSchema(inner, []).nullable().optional();
  // A map's values (a Trigger's diff) land in a JSON column as they are: whatever they hold fits it.
  if (inner instanceof z.ZodRecord)
    return z
      .record(inner.keyType as z.ZodString, z.unknown())
      .nullable()
      .optional();
  if (inner instanceof z.ZodArray) {
    const element = unwrap(inner.element as z.ZodType);
    const item = element instanceof z.ZodObject ? relaxSchema(element, []) : element;
    return z
      .array(z.union([item, z.unknown()]))
      .nullable()
      .optional();
  }
  return field.nullable().optional();
}

/** The schema inside optional, nullable and default wrappers. */
function unwrap(schema: z.ZodType): z.ZodType {
  let inner = schema;
  for (;;) {
    const def = (inner as unknown as { _zod: { def: { type: string; innerType?: z.ZodType } } })._zod.def;
    if (!['optional', 'nullable', 'default', 'prefault'].includes(def.type) || !def.innerType) return inner;
    inner = def.innerType;
  }
}

/** The longest start of `path` that holds a value: a member missing inside a map (`diff.x.before`) takes out the entry that lacks it. */
function presentPath(value: unknown, path: readonly string[]): string[] {
  let end = path.length;
  while (end > 0 && valueAt(value, path.slice(0, end)) === undefined) end--;
  return path.slice(0, end);
}

function valueAt(value: unknown, path: readonly string[]): unknown {
  let at = value;
  for (const key of path) {
    if (at === null || typeof at !== 'object' || !Object.hasOwn(at, key)) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/**
 * A copy of `value` with the field at `path` set to undefined (objects copied along the path
 * only): set, not deleted, so a key such as `constructor` does not fall through to an inherited value.
 */
function without(value: Record<string, unknown>, path: readonly string[]): Record<string, unknown> {
  const [key, ...rest] = path as [string, ...string[]];
  const copy = { ...value };
  if (rest.length === 0) copy[key] = undefined;
  else if (copy[key] !== null && typeof copy[key] === 'object' && !Array.isArray(copy[key]))
    copy[key] = without(copy[key] as Record<string, unknown>, rest);
  return copy;
}

function isPrefix(prefix: readonly string[], path: readonly string[]): boolean {
  return prefix.length <= path.length && prefix.every((key, i) => key === path[i]);
}

/**
 * Sets `raw` on the row, under {@link UNFIT}, nested by its whole path (`{ location: { city } }`):
 * the record shaper keeps it in the row's `_extra` as it is. Objects without a prototype, so a key
 * named `constructor` or `__proto__` is a key like any other.
 */
function keepUnfit(row: Record<string, unknown>, path: readonly string[], raw: unknown): void {
  const holder = row as { [UNFIT]?: Record<string, unknown> };
  let into = (holder[UNFIT] ??= Object.create(null) as Record<string, unknown>);
  for (const key of path.slice(0, -1)) {
    const next = Object.hasOwn(into, key) ? into[key] : undefined;
    into =
      next !== null && typeof next === 'object'
        ? (next as Record<string, unknown>)
        : (into[key] = Object.create(null) as Record<string, unknown>);
  }
  into[path[path.length - 1]!] = raw;
}

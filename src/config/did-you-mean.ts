import type { z } from 'zod';
import { closestName } from '../util/closest-name.js';

type Def = {
  type: string;
  innerType?: Schema;
  in?: Schema;
  out?: Schema;
  shape?: Record<string, Schema>;
  element?: Schema;
  valueType?: Schema;
  options?: Schema[];
};
type Schema = { _zod: { def: Def } };

/**
 * The known key closest to `unknown` among the keys the object at `path` of `schema` takes, when
 * it is close enough to be a typo (at most a third of its letters differ); undefined otherwise.
 *
 * @example
 * ```ts
 * closestKey(SeedlineConfig, ['streams', 'profiles'], 'refesh_after'); // 'refresh_after'
 * ```
 */
export function closestKey(schema: z.ZodType, path: readonly PropertyKey[], unknown: string): string | undefined {
  let nodes = [unwrap(schema as unknown as Schema)];
  for (const step of path) nodes = nodes.flatMap((node) => childrenAt(node, step)).map(unwrap);
  const known = [...new Set(nodes.flatMap(keysOf))];
  return closestName(unknown, known);
}

/** The schema a wrapper (optional, default, a preprocess or transform pipe, …) stands for. */
function unwrap(node: Schema): Schema {
  for (;;) {
    const def = node._zod.def;
    if (def.innerType) node = def.innerType;
    else if (def.type === 'pipe' && def.in && def.out) node = def.out._zod.def.type === 'transform' ? def.in : def.out;
    else return node;
  }
}

function childrenAt(node: Schema, step: PropertyKey): Schema[] {
  const def = node._zod.def;
  if (def.options) return def.options.flatMap((option) => childrenAt(unwrap(option), step));
  if (def.shape) return def.shape[String(step)] ? [def.shape[String(step)]!] : [];
  if (def.element) return [def.element];
  if (def.valueType) return [def.valueType];
  return [];
}

function keysOf(node: Schema): string[] {
  const def = node._zod.def;
  if (def.options) return def.options.flatMap((option) => keysOf(unwrap(option)));
  return def.shape ? Object.keys(def.shape) : [];
}

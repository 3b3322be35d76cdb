/** Reads a dotted path (`partition.urn`, `data.posts`) from a value; `undefined` when any step is missing. */
export function lookup(value: unknown, path: string): unknown {
  return lookupSteps(value, path.split('.'));
}

/** {@link lookup} over path steps already split. */
export function lookupSteps(value: unknown, steps: readonly string[]): unknown {
  let at: unknown = value;
  for (const step of steps) {
    if (at === null || typeof at !== 'object') return undefined;
    at = (at as Record<string, unknown>)[step];
  }
  return at;
}

import { keyOf, type KeyPath } from './config-errors.js';

const PLACEHOLDER = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;
const WHOLE = /^\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}$/;

/** A `${VAR}` with no value and no default, with the config key where it stands. */
export interface MissingVariable {
  /** Config key holding the placeholder (`api.api_key`). */
  key: string;
  /** The variable's name. */
  variable: string;
}

/** A parsed YAML document with its placeholders replaced, and what the replacing found. */
export interface Interpolated {
  /** The document; every placeholder became text, whatever its value spells. */
  value: unknown;
  /** Placeholders with neither a value nor a default. */
  missing: MissingVariable[];
  /** Paths of the values that were one placeholder and nothing else (`"${BUDGET:-5000}"`). */
  lone: KeyPath[];
}

/** The value types a lone placeholder's text may be read as, when its key wants one. */
export type TypedKind = 'number' | 'boolean';

/**
 * Replaces `${VAR}` and `${VAR:-default}` in every string of a parsed YAML document, always by text:
 * `api_key: ${KEY}` stays a string when KEY is all digits, and `"${EXT:-0042}"` keeps its zeros.
 * Works on values, not on the raw text, so a value can never break the YAML structure.
 */
export function interpolate(value: unknown, env: NodeJS.ProcessEnv): Interpolated {
  const found: Omit<Interpolated, 'value'> = { missing: [], lone: [] };
  return { value: walk(value, env, found, []), ...found };
}

/**
 * Reads a lone placeholder's text as a number or true/false where the schema asked for one
 * (`max_credits_per_run: ${BUDGET}`). Text that does not spell one is left for the schema to refuse.
 * @returns whether any value changed (validate again then)
 */
export function typeLonePlaceholder(interpolated: Interpolated, path: KeyPath, kind: TypedKind): boolean {
  if (!interpolated.lone.some((lone) => lone.length === path.length && lone.every((part, i) => part === path[i])))
    return false;
  const parent = path
    .slice(0, -1)
    .reduce<unknown>((node, part) => (node as Record<PropertyKey, unknown>)[part], interpolated.value) as Record<
    PropertyKey,
    unknown
  >;
  const last = path[path.length - 1]!;
  const typed = spelled(parent[last], kind);
  if (typed === undefined) return false;
  parent[last] = typed;
  return true;
}

function walk(
  value: unknown,
  env: NodeJS.ProcessEnv,
  found: Omit<Interpolated, 'value'>,
  path: PropertyKey[],
): unknown {
  if (typeof value === 'string') {
    if (WHOLE.test(value)) found.lone.push(path);
    return substitute(value, env, found.missing, keyOf(path));
  }
  if (Array.isArray(value)) return value.map((item, index) => walk(item, env, found, [...path, index]));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, env, found, [...path, k])]));
  }
  return value;
}

function substitute(value: string, env: NodeJS.ProcessEnv, missing: MissingVariable[], key: string): string {
  return value.replace(PLACEHOLDER, (_match, name: string, fallback: string | undefined) => {
    const found = env[name];
    if (found !== undefined && found !== '') return found;
    if (fallback !== undefined) return fallback;
    missing.push({ key, variable: name });
    return '';
  });
}

function spelled(text: unknown, kind: TypedKind): number | boolean | undefined {
  if (typeof text !== 'string') return undefined;
  if (kind === 'number') return /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : undefined;
  return text === 'true' || text === 'false' ? text === 'true' : undefined;
}

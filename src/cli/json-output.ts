import { Option } from 'commander';

/**
 * `--json`, the one machine-readable output of every command that prints data: one JSON document
 * on stdout (progress and notices stay on stderr), keys in snake_case like the service's answers
 * and the destination's columns. Chosen once for all commands; docs/commands.md#cli-conventions.
 */
export function jsonOption(): Option {
  return new Option('--json', 'print the result as one JSON document (snake_case keys) instead of text').default(false);
}

/**
 * Prints `value` as the command's JSON document. seedline's own reports are written in camelCase
 * and get snake_case keys here; pass `keys: 'as-is'` for rows and the service's own objects, whose
 * keys are data (column names, user metadata) and already in the shape the user knows.
 */
export function writeJson(value: unknown, options: { keys?: 'snake_case' | 'as-is' } = {}): void {
  const shaped = options.keys === 'as-is' ? value : snakeCaseKeys(value);
  process.stdout.write(`${JSON.stringify(shaped, jsonValue, 2)}\n`);
}

/** `creditsAtRisk` → `credits_at_risk`, deep, through arrays; values are left alone. */
export function snakeCaseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeCaseKeys);
  if (value instanceof Date || value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [snakeCase(key), snakeCaseKeys(inner)]));
}

function snakeCase(key: string): string {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z])([A-Z][a-z])/g, '$1_$2')
    .toLowerCase();
}

/** Counts from a database may be bigints, which JSON.stringify refuses: safe ones become numbers, larger ones text. */
function jsonValue(_key: string, value: unknown): unknown {
  if (typeof value !== 'bigint') return value;
  return value <= BigInt(Number.MAX_SAFE_INTEGER) && value >= BigInt(Number.MIN_SAFE_INTEGER)
    ? Number(value)
    : value.toString();
}

/**
 * A JSON column's value as read back: DuckDB gives its text, Postgres (jsonb) the parsed value.
 * Undefined for NULL or text that is not JSON.
 */
export function jsonColumn<T = unknown>(value: unknown): T | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value !== 'string') return value as T;
  try {
    return JSON.parse(value) as T;
  } catch {
    return undefined;
  }
}

import { DuckDBTimestampTZValue } from '@duckdb/node-api';
import type { DuckDBValue } from '@duckdb/node-api';

/**
 * Bound values as DuckDB takes them: Dates become TIMESTAMPTZ values, undefined becomes null,
 * plain objects and arrays become JSON text. Nothing is ever spliced into the SQL.
 */
export function bindDuckDbParameters(parameters: readonly unknown[]): DuckDBValue[] {
  return parameters.map((value): DuckDBValue => {
    if (value === undefined || value === null) return null;
    if (value instanceof Date) return new DuckDBTimestampTZValue(BigInt(value.getTime()) * 1000n);
    if (
      typeof value === 'string' ||
      typeof value === 'number' ||
      typeof value === 'boolean' ||
      typeof value === 'bigint'
    )
      return value;
    if (typeof value === 'object' && value.constructor !== Object && !Array.isArray(value)) return value as DuckDBValue;
    return JSON.stringify(value);
  });
}

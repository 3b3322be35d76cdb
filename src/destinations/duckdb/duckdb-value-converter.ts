import {
  DuckDBDateValue,
  DuckDBDecimalValue,
  DuckDBListValue,
  DuckDBArrayValue,
  DuckDBStructValue,
  DuckDBMapValue,
  DuckDBTimestampTZValue,
  DuckDBTimestampValue,
  DuckDBTimestampMillisecondsValue,
  DuckDBTimestampSecondsValue,
  DuckDBTimestampNanosecondsValue,
} from '@duckdb/node-api';
import type { DuckDBResultReader, DuckDBValue } from '@duckdb/node-api';

/**
 * Turns a DuckDB result into plain JS rows, the same shapes the Postgres backend returns:
 * BIGINT → number when safe, else a decimal string; timestamps → ISO 8601 strings (UTC,
 * milliseconds); DATE → `YYYY-MM-DD`; DECIMAL → number; JSON → parsed; lists → arrays;
 * structs → objects; anything else → its string form.
 */
export function duckDbRowsOf(reader: DuckDBResultReader): Record<string, unknown>[] {
  const names = reader.columnNames();
  const json = jsonColumns(reader);
  return reader.getRows().map((values) => {
    const cells = duckDbCellsToJs(values, json);
    return Object.fromEntries(names.map((name, i) => [name, cells[i]]));
  });
}

/** Which columns of a result are JSON (their text is parsed: see `duckDbCellsToJs`). */
export function jsonColumns(result: { columnCount: number; columnType(index: number): { alias?: string } }): boolean[] {
  return Array.from({ length: result.columnCount }, (_, i) => result.columnType(i).alias === 'JSON');
}

/** One row's values as plain JS values (see `duckDbValueToJs`), the text of a JSON column parsed. */
export function duckDbCellsToJs(values: readonly DuckDBValue[], json: readonly boolean[]): unknown[] {
  return json.map((isJson, i) => {
    const value = values[i] ?? null;
    return isJson && typeof value === 'string' ? parseJson(value) : duckDbValueToJs(value);
  });
}

/** One DuckDB value as a plain JS value (see `duckDbRowsOf`). */
export function duckDbValueToJs(value: DuckDBValue): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
    return value;
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (value instanceof DuckDBTimestampTZValue || value instanceof DuckDBTimestampValue)
    return isoOfMicros(value.micros, value.toString());
  if (value instanceof DuckDBTimestampMillisecondsValue) return isoOfMicros(value.millis * 1000n, value.toString());
  if (value instanceof DuckDBTimestampSecondsValue) return isoOfMicros(value.seconds * 1_000_000n, value.toString());
  if (value instanceof DuckDBTimestampNanosecondsValue) return isoOfMicros(value.nanos / 1000n, value.toString());
  if (value instanceof DuckDBDateValue) return value.toString();
  if (value instanceof DuckDBDecimalValue) return value.toDouble();
  if (value instanceof DuckDBListValue || value instanceof DuckDBArrayValue) return value.items.map(duckDbValueToJs);
  if (value instanceof DuckDBStructValue)
    return Object.fromEntries(Object.entries(value.entries).map(([k, v]) => [k, duckDbValueToJs(v)]));
  if (value instanceof DuckDBMapValue)
    return value.entries.map((e) => ({ key: duckDbValueToJs(e.key), value: duckDbValueToJs(e.value) }));
  return String(value);
}

function isoOfMicros(micros: bigint, fallback: string): string {
  const ms = Number(micros / 1000n);
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? fallback : date.toISOString();
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

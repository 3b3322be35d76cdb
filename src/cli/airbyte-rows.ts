import { quoteIdentifier } from '../destinations/identifiers.js';
import type { Destination } from '../destinations/destination.js';
import type { TableReport } from './stream-tables.js';

/** Rows read and emitted at a time (DuckDB answers in its own vector size, 2,048): what `airbyte read` holds of a table at once. */
const ROWS_PER_READ = 2_000;

/**
 * Which rows of a table to emit: those the run loaded, after `afterMs` (the `_loaded_at` of the
 * last row emitted: units commit one at a time, each stamping later than the one before, so this
 * is exactly what committed since); or, at the end of a full refresh, the current rows other runs
 * loaded (history: the open versions), the run's own being emitted as they committed.
 */
export type RowFilter = { loadedBy: string; afterMs?: number } | { currentExcept: string };

/**
 * A table's rows to emit, a chunk at a time as one query streams them (never a whole table, nor a
 * sort of it); none when the table is not there yet.
 */
export async function* rowsToEmit(
  destination: Destination,
  table: TableReport,
  filter: RowFilter,
): AsyncGenerator<Record<string, unknown>[]> {
  if (!(await destination.hasTable(table.table))) return;
  const columns = await columnsOf(destination, table.table);
  const from = `${quoteIdentifier(destination.schema, 'schema')}.${quoteIdentifier(table.table, 'table')}`;
  const select = `select ${columns.map((c) => quoteIdentifier(c, 'column')).join(', ')} from ${from} where ${whereOf(table, filter)}`;
  for await (const rows of destination.readQueryChunks(select, ROWS_PER_READ))
    yield rows.map((values) => Object.fromEntries(columns.map((column, i) => [column, values[i]])));
}

/** The `_loaded_at` of a row read by `rowsToEmit`, in ms (DuckDB reads it as ISO text, Postgres may as a Date). */
export function loadedAtMs(row: Record<string, unknown>): number {
  const value = row._loaded_at;
  return value instanceof Date ? value.getTime() : Date.parse(String(value));
}

// The read-only path streams and takes no parameters: values are literals, their quotes doubled.
function whereOf(table: TableReport, filter: RowFilter): string {
  if ('currentExcept' in filter) {
    const open = table.writeMode === 'history' && !table.parent ? ' and _valid_to is null' : '';
    return `_run_id is distinct from ${literal(filter.currentExcept)}${open}`;
  }
  const after =
    filter.afterMs === undefined
      ? ''
      : ` and _loaded_at > cast(${literal(new Date(filter.afterMs).toISOString())} as timestamptz)`;
  return `_run_id = ${literal(filter.loadedBy)}${after}`;
}

function literal(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** A table's columns in their order, as the destination holds them (evolved columns included). */
async function columnsOf(destination: Destination, table: string): Promise<string[]> {
  const rows = await destination.query<{ column_name: string }>(
    'select column_name from information_schema.columns where table_schema = $1 and table_name = $2 order by ordinal_position',
    [destination.schema, table],
  );
  return rows.map((row) => row.column_name);
}

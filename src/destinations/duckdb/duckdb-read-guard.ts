import type { DuckDBConnection } from '@duckdb/node-api';
import { NotReadOnlyError, OutsideWarehouseError } from '../destination-error.js';

/**
 * Table functions a user's select may call: they compute rows or read DuckDB's own catalog. Any
 * other (`read_csv`, `glob`, `read_text`, `query_table`, an extension's scanner…) may reach a file,
 * a program or another database.
 */
const INSIDE_TABLE_FUNCTIONS = /^(range|generate_series|unnest|duckdb_[a-z_]+|pragma_table_info|pragma_storage_info)$/;

/** The `error_type` DuckDB's `json_serialize_sql` gives a statement that is no select (its own wording). */
const DUCKDB_CANNOT_SERIALIZE = 'not implemented';

/**
 * A table name DuckDB would read as a file (a replacement scan: `from 'crm.csv'`, `from '/etc/x'`):
 * a path separator, a URL scheme or a file extension.
 */
const FILE_LIKE_NAME = /[/\\:]|\.[a-z0-9]{1,8}$/i;

/**
 * Refuses a select that reaches outside the warehouse, before it is prepared: the statement is
 * parsed by DuckDB (`json_serialize_sql`) and each table it reads is checked: a table function
 * not in {@link INSIDE_TABLE_FUNCTIONS}, or a table named like a file, is refused. A process
 * that only reads (`query`, `status`, `report`) also runs with external access off; this guard
 * holds where the same process writes (a sync's `seeds.*.sql`).
 */
export async function refuseOutsideReads(connection: DuckDBConnection, sql: string): Promise<void> {
  const parsed = await connection.runAndReadAll('select json_serialize_sql($1::varchar) as tree', [sql]);
  const tree = JSON.parse(String(parsed.getRowObjectsJson()[0]?.tree ?? '{}')) as {
    error?: boolean;
    error_type?: string;
  };
  // Only a select serializes; anything else (an EXPORT, a COPY, a PRAGMA) is refused unprepared: preparing an
  // EXPORT already makes its folder. A syntax error is left for the prepare to name.
  if (tree.error === true && tree.error_type === DUCKDB_CANNOT_SERIALIZE)
    throw new NotReadOnlyError('a statement that is not a select');
  const outside = outsideReadsOf(tree);
  if (outside.length > 0) throw new OutsideWarehouseError(outside.join(', '));
}

/** What in a parsed statement reads outside the warehouse, named for a message (function names, never a path's text). */
export function outsideReadsOf(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) {
    for (const child of node) outsideReadsOf(child, found);
    return found;
  }
  if (node === null || typeof node !== 'object') return found;
  const record = node as Record<string, unknown>;
  if (record.type === 'TABLE_FUNCTION') {
    const name = String((record.function as { function_name?: unknown } | undefined)?.function_name ?? '');
    if (!INSIDE_TABLE_FUNCTIONS.test(name)) found.push(`the table function ${name}`);
  }
  if (record.type === 'BASE_TABLE' && FILE_LIKE_NAME.test(String(record.table_name ?? '')))
    found.push('a table named like a file');
  for (const value of Object.values(record)) outsideReadsOf(value, found);
  return found;
}

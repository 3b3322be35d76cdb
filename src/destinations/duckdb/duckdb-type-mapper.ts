import type { LogicalType } from '../../normalize/table-layout.js';

const sqlTypes = {
  text: 'VARCHAR',
  bigint: 'BIGINT',
  double: 'DOUBLE',
  boolean: 'BOOLEAN',
  timestamp: 'TIMESTAMPTZ',
  json: 'JSON',
} as const satisfies Record<LogicalType, string>;

/** DuckDB column types of the logical types, and back. */
export const duckDbTypeMapper = {
  /** The DuckDB type of a logical column type. */
  sqlType(type: LogicalType): string {
    return sqlTypes[type];
  },
  /** The logical type of a DuckDB `information_schema.columns.data_type` (unknown types count as text). */
  logicalType(dataType: string): LogicalType {
    const type = dataType.toUpperCase();
    if (type === 'JSON') return 'json';
    if (/^(BIGINT|INTEGER|SMALLINT|TINYINT|HUGEINT|UBIGINT|UINTEGER|USMALLINT|UTINYINT|INT\d*)$/.test(type))
      return 'bigint';
    if (/^(DOUBLE|FLOAT|REAL|DECIMAL.*|NUMERIC.*)$/.test(type)) return 'double';
    if (type === 'BOOLEAN') return 'boolean';
    if (type.startsWith('TIMESTAMP')) return 'timestamp';
    return 'text';
  },
};

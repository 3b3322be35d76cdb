import type { LogicalType } from '../../normalize/table-layout.js';

const sqlTypes = {
  text: 'text',
  bigint: 'bigint',
  double: 'double precision',
  boolean: 'boolean',
  timestamp: 'timestamptz',
  json: 'jsonb',
} as const satisfies Record<LogicalType, string>;

/** Postgres column types of the logical types, and back. */
export const postgresTypeMapper = {
  /** The Postgres type of a logical column type. */
  sqlType(type: LogicalType): string {
    return sqlTypes[type];
  },
  /** The logical type of a Postgres `information_schema.columns.data_type` (unknown types count as text). */
  logicalType(dataType: string): LogicalType {
    const type = dataType.toLowerCase();
    if (type === 'jsonb' || type === 'json') return 'json';
    if (type === 'bigint' || type === 'integer' || type === 'smallint') return 'bigint';
    if (type === 'double precision' || type === 'real' || type === 'numeric') return 'double';
    if (type === 'boolean') return 'boolean';
    if (type.startsWith('timestamp')) return 'timestamp';
    return 'text';
  },
};

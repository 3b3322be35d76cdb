import pg from 'pg';
import type { CustomTypesConfig } from 'pg';

const INT8 = 20;
const NUMERIC = 1700;
const DATE = 1082;
const TIMESTAMP = 1114;
const TIMESTAMPTZ = 1184;

const parseTimestamp = pg.types.getTypeParser(TIMESTAMPTZ);
const parseTimestampNoZone = pg.types.getTypeParser(TIMESTAMP);

/**
 * Result parsing of the Postgres backend, matching DuckDB's: int8 → number when safe, else a
 * decimal string; numeric → number; timestamps → ISO 8601 strings; date → `YYYY-MM-DD`; json and
 * jsonb → parsed (pg's default). Scoped to our pool, so other `pg` users are not affected.
 */
export const postgresTypeParsers: CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    switch (oid) {
      case INT8:
        return (value: string) => (Number.isSafeInteger(Number(value)) ? Number(value) : value);
      case NUMERIC:
        return (value: string) => Number(value);
      case DATE:
        return (value: string) => value;
      case TIMESTAMPTZ:
        return (value: string) => iso(parseTimestamp(value) as unknown, value);
      case TIMESTAMP:
        return (value: string) => iso(parseTimestampNoZone(value) as unknown, value);
      default:
        return format === 'binary' ? pg.types.getTypeParser(oid, 'binary') : pg.types.getTypeParser(oid, 'text');
    }
  }) as CustomTypesConfig['getTypeParser'],
};

function iso(parsed: unknown, raw: string): string {
  return parsed instanceof Date && !Number.isNaN(parsed.getTime()) ? parsed.toISOString() : raw;
}

import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import copyStreams from 'pg-copy-streams';
import type { DestinationCapabilities, LockOptions } from '../destination.js';
import { DestinationUnavailableError } from '../destination-error.js';
import type { ShapedRows } from '../record-shaper.js';
import type { BulkTarget, SqlDialectTraits, SqlSession, Statement } from '../sql-destination.js';
import { SqlDestination } from '../sql-destination.js';
import { postgresConnection } from './postgres-connection.js';
import { PostgresAdvisoryLock } from './postgres-advisory-lock.js';
import { encodeCopyRows } from './postgres-copy-encoder.js';
import { postgresTypeMapper } from './postgres-type-mapper.js';
import { postgresTypeParsers } from './postgres-type-parsers.js';

/** Settings of a Postgres destination. */
export interface PostgresDestinationOptions {
  /** Connection URL, e.g. `postgres://user@host:5432/db`. */
  url: string;
  /** Schema of the tables. Default: `seedline`. */
  schema?: string;
  /** Connections in the pool (units and queries; the lock has its own). Default: 4. */
  poolSize?: number;
}

/**
 * The Postgres backend (`pg`). Bulk writes go through `COPY … FROM STDIN` (text format) inside
 * the unit's transaction, straight into the tables (history mode: into temporary staging tables). The single-writer
 * lock is an advisory lock per schema on a connection of its own.
 *
 * @example
 * ```ts
 * const dest = new PostgresDestination({ url: 'postgres://127.0.0.1:5432/warehouse' });
 * await dest.lock({ holder: 'seedline sync (pid 42)', wait: true });
 * ```
 */
export class PostgresDestination extends SqlDestination {
  readonly kind = 'postgres' as const;
  readonly capabilities: DestinationCapabilities = { bulkLoad: true, concurrentReaders: true, binaryJson: true };
  protected readonly traits: SqlDialectTraits = {
    sqlType: postgresTypeMapper.sqlType,
    logicalType: postgresTypeMapper.logicalType,
    rejectNul: true,
    indexes: true,
    begin: 'BEGIN',
    // An unanalyzed staging table looks small and uniform to the planner, which then hashes the whole child table; an array probes the index.
    inList: (column, values) => sql`${column} = any(array(${values}))`,
  };
  protected readonly db: Kysely<any>;
  private readonly pool: pg.Pool;
  private readonly advisoryLock: PostgresAdvisoryLock;
  private closed = false;

  constructor(options: PostgresDestinationOptions) {
    super(options.schema ?? 'seedline');
    this.pool = new pg.Pool({ ...postgresConnection(options.url), max: options.poolSize ?? 4, types: postgresTypeParsers });
    // An idle client's network error must not crash the process; the next checkout reconnects.
    this.pool.on('error', () => undefined);
    this.db = new Kysely<any>({ dialect: new PostgresDialect({ pool: this.pool }) });
    this.advisoryLock = new PostgresAdvisoryLock(options.url, this.schema);
  }

  async lock(options: LockOptions): Promise<void> {
    try {
      await this.advisoryLock.acquire(options.holder, options.wait ?? false);
    } catch (error) {
      if (error instanceof Error && 'code' in error && String(error.code).startsWith('SEEDLINE_')) throw error;
      throw new DestinationUnavailableError(`Postgres schema ${this.schema}`, error);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.advisoryLock.release();
    await this.db.destroy();
  }

  protected async openSession(): Promise<SqlSession> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw new DestinationUnavailableError(`Postgres schema ${this.schema}`, error);
    }
    return new PostgresSession(client);
  }
}

class PostgresSession implements SqlSession {
  constructor(private readonly client: pg.PoolClient) {}

  async run(statement: Statement): Promise<number> {
    const result = await this.client.query(statement.sql, statement.parameters as unknown[]);
    return result.rowCount ?? 0;
  }

  async all(statement: Statement): Promise<Record<string, unknown>[]> {
    const result = await this.client.query(statement.sql, statement.parameters as unknown[]);
    return result.rows as Record<string, unknown>[];
  }

  async bulkInsert(target: BulkTarget, rows: ShapedRows): Promise<void> {
    const list = rows.shape.columns.map((c) => `"${c.name}"`).join(', ');
    const table = target.schema === null ? `"${target.table}"` : `"${target.schema}"."${target.table}"`;
    // Table names are validated identifiers and staging names are ours; the data travels escaped in COPY text.
    const copy = this.client.query(copyStreams.from(`COPY ${table} (${list}) FROM STDIN`));
    const types = rows.shape.columns.map((c) => c.type);
    await pipeline(Readable.from(encodeCopyRows(types, rows.columns, rows.length, rows.constant)), copy);
  }

  async release(broken = false): Promise<void> {
    this.client.release(broken);
  }
}

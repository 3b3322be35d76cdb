import { finished, pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import copyStreams from 'pg-copy-streams';
import type { DestinationCapabilities, LockOptions } from '../destination.js';
import { DestinationLockLostError, DestinationUnavailableError, NotReadOnlyError } from '../destination-error.js';
import type { ShapedRows } from '../../normalize/record-shaper.js';
import type { LogicalType } from '../../normalize/table-layout.js';
import type { BulkTarget, SqlDialectTraits, SqlSession, Statement } from '../sql/sql-session.js';
import { SqlDestination } from '../sql/sql-destination.js';
import { postgresConnection } from './postgres-connection.js';
import { outsideWarehouseOf, readerRoleOf } from './postgres-reader-role.js';
import { PostgresAdvisoryLock } from './postgres-advisory-lock.js';
import { PostgresFleetStore } from './postgres-fleet-store.js';
import type { FleetStore } from '../fleet-store.js';
import { encodeCopyBinary, encodeCopyRows } from './postgres-copy-encoder.js';
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
  /**
   * A session of the pool idle inside a transaction this long is ended by the server, releasing
   * its locks: a worker sets its lease, so a paused worker never holds rows the worker that took its
   * item over must write. Default: never.
   */
  idleInTransactionTimeoutMs?: number;
}

/**
 * The Postgres backend (`pg`). Bulk writes go through `COPY … FROM STDIN` inside the unit's
 * transaction, straight into the tables (history mode: into temporary staging tables): binary
 * format when the table's columns have the types we create, text format otherwise. A write's
 * statements are sent one after the other without waiting in between, so the server loads one
 * table while the next one's rows are encoded. The single-writer lock is an advisory lock per
 * schema on a connection of its own.
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
    pipelined: true,
    arrayKeys: true,
    keyFilter: false,
    deferredMerge: false,
    stagedUpserts: false,
    ddlLock: (schema) => ({
      sql: 'select pg_advisory_xact_lock(hashtextextended($1, 0))',
      parameters: [`seedline-ddl:${schema}`],
    }),
  };
  protected readonly db: Kysely<any>;
  private readonly pool: pg.Pool;
  private readonly advisoryLock: PostgresAdvisoryLock;
  private closed = false;

  constructor(options: PostgresDestinationOptions) {
    super(options.schema ?? 'seedline');
    this.pool = new pg.Pool({
      ...postgresConnection(options.url),
      max: options.poolSize ?? 4,
      types: postgresTypeParsers,
      ...(options.idleInTransactionTimeoutMs
        ? { idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs }
        : {}),
    });
    // An idle client's network error must not crash the process; the next checkout reconnects.
    this.pool.on('error', () => undefined);
    this.db = new Kysely<any>({ dialect: new PostgresDialect({ pool: this.pool }) });
    this.advisoryLock = new PostgresAdvisoryLock(options.url, this.schema);
  }

  /** The fleet's tables in this schema, for `seedline worker` (see docs/workers.md). */
  fleetStore(): FleetStore {
    return (this.fleet ??= new PostgresFleetStore(this.pool, this.schema));
  }

  private fleet: FleetStore | undefined;

  async lock(options: LockOptions): Promise<void> {
    try {
      await this.advisoryLock.acquire(options.holder, options.wait ?? false, options.signal, options.shared ?? false);
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
    // Sessions come from the pool directly, so kysely may never have taken it over to end it:
    // its idle clients would keep the process alive for their idle timeout (10 s).
    if (!this.pool.ended) await this.pool.end();
  }

  /** A unit commits only while the advisory lock taken by `lock` is still held (nothing to check when it was never taken). */
  protected override assertWriterLock(): void {
    const reason = this.advisoryLock.lostBecause;
    if (reason !== null) throw new DestinationLockLostError(`Postgres schema ${this.schema}`, reason, { unit: true });
  }

  protected async openSession(): Promise<SqlSession> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw new DestinationUnavailableError(`Postgres schema ${this.schema}`, error);
    }
    return new PostgresSession(client, () => (this.readerRole ??= readerRoleOf(client)));
  }

  /** The role users' selects run as (see `readerRoleOf`), found once by the first session that reads. */
  private readerRole: Promise<string | null> | undefined;
}

/** Type OIDs of the column types `postgresTypeMapper` creates: binary COPY writes exactly these. */
const TYPE_OIDS: Record<LogicalType, number> = {
  text: 25,
  bigint: 20,
  double: 701,
  boolean: 16,
  timestamp: 1184,
  json: 3802,
};
/** Encoded COPY data buffered ahead of the server per table, at most; beyond it the writer waits. */
const COPY_BUFFER = 64 << 20;

class PostgresSession implements SqlSession {
  /** Column type OIDs of the tables announced by `prepareBulk`, by `schema.table`. */
  private readonly columnTypes = new Map<string, Map<string, number>>();

  /** The last statement sent; the next one is sent once it is done (pg takes one query at a time). */
  private tail: Promise<unknown> = Promise.resolve();

  /** The error that ended the connection while checked out; every later statement fails with it. */
  private failure: Error | null = null;
  private released = false;
  // pg-pool removes its idle 'error' listener on checkout: without one of ours a drop (e.g. while idle in transaction) is an uncaught exception.
  private readonly onError = (error: Error): void => {
    this.failure ??= error;
  };

  constructor(
    private readonly client: pg.PoolClient,
    /** The role a user's select runs as; null: the connection's own user. */
    private readonly readerRole: () => Promise<string | null>,
  ) {
    client.on('error', this.onError);
  }

  /** Begins the read-only transaction a user's select runs in, as the reader role when there is one. */
  private async beginUserRead(): Promise<void> {
    const role = await this.readerRole();
    await this.send(() => this.client.query('begin transaction read only'));
    if (role) await this.send(() => this.client.query(`set local role ${role}`));
  }

  async prepareBulk(tables: readonly BulkTarget[]): Promise<void> {
    const wanted = tables.filter((t) => t.schema !== null && !this.columnTypes.has(`${t.schema}.${t.table}`));
    if (wanted.length === 0) return;
    // Read once per unit: a column retyped behind our back since ensureTable (say bigint → integer) gets text COPY, which converts.
    const result = await this.send(() =>
      this.client.query<{ table: string; column: string; oid: number }>(
        `select c.relname as table, a.attname as column, a.atttypid::int as oid
         from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = $1 and c.relname = any($2::text[]) and a.attnum > 0 and not a.attisdropped`,
        [wanted[0]!.schema, wanted.map((t) => t.table)],
      ),
    );
    for (const t of wanted) this.columnTypes.set(`${t.schema}.${t.table}`, new Map());
    for (const row of result.rows) this.columnTypes.get(`${wanted[0]!.schema}.${row.table}`)?.set(row.column, row.oid);
  }

  async run(statement: Statement): Promise<number> {
    const result = await this.send(() => this.client.query(statement.sql, statement.parameters as unknown[]));
    return result.rowCount ?? 0;
  }

  async all(statement: Statement): Promise<Record<string, unknown>[]> {
    const result = await this.send(() => this.client.query(statement.sql, statement.parameters as unknown[]));
    return result.rows as Record<string, unknown>[];
  }

  async readOnly(sql: string): Promise<Record<string, unknown>[]> {
    await this.beginUserRead();
    try {
      // The extended protocol takes one statement, so nothing can end the read-only transaction and go on.
      // `queryMode` is pg's (8.8 on), missing from its type declarations.
      const result = await this.send(() => this.client.query({ text: sql, queryMode: 'extended' } as pg.QueryConfig));
      return result.rows as Record<string, unknown>[];
    } catch (error) {
      throw notReadOnlyOf(error) ?? outsideWarehouseOf(error) ?? error;
    } finally {
      await this.send(() => this.client.query('rollback')).catch(() => undefined);
    }
  }

  /** A cursor over the user's select in a read-only transaction, fetched `size` rows at a time. */
  async *readOnlyChunks(sql: string, size: number): AsyncGenerator<unknown[][]> {
    await this.beginUserRead();
    try {
      // A cursor is declared for a select or values only, and the extended protocol takes one statement.
      await this.send(() =>
        this.client.query({
          text: `declare seedline_user_read no scroll cursor for ${sql}`,
          queryMode: 'extended',
        } as pg.QueryConfig),
      ).catch(async (error: unknown) => {
        throw notReadOnlyOf(error) ?? outsideWarehouseOf(error) ?? (await this.refusalOfNonSelect(error, sql)) ?? error;
      });
      for (;;) {
        const result = await this.send(() =>
          this.client.query({
            text: `fetch forward ${Math.max(1, Math.floor(size))} from seedline_user_read`,
            rowMode: 'array',
          }),
        ).catch((error: unknown) => {
          throw outsideWarehouseOf(error) ?? error;
        });
        if (result.rows.length === 0) return;
        yield result.rows as unknown[][];
      }
    } finally {
      await this.send(() => this.client.query('rollback')).catch(() => undefined);
    }
  }

  /**
   * Why a cursor could not be declared for `sql` when the cause is that it is no select (a write,
   * a `show`): then the statement is tried as `readOnly` tries it, which refuses writes and runs
   * nothing else. Undefined for any other cause (a typo stays the server's own message).
   */
  private async refusalOfNonSelect(error: unknown, sql: string): Promise<NotReadOnlyError | undefined> {
    if ((error as { code?: string }).code !== '42601') return undefined;
    await this.send(() => this.client.query('rollback'));
    try {
      await this.readOnly(sql);
    } catch (refused) {
      return refused instanceof NotReadOnlyError ? refused : undefined;
    }
    return new NotReadOnlyError('a statement that is not a select');
  }

  async bulkInsert(target: BulkTarget, rows: ShapedRows): Promise<void> {
    const list = rows.shape.columns.map((c) => `"${c.name}"`).join(', ');
    const table = target.schema === null ? `"${target.table}"` : `"${target.schema}"."${target.table}"`;
    const oids = target.schema === null ? undefined : this.columnTypes.get(`${target.schema}.${target.table}`);
    const binary = oids !== undefined && rows.shape.columns.every((c) => oids.get(c.name) === TYPE_OIDS[c.type]);
    // Table names are validated identifiers and staging names are ours; the data travels length-prefixed (binary) or escaped (text).
    // The statement takes its place in line before the first await (see SqlDialectTraits.pipelined); its data is encoded
    // meanwhile and waits in the corked stream until the server reaches it, up to COPY_BUFFER.
    const copy = copyStreams.from(`COPY ${table} (${list}) FROM STDIN${binary ? ' (FORMAT binary)' : ''}`, {
      highWaterMark: COPY_BUFFER,
    });
    const sent = this.send(() => finished(this.client.query(copy)));
    const types = rows.shape.columns.map((c) => c.type);
    const chunks: Iterable<string | Buffer> = binary
      ? encodeCopyBinary(types, rows.columns, rows.length, rows.constant, 1 << 18)
      : encodeCopyRows(types, rows.columns, rows.length, rows.constant, 1 << 18);
    await Promise.all([pipeline(Readable.from(yieldingEach(chunks)), copy), sent]);
  }

  /** Sends a statement after the ones before it; a failed one does not hold back the rest (they fail in the aborted transaction). */
  private send<T>(statement: () => Promise<T>): Promise<T> {
    const next = (): Promise<T> => (this.failure ? Promise.reject(this.failure) : statement());
    const result = this.tail.then(next, next);
    this.tail = result.catch(() => undefined);
    return result;
  }

  /** Returns the client to the pool, or discards it when `broken` or its connection failed; later calls do nothing. */
  async release(broken = false): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.client.removeListener('error', this.onError);
    this.client.release(broken || this.failure !== null);
  }
}

/** The items of `items`, letting the event loop run between them (pg answers the server, the socket drains). */
async function* yieldingEach<T>(items: Iterable<T>): AsyncGenerator<T> {
  for (const item of items) {
    yield item;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** The refusal a server error stands for when a user's SQL was more than one read (else undefined). */
function notReadOnlyOf(error: unknown): NotReadOnlyError | undefined {
  const { code, message } = error as { code?: string; message?: string };
  // 25006 read_only_sql_transaction: a write in the read-only transaction.
  if (code === '25006')
    return new NotReadOnlyError(`a statement that writes (${message ?? 'refused in a read-only transaction'})`);
  if (code === '42601' && /multiple commands/.test(message ?? ''))
    return new NotReadOnlyError('more than one statement');
  return undefined;
}

import { Kysely, sql } from 'kysely';
import {
  DuckDBDataChunk,
  DuckDBTimestampTZValue,
  DuckDBTypeId,
  DuckDBVector,
  JSToDuckDBValueConverter,
  StatementType,
} from '@duckdb/node-api';
import type { DuckDBConnection, DuckDBPreparedStatement, DuckDBType, DuckDBValue } from '@duckdb/node-api';
import type { DestinationCapabilities, LockOptions } from '../destination.js';
import { DestinationLockedError, LockWaitAbortedError, NotReadOnlyError } from '../destination-error.js';
import { sleep } from '../../util/sleep.js';
import type { CellValue, ShapedRows } from '../../normalize/record-shaper.js';
import type { BulkTarget, ReadOptions, SqlDialectTraits, SqlSession, Statement } from '../sql/sql-session.js';
import { SqlDestination } from '../sql/sql-destination.js';
import { DuckDbDialect } from './duckdb-dialect.js';
import type { LedgerKeyFilters } from '../sql/ledger-key-filters.js';
import type { SharedDuckDbFile } from './duckdb-file-lock.js';
import { duckDbFileLock } from './duckdb-file-lock.js';
import { bindDuckDbParameters } from './duckdb-parameters.js';
import { duckDbTypeMapper } from './duckdb-type-mapper.js';
import { duckDbCellsToJs, duckDbRowsOf, jsonColumns } from './duckdb-value-converter.js';
import { DuckDbChunkWriter } from './duckdb-chunk-writer.js';
import { refuseOutsideReads } from './duckdb-read-guard.js';
import { duckDbMemoryModes, type DuckDbMemoryModes } from './duckdb-memory-modes.js';

/** Settings of a DuckDB destination. */
export interface DuckDbDestinationOptions {
  /** Database file (`:memory:` for a private in-memory database). */
  path: string;
  /** Schema of the tables. Default: `seedline`. */
  schema?: string;
  /**
   * DuckDB settings applied when this process first opens the file (e.g. `{ memory_limit: '1GB' }`).
   * Default: `{ preserve_insertion_order: 'false', memory_limit: '128MB', checkpoint_threshold: '64MB' }`,
   * merged under the given ones; unless `memory_limit` or `checkpoint_threshold` is given, the file
   * opens with 64MB and 16MB and takes the defaults once the process works on stored rows (see `DuckDbMemoryModes`).
   */
  settings?: Record<string, string>;
  /** Rows appended after which the file is closed and opened again between units, to give back DuckDB's native memory. Default: `DEFAULT_ROWS_BETWEEN_REOPENS` (250,000). */
  rowsBetweenReopens?: number;
}

/** A cell as the vector of the table's column type takes it. */
type ToVector = (value: NonNullable<CellValue>, type: DuckDBType) => DuckDBValue;

const toVarchar: ToVector = (v) => (typeof v === 'string' ? v : String(v));

// Small integers (child `_index`, counts) come back as the same bigint each time instead of a new one per value.
const SMALL_BIGINTS = Array.from({ length: 1024 }, (_, i) => BigInt(i));

/** A number or bigint as the bigint a BIGINT vector takes. */
function toBigInt(v: number | bigint): bigint {
  if (typeof v === 'bigint') return v;
  return v >= 0 && v < 1024 && Number.isInteger(v) ? SMALL_BIGINTS[v]! : BigInt(v);
}

// Microseconds as a double are exact up to 2^53 (year ~2255): one bigint conversion instead of two and a multiply.
const EXACT_MICROS_MS = 9_000_000_000_000;

const toVector: Partial<Record<DuckDBTypeId, ToVector>> = {
  [DuckDBTypeId.VARCHAR]: toVarchar,
  [DuckDBTypeId.BIGINT]: (v) => toBigInt(v as number | bigint),
  [DuckDBTypeId.DOUBLE]: (v) => Number(v),
  [DuckDBTypeId.BOOLEAN]: (v) => v,
  [DuckDBTypeId.TIMESTAMP_TZ]: (v) =>
    new DuckDBTimestampTZValue(
      Math.abs(v as number) < EXACT_MICROS_MS ? BigInt((v as number) * 1000) : BigInt(v as number) * 1000n,
    ),
};

// A column someone changed behind our back (INTEGER, DECIMAL, …): the library converts, and refuses what does not fit.
const toOtherVector: ToVector = (v, type) => JSToDuckDBValueConverter(v, type, JSToDuckDBValueConverter);

/**
 * Settings applied unless the caller sets them: no insertion order to keep lets DuckDB stream
 * `INSERT … SELECT` without buffering it whole; a 128 MB buffer pool instead of DuckDB's 80% of
 * RAM keeps a long sync's memory flat (committed rows beyond it go to the file or to temporary
 * files, and large queries spill instead of growing the process). A sync fills whatever limit it
 * is given: 256 MB cost ~90-100 MB more peak RSS from 100k seeds up, in about the same time
 * (bench/README.md). A checkpoint every 64 MB of WAL instead of 16 MB: each one rewrites the last,
 * partly filled row group of every table it touches, and at 16 MB a load spent ~20% more CPU on
 * them; it still runs inside a unit's COMMIT, off the main thread while the next unit is shaped,
 * so little is left for the close. A load of new keys runs leaner until it meets stored rows
 * (`DuckDbMemoryModes`).
 */
const DEFAULT_SETTINGS: Record<string, string> = {
  preserve_insertion_order: 'false',
  memory_limit: '128MB',
  checkpoint_threshold: '64MB',
};

/**
 * The DuckDB backend (`@duckdb/node-api`). The file is opened lazily (by `lock` or the first
 * statement) and shared by destinations of the same process; its folder is created when missing.
 * Bulk writes append data chunks to the tables through the unit's own connection, inside its open
 * transaction: the appender's periodic flushes join that transaction, so they can never commit
 * part of a unit (history mode stages into temporary tables first).
 *
 * @example
 * ```ts
 * const dest = new DuckDbDestination({ path: 'data/warehouse.duckdb' });
 * await dest.lock({ holder: 'seedline sync (pid 42)' });
 * ```
 */
export class DuckDbDestination extends SqlDestination {
  readonly kind = 'duckdb' as const;
  readonly capabilities: DestinationCapabilities = { bulkLoad: true, concurrentReaders: false, binaryJson: false };
  protected readonly traits: SqlDialectTraits = {
    sqlType: duckDbTypeMapper.sqlType,
    logicalType: duckDbTypeMapper.logicalType,
    rejectNul: true,
    indexes: false,
    begin: 'BEGIN TRANSACTION',
    inList: (column, values) => sql`${column} in (${values})`,
    pipelined: false,
    arrayKeys: false,
    keyFilter: true,
    deferredMerge: true,
    stagedUpserts: true,
  };
  protected readonly db: Kysely<any>;
  private readonly path: string;
  private readonly memory: DuckDbMemoryModes;
  private readonly rowsBetweenReopens: number | undefined;
  private file: SharedDuckDbFile | null = null;
  private opening: Promise<SharedDuckDbFile> | null = null;
  /** Connections this destination took from the file and has not given back. */
  private readonly held = new Set<DuckDBConnection>();
  private readonly chunks = new DataChunkCache();
  private closed = false;

  constructor(options: DuckDbDestinationOptions) {
    super(options.schema ?? 'seedline');
    this.path = options.path;
    this.memory = duckDbMemoryModes(DEFAULT_SETTINGS, options.settings);
    this.rowsBetweenReopens = options.rowsBetweenReopens;
    this.db = new Kysely<any>({
      dialect: new DuckDbDialect({
        acquire: () => this.acquire(),
        release: (connection) => this.releaseConnection(connection),
      }),
    });
  }

  async lock(options: LockOptions): Promise<void> {
    for (;;) {
      try {
        const file = await this.ensureOpen();
        duckDbFileLock.claim(file, this, options.holder);
        return;
      } catch (error) {
        if (!(error instanceof DestinationLockedError) || !options.wait) throw error;
        await sleep(200, options.signal);
        if (options.signal?.aborted) throw new LockWaitAbortedError(`DuckDB file ${this.path}`);
      }
    }
  }

  /** The open file's: every destination of this process writing it shares them. */
  protected override async ledgerKeyFilters(): Promise<LedgerKeyFilters> {
    return (await this.ensureOpen()).ledgerKeys;
  }

  /** The writer settles its own merges: another destination of this process holding the slot may have a unit under way. */
  protected override async asWriter(fn: () => Promise<void>): Promise<void> {
    const file = await this.ensureOpen();
    if (file.writer?.owner === this) return fn();
    if (file.writer) return;
    duckDbFileLock.claim(file, this, `seedline, settling merges (pid ${process.pid})`);
    try {
      await fn();
    } finally {
      duckDbFileLock.unclaim(file, this);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.db.destroy();
    const file = this.file ?? (this.opening ? await this.opening.catch(() => null) : null);
    // A statement still running on one belongs to a destination being closed: its connection goes.
    for (const connection of this.held) file?.connections.release(connection, true);
    this.held.clear();
    this.chunks.clear();
    if (file) {
      duckDbFileLock.unclaim(file, this);
      duckDbFileLock.release(file);
    }
    this.file = null;
  }

  protected async openSession(): Promise<SqlSession> {
    const connection = await this.acquire();
    const connections = this.file!.connections;
    return new DuckDbSession(
      connection,
      this.chunks,
      (broken) => this.releaseConnection(connection, broken),
      (rows) => connections.appended(rows),
      (task) => connections.apart(task),
      () => connections.widen(connection),
    );
  }

  private async ensureOpen(): Promise<SharedDuckDbFile> {
    if (this.closed) throw new Error('This destination is closed');
    if (this.file) return this.file;
    // Its folder is never created here: a mistyped path would start an empty warehouse (see openSession).
    this.opening ??= duckDbFileLock.open(this.path, this.memory, this.rowsBetweenReopens);
    try {
      this.file = await this.opening;
      return this.file;
    } catch (error) {
      this.opening = null;
      throw error;
    }
  }

  private async acquire(): Promise<DuckDBConnection> {
    const file = await this.ensureOpen();
    const connection = await file.connections.acquire();
    this.held.add(connection);
    return connection;
  }

  private releaseConnection(connection: DuckDBConnection, broken = false): void {
    // Closing the destination gave it back already.
    if (!this.held.delete(connection)) return;
    this.file?.connections.release(connection, broken);
  }
}

/**
 * One data chunk per column-type list, reused by every bulk insert of the destination. A chunk's
 * native memory is freed only when V8 collects its wrapper, and V8 does not see that memory: a
 * chunk per insert left ~40 MB more peak RSS on the load bench. Safe to share because a bulk
 * insert fills and appends its chunk without yielding.
 */
class DataChunkCache {
  private readonly chunks = new Map<string, DuckDBDataChunk>();
  private readonly writers = new Map<string, DuckDbChunkWriter>();

  /** The chunk writer for `types` (see `DuckDbChunkWriter.supports`). */
  writer(types: readonly DuckDBType[]): DuckDbChunkWriter {
    const key = types.map((type) => type.toString()).join(',');
    let writer = this.writers.get(key);
    if (!writer) {
      writer = new DuckDbChunkWriter(types);
      this.writers.set(key, writer);
    }
    return writer;
  }

  /** A chunk for `types`, with every vector sized for a full chunk (the caller resets it). */
  get(types: readonly DuckDBType[]): DuckDBDataChunk {
    const key = types.map((type) => type.toString()).join(',');
    let chunk = this.chunks.get(key);
    if (!chunk) {
      chunk = DuckDBDataChunk.create(types);
      // Vectors are wrapped once, with the row count the chunk has then: make it the largest one used.
      chunk.rowCount = DuckDBVector.standardSize();
      for (let c = 0; c < types.length; c++) chunk.getColumnVector(c);
      this.chunks.set(key, chunk);
    }
    return chunk;
  }

  clear(): void {
    this.chunks.clear();
    this.writers.clear();
  }
}

class DuckDbSession implements SqlSession {
  constructor(
    private readonly connection: DuckDBConnection,
    private readonly chunks: DataChunkCache,
    private readonly onRelease: (broken: boolean) => void,
    private readonly onAppended: (rows: number) => void,
    private readonly apart: <T>(task: () => Promise<T>) => Promise<T>,
    private readonly widen: () => Promise<void>,
  ) {}

  async run(statement: Statement): Promise<number> {
    // Without parameters the statement goes in one native call instead of extract, prepare and execute: a COMMIT is
    // then under way as soon as `run` is called, while the caller goes on shaping the next unit.
    const parameters = statement.parameters.length > 0 ? bindDuckDbParameters(statement.parameters) : undefined;
    const execute = async () => (await this.connection.run(statement.sql, parameters)).rowsChanged;
    return CHECKPOINTS.test(statement.sql) ? this.apart(execute) : execute();
  }

  async all(statement: Statement, options?: ReadOptions): Promise<Record<string, unknown>[]> {
    const read = async () =>
      duckDbRowsOf(await this.connection.runAndReadAll(statement.sql, bindDuckDbParameters(statement.parameters)));
    if (!options?.scansLargeTable) return read();
    await this.widen();
    return this.apart(read);
  }

  /** Gives DuckDB the file's full memory settings, for the rest of its life in this process (see `DuckDbMemoryModes`). */
  workOnStoredRows(): Promise<void> {
    return this.widen();
  }

  async scan(statement: Statement, each: (row: readonly unknown[]) => void): Promise<void> {
    const result = await this.connection.stream(statement.sql, bindDuckDbParameters(statement.parameters));
    const row: unknown[] = [];
    for (;;) {
      const chunk = await result.fetchChunk();
      if (!chunk || chunk.rowCount === 0) return;
      const vectors = Array.from({ length: chunk.columnCount }, (_, c) => chunk.getColumnVector(c));
      for (let i = 0; i < chunk.rowCount; i++) {
        for (let c = 0; c < vectors.length; c++) row[c] = vectors[c]!.getItem(i);
        each(row);
      }
    }
  }

  /** A user's select may sort or join whole tables: it runs with the file's full memory settings. */
  async readOnly(sql: string): Promise<Record<string, unknown>[]> {
    const prepared = await this.selectOnly(sql);
    await this.widen();
    return duckDbRowsOf(await prepared.runAndReadAll());
  }

  /** DuckDB answers in chunks of its own vector size (2,048 rows), whatever `size` asks. */
  async *readOnlyChunks(sql: string): AsyncGenerator<unknown[][]> {
    const prepared = await this.selectOnly(sql);
    await this.widen();
    const result = await prepared.stream();
    // As `readOnly` reads them: a JSON column's text parsed.
    const json = jsonColumns(result);
    for (;;) {
      const chunk = await result.fetchChunk();
      if (!chunk || chunk.rowCount === 0) return;
      yield chunk.getRows().map((row) => duckDbCellsToJs(row, json));
    }
  }

  /** The statement prepared, when `sql` is exactly one select; else throws `NotReadOnlyError` and nothing runs. */
  private async selectOnly(sql: string): Promise<DuckDBPreparedStatement> {
    const extracted = await this.connection.extractStatements(sql);
    if (extracted.count !== 1) throw new NotReadOnlyError(`${extracted.count} statements`);
    // Before it is prepared: binding a file reader already opens the file (to sniff its columns).
    await refuseOutsideReads(this.connection, sql);
    const prepared = await extracted.prepare(0);
    // Only a select reads and nothing else: an EXPLAIN ANALYZE, a PRAGMA, a CALL or a COPY may change things.
    if (prepared.statementType !== StatementType.SELECT)
      throw new NotReadOnlyError(`a ${statementTypeName(prepared.statementType)} statement`);
    return prepared;
  }

  async bulkInsert(target: BulkTarget, rows: ShapedRows): Promise<void> {
    // Staging tables are temporary: they live in the `temp` catalog of this connection.
    const appender = await this.connection.createAppender(
      target.table,
      target.schema ?? 'main',
      target.schema === null ? 'temp' : null,
    );
    try {
      const types = Array.from({ length: appender.columnCount }, (_, i) => appender.columnType(i));
      const byName = new Map(rows.shape.columns.map((c, i) => [c.name, i]));
      const sources = target.columns.map((name) => byName.get(name) ?? -1);
      if (sources.length !== types.length)
        throw new Error(`Table ${target.table} has ${types.length} columns, expected ${sources.length}`);
      const size = DuckDBVector.standardSize();
      // The column types we create: filled straight from JS memory (see DuckDbChunkWriter).
      if (DuckDbChunkWriter.supports(types)) {
        const writer = this.chunks.writer(types);
        const values = sources.map((source) => (source >= 0 ? rows.columns[source]! : null));
        for (let start = 0; start < rows.length; start += size)
          writer.append(appender, values, start, Math.min(size, rows.length - start));
        appender.closeSync();
        this.onAppended(rows.length);
        return;
      }
      // A column retyped behind our back (INTEGER, DECIMAL, …): node-api's vectors convert, one value at a time.
      const convert = types.map((type) => toVector[type.typeId] ?? toOtherVector);
      const chunk = this.chunks.get(types);
      for (let start = 0; start < rows.length; start += size) {
        const count = Math.min(size, rows.length - start);
        chunk.reset();
        chunk.rowCount = count;
        for (let c = 0; c < types.length; c++) {
          const vector = chunk.getColumnVector(c);
          const source = sources[c]!;
          if (source >= 0 && rows.constant[source]) {
            const value = rows.columns[source]![0];
            const converted = value === null || value === undefined ? null : convert[c]!(value, types[c]!);
            for (let i = 0; i < count; i++) vector.setItem(i, converted);
          } else if (source >= 0) {
            const values = rows.columns[source]!;
            const to = convert[c]!;
            const type = types[c]!;
            for (let i = 0; i < count; i++) {
              const value = values[start + i];
              vector.setItem(
                i,
                value === null || value === undefined
                  ? null
                  : typeof value === 'string' && to === toVarchar
                    ? value
                    : to(value, type),
              );
            }
          } else {
            for (let i = 0; i < count; i++) vector.setItem(i, null);
          }
          vector.flush();
        }
        appender.appendDataChunk(chunk);
      }
      appender.closeSync();
      this.onAppended(rows.length);
    } catch (error) {
      appender.clear();
      try {
        appender.closeSync();
      } catch {
        // The appender is unusable after a failed chunk; the transaction is rolled back by the unit.
      }
      throw error;
    }
  }

  async release(broken = false): Promise<void> {
    this.onRelease(broken);
  }
}

/** Statements that may checkpoint the file: a COMMIT past `checkpoint_threshold`, or CHECKPOINT itself. */
const CHECKPOINTS = /^\s*(COMMIT|CHECKPOINT)\s*;?\s*$/i;

/** A DuckDB statement type as people read it (`DROP`, `INSERT`, …). */
function statementTypeName(type: StatementType): string {
  return (StatementType as unknown as Record<number, string>)[type] ?? String(type);
}

import { Kysely } from 'kysely';
import { DuckDBTimestampTZValue } from '@duckdb/node-api';
import type { DuckDBAppender, DuckDBConnection } from '@duckdb/node-api';
import type { DestinationCapabilities, LockOptions } from '../destination.js';
import { DestinationLockedError } from '../destination-error.js';
import type { CellValue } from '../record-shaper.js';
import type { SqlDialectTraits, SqlSession, Statement } from '../sql-destination.js';
import { SqlDestination } from '../sql-destination.js';
import type { PhysicalColumn } from '../table-layout.js';
import { DuckDbDialect } from './duckdb-dialect.js';
import type { SharedDuckDbFile } from './duckdb-file-lock.js';
import { duckDbFileLock } from './duckdb-file-lock.js';
import { bindDuckDbParameters } from './duckdb-parameters.js';
import { duckDbTypeMapper } from './duckdb-type-mapper.js';
import { duckDbRowsOf } from './duckdb-value-converter.js';

/** Settings of a DuckDB destination. */
export interface DuckDbDestinationOptions {
  /** Database file (`:memory:` for a private in-memory database). */
  path: string;
  /** Schema of the tables. Default: `seedline`. */
  schema?: string;
  /** DuckDB settings applied when this process first opens the file (e.g. `{ memory_limit: '256MB' }`). Default: none. */
  settings?: Record<string, string>;
}

type AppendCell = (appender: DuckDBAppender, value: NonNullable<CellValue>) => void;

const appendCell: Record<PhysicalColumn['type'], AppendCell> = {
  text: (a, v) => a.appendVarchar(v as string),
  json: (a, v) => a.appendVarchar(v as string),
  bigint: (a, v) => a.appendBigInt(typeof v === 'bigint' ? v : BigInt(v as number)),
  double: (a, v) => a.appendDouble(v as number),
  boolean: (a, v) => a.appendBoolean(v as boolean),
  timestamp: (a, v) => a.appendTimestampTZ(new DuckDBTimestampTZValue(BigInt(v as number) * 1000n)),
};

/**
 * The DuckDB backend (`@duckdb/node-api`). The file is opened lazily (by `lock` or the first
 * statement) and shared by destinations of the same process. Bulk writes go through the
 * appender into a temporary staging table of the unit's own connection, then `INSERT … SELECT`
 * inside the unit's transaction: the appender's periodic flushes land in the staging table, so
 * they can never commit part of a unit.
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
    analyzeStaging: false,
    begin: 'BEGIN TRANSACTION',
  };
  protected readonly db: Kysely<any>;
  private readonly path: string;
  private readonly settings: Record<string, string> | undefined;
  private file: SharedDuckDbFile | null = null;
  private opening: Promise<SharedDuckDbFile> | null = null;
  private readonly idle: DuckDBConnection[] = [];
  private readonly busy = new Set<DuckDBConnection>();
  private closed = false;

  constructor(options: DuckDbDestinationOptions) {
    super(options.schema ?? 'seedline');
    this.path = options.path;
    this.settings = options.settings;
    this.db = new Kysely<any>({
      dialect: new DuckDbDialect({ acquire: () => this.acquire(), release: (connection) => this.releaseConnection(connection) }),
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
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.db.destroy();
    const file = this.file ?? (this.opening ? await this.opening.catch(() => null) : null);
    for (const connection of [...this.idle, ...this.busy]) connection.closeSync();
    this.idle.length = 0;
    this.busy.clear();
    if (file) {
      duckDbFileLock.unclaim(file, this);
      duckDbFileLock.release(file);
    }
    this.file = null;
  }

  protected async openSession(): Promise<SqlSession> {
    const connection = await this.acquire();
    return new DuckDbSession(connection, (broken) => {
      if (broken) {
        this.busy.delete(connection);
        connection.closeSync();
      } else this.releaseConnection(connection);
    });
  }

  private async ensureOpen(): Promise<SharedDuckDbFile> {
    if (this.closed) throw new Error('This destination is closed');
    if (this.file) return this.file;
    this.opening ??= duckDbFileLock.open(this.path, this.settings);
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
    const connection = this.idle.pop() ?? (await file.instance.connect());
    this.busy.add(connection);
    return connection;
  }

  private releaseConnection(connection: DuckDBConnection): void {
    this.busy.delete(connection);
    if (this.closed) connection.closeSync();
    else this.idle.push(connection);
  }
}

class DuckDbSession implements SqlSession {
  constructor(
    private readonly connection: DuckDBConnection,
    private readonly onRelease: (broken: boolean) => void,
  ) {}

  async run(statement: Statement): Promise<number> {
    const result = await this.connection.run(statement.sql, bindDuckDbParameters(statement.parameters));
    return result.rowsChanged;
  }

  async all(statement: Statement): Promise<Record<string, unknown>[]> {
    return duckDbRowsOf(await this.connection.runAndReadAll(statement.sql, bindDuckDbParameters(statement.parameters)));
  }

  async bulkInsert(table: string, columns: readonly PhysicalColumn[], rows: readonly CellValue[][]): Promise<void> {
    // Staging tables are temporary: they live in the `temp` catalog of this connection.
    const appender = await this.connection.createAppender(table, 'main', 'temp');
    const cells = columns.map((column) => appendCell[column.type]);
    const width = cells.length;
    try {
      for (const row of rows) {
        for (let i = 0; i < width; i++) {
          const value = row[i];
          if (value === null || value === undefined) appender.appendNull();
          else cells[i]!(appender, value);
        }
        appender.endRow();
      }
      appender.closeSync();
    } catch (error) {
      appender.clear();
      try {
        appender.closeSync();
      } catch {
        // The appender is unusable after a failed row; the transaction is rolled back by the unit.
      }
      throw error;
    }
  }

  async release(broken = false): Promise<void> {
    this.onRelease(broken);
  }
}

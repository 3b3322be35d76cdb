import { PostgresAdapter, PostgresQueryCompiler, CompiledQuery } from 'kysely';
import type {
  DatabaseConnection,
  DatabaseIntrospector,
  Dialect,
  DialectAdapter,
  Driver,
  Kysely,
  QueryCompiler,
  QueryResult,
  TransactionSettings,
} from 'kysely';
import type { DuckDBConnection } from '@duckdb/node-api';
import { bindDuckDbParameters } from './duckdb-parameters.js';
import { duckDbRowsOf } from './duckdb-value-converter.js';

/** Where the dialect gets its connections (the destination's small pool over one DuckDB instance). */
export interface DuckDbConnectionProvider {
  /** A connection for the caller's exclusive use. */
  acquire(): Promise<DuckDBConnection>;
  /** Gives it back. */
  release(connection: DuckDBConnection): void;
}

/**
 * A kysely dialect for DuckDB over `@duckdb/node-api`. `kysely-duckdb` targets the older
 * `duckdb`/`duckdb-async` bindings, so this is our own: DuckDB's SQL is close enough to Postgres
 * that kysely's Postgres adapter and query compiler (`$n` parameters, double-quoted identifiers)
 * serve as they are; only the driver is new.
 *
 * @example
 * ```ts
 * const db = new Kysely<any>({ dialect: new DuckDbDialect(provider) });
 * const rows = await db.selectFrom('seedline._seedline_runs').selectAll().execute();
 * ```
 */
export class DuckDbDialect implements Dialect {
  constructor(private readonly provider: DuckDbConnectionProvider) {}

  createAdapter(): DialectAdapter {
    return new PostgresAdapter();
  }

  createDriver(): Driver {
    return new DuckDbDriver(this.provider);
  }

  createQueryCompiler(): QueryCompiler {
    return new PostgresQueryCompiler();
  }

  createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return new DuckDbIntrospector(db);
  }
}

class DuckDbDriver implements Driver {
  constructor(private readonly provider: DuckDbConnectionProvider) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return new DuckDbKyselyConnection(await this.provider.acquire());
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    if (settings.isolationLevel && settings.isolationLevel !== 'serializable') {
      throw new Error(
        `DuckDB transactions are serializable snapshots; isolation level ${settings.isolationLevel} is not available`,
      );
    }
    await connection.executeQuery(CompiledQuery.raw('BEGIN TRANSACTION'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('COMMIT'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('ROLLBACK'));
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    this.provider.release((connection as DuckDbKyselyConnection).connection);
  }

  async destroy(): Promise<void> {}
}

class DuckDbKyselyConnection implements DatabaseConnection {
  constructor(readonly connection: DuckDBConnection) {}

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const reader = await this.connection.runAndReadAll(
      compiledQuery.sql,
      bindDuckDbParameters(compiledQuery.parameters),
    );
    const rows = duckDbRowsOf(reader) as R[];
    const kind = compiledQuery.query.kind;
    if (
      kind === 'InsertQueryNode' ||
      kind === 'UpdateQueryNode' ||
      kind === 'DeleteQueryNode' ||
      kind === 'MergeQueryNode'
    ) {
      return { rows, numAffectedRows: BigInt(reader.rowsChanged) };
    }
    return { rows };
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('Streaming queries are not supported by the DuckDB dialect: use execute()');
  }
}

class DuckDbIntrospector implements DatabaseIntrospector {
  constructor(private readonly db: Kysely<any>) {}

  async getSchemas(): Promise<{ name: string }[]> {
    const rows = await this.db.selectFrom('information_schema.schemata').select('schema_name').execute();
    return rows.map((row) => ({ name: String(row.schema_name) }));
  }

  async getTables(): Promise<import('kysely').TableMetadata[]> {
    const rows = await this.db
      .selectFrom('information_schema.columns as c')
      .innerJoin('information_schema.tables as t', (join) =>
        join.onRef('t.table_schema', '=', 'c.table_schema').onRef('t.table_name', '=', 'c.table_name'),
      )
      .select([
        'c.table_schema',
        'c.table_name',
        'c.column_name',
        'c.data_type',
        'c.is_nullable',
        'c.column_default',
        't.table_type',
      ])
      .orderBy('c.table_schema')
      .orderBy('c.table_name')
      .orderBy('c.ordinal_position')
      .execute();
    const tables = new Map<string, import('kysely').TableMetadata>();
    for (const row of rows) {
      const key = `${row.table_schema}.${row.table_name}`;
      let table = tables.get(key);
      if (!table) {
        table = {
          name: String(row.table_name),
          schema: String(row.table_schema),
          isView: row.table_type === 'VIEW',
          columns: [],
        };
        tables.set(key, table);
      }
      (table.columns as import('kysely').ColumnMetadata[]).push({
        name: String(row.column_name),
        dataType: String(row.data_type),
        isNullable: row.is_nullable === 'YES',
        isAutoIncrementing: false,
        hasDefaultValue: row.column_default !== null,
      });
    }
    return [...tables.values()];
  }

  async getMetadata(): Promise<import('kysely').DatabaseMetadata> {
    return { tables: await this.getTables() };
  }
}

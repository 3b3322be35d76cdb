import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { Kysely, RawBuilder } from 'kysely';
import type {
  AnswerRow,
  BatchPosition,
  BatchRow,
  Destination,
  DestinationCapabilities,
  DestinationKind,
  LoadUnit,
  LockOptions,
  PreparedWrite,
  RejectedRow,
  RunRow,
  SeedRow,
  StateRow,
  TableDefinition,
  WriteOutcome,
} from './destination.js';
import { isFrozenRejection, PARTITION } from './destination.js';
import { DestinationError, DestinationQueryError, DestinationWriteError, NotReadOnlyError, UnknownTableError } from './destination-error.js';
import { assertIdentifier } from './identifiers.js';
import { SqlLoadUnit } from './sql-load-unit.js';
import type { CellValue, ShapedBatch, ShapedRows } from './record-shaper.js';
import type { KeyColumnSource } from './merge-key-filters.js';
import { MergeKeyFilters } from './merge-key-filters.js';
import { shapeRecords, stampLoadTime } from './record-shaper.js';
import type { SystemTable } from './system-tables.js';
import {
  answerFromDb,
  batchFromDb,
  rejectedToDb,
  runFromDb,
  runToDb,
  seedFromDb,
  stateFromDb,
  systemTables,
} from './system-tables.js';
import type { LogicalType, PhysicalColumn, TableLayout, TableShape } from './table-layout.js';
import { childKeyColumns, childShape, parentShape, tableLayout } from './table-layout.js';

/** A compiled statement: SQL with `$n` placeholders and its bound values. */
export interface Statement {
  sql: string;
  parameters: readonly unknown[];
}

/** One connection of a backend, held for a unit or a single operation. */
export interface SqlSession {
  /** Runs a statement; resolves to the number of rows it changed. */
  run(statement: Statement): Promise<number>;
  /** Runs a statement; resolves to its rows as plain JS values (see `Destination.query`). */
  all(statement: Statement): Promise<Record<string, unknown>[]>;
  /** Runs one read-only statement a user wrote (see `Destination.readQuery`); throws `NotReadOnlyError` for anything else. */
  readOnly(sql: string): Promise<Record<string, unknown>[]>;
  /** Bulk-loads rows into a table (or a temporary staging table) through the backend's native path. */
  bulkInsert(target: BulkTarget, rows: ShapedRows): Promise<void>;
  /**
   * Announces the tables a write is about to bulk-load, before its records are shaped, so a
   * backend can look them up meanwhile (Postgres: their column types decide binary COPY); awaited
   * before the first `bulkInsert` of the write. Optional.
   */
  prepareBulk?(tables: readonly BulkTarget[]): Promise<void>;
  /** Runs a statement and calls `each` with every row's values, a chunk at a time, never holding the whole result. Needed when the dialect has `keyFilter`. */
  scan?(statement: Statement, each: (row: readonly unknown[]) => void): Promise<void>;
  /** Returns the connection; `broken` discards it. */
  release(broken?: boolean): Promise<void>;
}

/** The table a bulk load writes to. */
export interface BulkTarget {
  /** Schema of the table; null for a temporary staging table of the session. */
  schema: string | null;
  table: string;
  /** The table's columns in their physical order (a backend that appends whole rows needs it). */
  columns: readonly string[];
}

/** What differs between the SQL backends. */
export interface SqlDialectTraits {
  /** SQL type of a logical column type. */
  sqlType(type: LogicalType): string;
  /** Logical type of a type name as `information_schema.columns.data_type` reports it. */
  logicalType(dataType: string): LogicalType;
  /** Strings with U+0000 are refused (Postgres). */
  rejectNul: boolean;
  /** Data tables get primary keys and indexes (Postgres; DuckDB's ART indexes make delete+insert of a key in one transaction fail). */
  indexes: boolean;
  /** Statement that opens a transaction. */
  begin: string;
  /** `column` is among the values of a one-column subquery, written so the backend uses the column's index when it has one. */
  inList(column: RawBuilder<unknown>, values: RawBuilder<unknown>): RawBuilder<unknown>;
  /**
   * A session takes its next statement while earlier ones still run and sends them in call order
   * (Postgres), so a write issues all its statements at once. `run` and `bulkInsert` must then
   * take their place in line before their first await.
   */
  pipelined: boolean;
  /** A one-column key set of a merge is bound as one array (`= any($1::type[])`) and every table loses its rows in one statement, instead of going through a staging table. */
  arrayKeys: boolean;
  /** Merges rule out new keys with a filter of the parent table's keys (see `MergeKeyFilters`) instead of probing the table: for a backend without key indexes. */
  keyFilter: boolean;
}

/**
 * The write-mode logic shared by the SQL backends: tables from zod, staging and merge, history,
 * system tables. A backend supplies sessions (connections), its bulk path, its type names and
 * its lock. Statements are built with kysely (identifiers quoted by kysely, values bound).
 */
export abstract class SqlDestination implements Destination {
  abstract readonly capabilities: DestinationCapabilities;
  abstract readonly kind: DestinationKind;
  readonly schema: string;
  protected abstract readonly db: Kysely<any>;
  protected abstract readonly traits: SqlDialectTraits;
  private readonly tables = new Map<string, TableLayout>();
  /** Column names of each data table in their physical order (evolution appends at the end). */
  private readonly physical = new Map<string, string[]>();
  private lastTimestamp = 0;
  private stagingCounter = 0;
  private readonly keyFilters = new MergeKeyFilters();

  protected constructor(schema: string) {
    this.schema = assertIdentifier(schema, 'schema');
  }

  abstract lock(options: LockOptions): Promise<void>;
  abstract close(): Promise<void>;
  /** Opens a session (a connection of its own). */
  protected abstract openSession(): Promise<SqlSession>;
  /** Throws when the writer lock this destination took is lost, so a unit is not committed without it. Default: no-op. */
  protected assertWriterLock(): void {}

  /** Set once this object ensured the system tables: every later call is a no-op (serve drains often). */
  private systemTablesEnsured = false;

  async ensureSystemTables(): Promise<void> {
    if (this.systemTablesEnsured) return;
    const tables = Object.values(systemTables) as SystemTable[];
    await this.withSession(async (session) => {
      await session.run(this.db.schema.createSchema(this.schema).ifNotExists().compile());
      for (const table of tables) {
        let builder = this.db.schema.createTable(this.qualified(table.name)).ifNotExists();
        for (const [name, type, notNull] of table.columns) {
          builder = builder.addColumn(name, sql.raw(this.traits.sqlType(type)), (col) => (notNull ? col.notNull() : col));
        }
        if (table.primaryKey.length > 0) builder = builder.addPrimaryKeyConstraint(`${table.name}_pkey`, table.primaryKey as never[]);
        await session.run(builder.compile());
      }
      // A destination made by an older release lacks columns added since: add them (nullable).
      // IF NOT EXISTS: another process starting after the same upgrade may add them first.
      const existing = await session.all(
        this.db.selectFrom('information_schema.columns').select(['table_name', 'column_name']).where('table_schema', '=', this.schema).where('table_name', 'in', tables.map((t) => t.name)).compile(),
      );
      const has = new Set(existing.map((row) => `${String(row.table_name)}.${String(row.column_name)}`));
      for (const table of tables) {
        for (const [name, type] of table.columns) {
          if (!has.has(`${table.name}.${name}`)) await session.run(sql`alter table ${sql.table(this.qualified(table.name))} add column if not exists ${sql.id(name)} ${sql.raw(this.traits.sqlType(type))}`.compile(this.db));
        }
      }
    });
    this.systemTablesEnsured = true;
  }

  async ensureTable(definition: TableDefinition): Promise<void> {
    const layout = tableLayout(definition);
    await this.withSession(async (session) => {
      await session.run({ sql: this.traits.begin, parameters: [] });
      try {
        await session.run(this.db.schema.createSchema(this.schema).ifNotExists().compile());
        const shapes: { shape: TableShape; child: boolean }[] = [
          { shape: parentShape(layout), child: false },
          ...layout.children.map((child) => ({ shape: childShape(layout, child), child: true })),
        ];
        const actual = new Map<string, string>();
        const physical = new Map<string, string[]>();
        for (const { shape, child } of shapes) {
          const existing = await this.columnsOf(session, shape.name);
          if (existing.size === 0) {
            await this.createTable(session, layout, shape, child);
            physical.set(shape.name, shape.columns.map((c) => c.name));
          } else {
            const order = [...existing.keys()];
            for (const column of shape.columns) {
              if (existing.has(column.name)) continue;
              await session.run(
                this.db.schema.alterTable(this.qualified(shape.name)).addColumn(column.name, sql.raw(this.traits.sqlType(column.type))).compile(),
              );
              order.push(column.name);
            }
            physical.set(shape.name, order);
          }
          for (const [name, type] of existing) actual.set(`${shape.name}.${name}`, type);
        }
        await session.run({ sql: 'COMMIT', parameters: [] });
        // Values are checked against the column types the table really has, not the ones the schema would create today.
        for (const column of layout.columns) {
          const type = actual.get(`${layout.name}.${column.name}`);
          if (type) column.type = this.traits.logicalType(type);
        }
        for (const child of layout.children) {
          for (const column of child.columns) {
            const type = actual.get(`${child.name}.${column.name}`);
            if (type) column.type = this.traits.logicalType(type);
          }
        }
        this.tables.set(layout.name, layout);
        for (const [name, order] of physical) this.physical.set(name, order);
      } catch (error) {
        await session.run({ sql: 'ROLLBACK', parameters: [] }).catch(() => undefined);
        throw error;
      }
    });
  }

  async beginUnit(runId: string): Promise<LoadUnit> {
    const session = await this.openSession();
    try {
      await session.run({ sql: this.traits.begin, parameters: [] });
    } catch (error) {
      await session.release(true);
      throw new DestinationWriteError('Starting a load unit', error);
    }
    return new SqlLoadUnit(this, session, runId, () => this.assertWriterLock());
  }

  async query<Row extends Record<string, unknown> = Record<string, unknown>>(text: string, params: readonly unknown[] = []): Promise<Row[]> {
    return this.withSession(async (session) => {
      try {
        return (await session.all({ sql: text, parameters: params })) as Row[];
      } catch (error) {
        throw new DestinationQueryError(error);
      }
    });
  }

  async readQuery<Row extends Record<string, unknown> = Record<string, unknown>>(text: string): Promise<Row[]> {
    return this.withSession(async (session) => {
      try {
        return (await session.readOnly(text)) as Row[];
      } catch (error) {
        if (error instanceof NotReadOnlyError) throw error;
        throw new DestinationQueryError(error);
      }
    });
  }

  async readState(stream: string): Promise<Map<string, StateRow>> {
    const rows = await this.readSystem(this.db.selectFrom(this.qualified(systemTables.state.name)).selectAll().where('stream', '=', stream).compile());
    return new Map(rows.map(stateFromDb).map((row) => [row.partition, row]));
  }

  async readSeeds(stream: string): Promise<Map<string, SeedRow>> {
    const rows = await this.readSystem(this.db.selectFrom(this.qualified(systemTables.seeds.name)).selectAll().where('stream', '=', stream).compile());
    return new Map(rows.map(seedFromDb).map((row) => [row.seedKey, row]));
  }

  async readBatches(stream: string): Promise<BatchRow[]> {
    const rows = await this.readSystem(
      this.db
        .selectFrom(this.qualified(systemTables.batches.name))
        .selectAll()
        .where('stream', '=', stream)
        .orderBy('created_at')
        .orderBy('idempotency_key')
        .compile(),
    );
    return rows.map(batchFromDb);
  }

  async readSeedsByKey(stream: string, keys: readonly string[]): Promise<Map<string, SeedRow>> {
    if (keys.length === 0) return new Map();
    const rows = await this.readSystem(this.db.selectFrom(this.qualified(systemTables.seeds.name)).selectAll().where('stream', '=', stream).where('seed_key', 'in', keys).compile());
    return new Map(rows.map(seedFromDb).map((row) => [row.seedKey, row]));
  }

  async readSeedPage(stream: string, after: string | null, limit: number): Promise<SeedRow[]> {
    const rows = await this.readSystem(
      this.db
        .selectFrom(this.qualified(systemTables.seeds.name))
        .selectAll()
        .where('stream', '=', stream)
        .$if(after !== null, (query) => query.where('seed_key', '>', after!))
        .orderBy('seed_key')
        .limit(Math.max(1, Math.floor(limit)))
        .compile(),
    );
    return rows.map(seedFromDb);
  }

  async readOpenBatchPage(stream: string, after: BatchPosition | null, limit: number): Promise<BatchRow[]> {
    const rows = await this.readSystem(
      this.db
        .selectFrom(this.qualified(systemTables.batches.name))
        .selectAll()
        .where('stream', '=', stream)
        .where('status', 'in', ['intent', 'submitted'])
        .$if(after !== null, (query) =>
          query.where((eb) => eb.or([eb('created_at', '>', after!.createdAt), eb.and([eb('created_at', '=', after!.createdAt), eb('idempotency_key', '>', after!.idempotencyKey)])])),
        )
        .orderBy('created_at')
        .orderBy('idempotency_key')
        .limit(Math.max(1, Math.floor(limit)))
        .compile(),
    );
    return rows.map(batchFromDb);
  }

  async readAnswers(stream: string): Promise<Map<string, AnswerRow>> {
    const rows = await this.readSystem(this.db.selectFrom(this.qualified(systemTables.answers.name)).selectAll().where('stream', '=', stream).compile());
    return new Map(rows.map(answerFromDb).map((row) => [row.callKey, row]));
  }

  /** The statement deleting a stream's journaled answers by call key. */
  dropStateStatement(stream: string, partitions: readonly string[]): Statement {
    return this.db.deleteFrom(this.qualified(systemTables.state.name)).where('stream', '=', stream).where('partition', 'in', partitions).compile();
  }

  dropAnswersStatement(stream: string, callKeys: readonly string[]): Statement {
    return this.db.deleteFrom(this.qualified(systemTables.answers.name)).where('stream', '=', stream).where('call_key', 'in', callKeys).compile();
  }

  async saveRun(run: RunRow): Promise<void> {
    await this.withSession((session) => session.run(this.upsert(systemTables.runs, [runToDb(run)])));
  }

  async readRuns(limit: number, status?: RunRow['status']): Promise<RunRow[]> {
    const rows = await this.readSystem(
      this.db
        .selectFrom(this.qualified(systemTables.runs.name))
        .selectAll()
        .$if(status !== undefined, (query) => query.where('status', '=', status!))
        .orderBy('started_at', 'desc')
        .orderBy('run_id', 'desc')
        .limit(Math.max(0, Math.floor(limit)))
        .compile(),
    );
    return rows.map(runFromDb);
  }

  /** `schema.table`, validated, for kysely to quote. */
  protected qualified(table: string): string {
    return `${this.schema}.${assertIdentifier(table, 'table')}`;
  }

  /** Runs `fn` on a session of its own and releases it. */
  protected async withSession<T>(fn: (session: SqlSession) => Promise<T>): Promise<T> {
    const session = await this.openSession();
    let broken = false;
    try {
      return await fn(session);
    } catch (error) {
      broken = !(error instanceof DestinationError);
      throw error;
    } finally {
      await session.release(broken);
    }
  }

  async hasTable(table: string): Promise<boolean> {
    const rows = await this.query('select 1 as found from information_schema.tables where table_schema = $1 and table_name = $2', [this.schema, table]);
    return rows.length > 0;
  }

  prepareWrite(table: string, records: readonly Record<string, unknown>[], runId: string): PreparedWrite {
    const layout = this.layoutOf(table);
    try {
      return new SqlPreparedWrite(table, runId, records, layout, this.shape(layout, records, runId));
    } catch (error) {
      // What a unit's write would have thrown: shaping only rejects records, anything else is a failure of the write.
      throw new DestinationWriteError(`Writing ${records.length} records to ${table}`, error);
    }
  }

  /** Writes one batch of records, or a write prepared by `prepareWrite`, inside a unit's transaction. */
  async writeInUnit(session: SqlSession, runId: string, table: string, input: readonly Record<string, unknown>[] | PreparedWrite, stream = table): Promise<WriteOutcome> {
    const layout = this.layoutOf(table);
    const prepared = preparedFor(input, table, runId);
    const records = prepared ? prepared.records : (input as readonly Record<string, unknown>[]);
    const lookup = session.prepareBulk?.([layout.name, ...layout.children.map((c) => c.name)].map((name) => this.bulkTarget(name)));
    // Settled even when shaping throws, so its failure is not left unhandled.
    lookup?.catch(() => undefined);
    // A pipelined session sends a statement from a microtask: let the lookup go out now, so the server answers it
    // while the records are shaped instead of after.
    if (lookup) await undefined;
    // A write prepared before its table evolved (a new column) is shaped again.
    const batch = prepared?.layout === layout ? prepared.batch : this.shape(layout, records, runId);
    stampLoadTime(batch, this.nextTimestamp());
    await lookup;
    if (batch.rejected.length > 0) {
      const now = new Date();
      const rows = batch.rejected.map((r) => rejectedToDb({ runId, stream, table, record: safeJson(r.record), reason: r.reason, partition: partitionOf(r.record) }, now));
      await this.insertRejected(session, rows);
    }
    const rows = batch.records > 0 ? await this.apply(session, layout, batch, runId) : 0;
    const frozen = batch.rejected.filter((r) => isFrozenRejection(r.reason)).length;
    return { records: batch.records, rows, rejected: batch.rejected.length, ...(batch.repairs.length > 0 ? { repairs: batch.repairs } : {}), ...(frozen > 0 ? { frozen } : {}) };
  }

  private layoutOf(table: string): TableLayout {
    const layout = this.tables.get(table);
    if (!layout) throw new UnknownTableError(table);
    return layout;
  }

  /** Shaped rows of `records`; their load time is stamped when they are written. */
  private shape(layout: TableLayout, records: readonly Record<string, unknown>[], runId: string): ShapedBatch {
    return shapeRecords(layout, records, { runId, loadedAt: 0, rejectNul: this.traits.rejectNul });
  }

  /** Inserts rejected rows (already in `_seedline_rejected` shape). */
  insertRejected(session: SqlSession, rows: Record<string, unknown>[]): Promise<void> {
    return this.insertSystemRows(session, systemTables.rejected, rows);
  }

  /** Appends rows (in the table's column shape) to a system table without a key. */
  async insertSystemRows(session: SqlSession, table: SystemTable, rows: Record<string, unknown>[]): Promise<void> {
    for (let i = 0; i < rows.length; i += 500) {
      await session.run(this.db.insertInto(this.qualified(table.name)).values(rows.slice(i, i + 500)).compile());
    }
  }

  /** The delete of one `_seedline_rejected` row, matched on what says which record it is (the table has no key). */
  deleteRejected(row: RejectedRow): Statement {
    return this.db
      .deleteFrom(this.qualified(systemTables.rejected.name))
      .where('run_id', '=', row.runId)
      .where('stream', '=', row.stream)
      .where('table', '=', row.table)
      .where('record', '=', row.record)
      .where('reason', '=', row.reason)
      .compile();
  }

  /** An upsert of system-table rows on the table's primary key; the last of duplicate keys wins. */
  upsert(table: SystemTable, rows: Record<string, unknown>[]): Statement {
    const unique = new Map<string, Record<string, unknown>>();
    for (const row of rows) unique.set(JSON.stringify(table.primaryKey.map((k) => row[k])), row);
    const updated = table.columns.map(([name]) => name).filter((name) => !table.primaryKey.includes(name) && name !== 'created_at');
    return this.db
      .insertInto(this.qualified(table.name))
      .values([...unique.values()])
      .onConflict((oc) =>
        oc.columns(table.primaryKey as string[]).doUpdateSet(Object.fromEntries(updated.map((name) => [name, sql.ref(`excluded.${name}`)]))),
      )
      .compile();
  }

  private async readSystem(statement: Statement): Promise<Record<string, unknown>[]> {
    return this.withSession((session) => session.all(statement));
  }

  private async columnsOf(session: SqlSession, table: string): Promise<Map<string, string>> {
    const rows = await session.all(
      this.db
        .selectFrom('information_schema.columns')
        .select(['column_name', 'data_type'])
        .where('table_schema', '=', this.schema)
        .where('table_name', '=', table)
        .orderBy('ordinal_position')
        .compile(),
    );
    return new Map(rows.map((row) => [String(row.column_name), String(row.data_type)]));
  }

  private async createTable(session: SqlSession, layout: TableLayout, shape: TableShape, child: boolean): Promise<void> {
    let builder = this.db.schema.createTable(this.qualified(shape.name)).ifNotExists();
    for (const column of shape.columns) builder = builder.addColumn(column.name, sql.raw(this.traits.sqlType(column.type)));
    const merge = layout.writeMode === 'merge' && !child;
    if (this.traits.indexes && merge) builder = builder.addPrimaryKeyConstraint(indexName(shape.name, 'pkey'), layout.primaryKey as never[]);
    await session.run(builder.compile());
    if (!this.traits.indexes) return;
    const keys = child ? childKeyColumns(layout).map((c) => c.name) : layout.writeMode === 'history' ? layout.primaryKey : [];
    if (keys.length > 0) {
      await session.run(this.db.schema.createIndex(indexName(shape.name, 'key')).ifNotExists().on(this.qualified(shape.name)).columns(keys).compile());
    }
  }

  /** Where rows of a data table are bulk-loaded: the table and its columns in physical order. */
  private bulkTarget(table: string): BulkTarget {
    return { schema: this.schema, table, columns: this.physical.get(table) ?? [] };
  }

  /** Bulk-loads rows straight into their table; resolves to the rows loaded. */
  private async load(session: SqlSession, rows: ShapedRows): Promise<number> {
    if (rows.length === 0) return 0;
    const target = this.bulkTarget(rows.shape.name);
    await session.bulkInsert(target.columns.length > 0 ? target : { ...target, columns: rows.shape.columns.map((c) => c.name) }, rows);
    return rows.length;
  }

  /**
   * Runs steps in order and resolves to the sum of their results. A pipelined backend gets them
   * all at once (its connection keeps the order), so the server works while the next rows are
   * encoded; the first failure, in step order, is the one thrown.
   */
  private async steps(steps: readonly (() => Promise<number>)[]): Promise<number> {
    let total = 0;
    if (!this.traits.pipelined) {
      for (const step of steps) total += await step();
      return total;
    }
    const settled = await Promise.allSettled(steps.map((step) => step()));
    for (const result of settled) {
      if (result.status === 'rejected') throw result.reason;
      total += result.value;
    }
    return total;
  }

  /** Bulk-loads rows into a temporary table shaped like their table; resolves to its name. */
  private async stage(session: SqlSession, rows: ShapedRows, name = this.stagingName()): Promise<string> {
    const columns = rows.shape.columns.map((c) => c.name);
    const create = sql`create temporary table ${sql.table(name)} as select ${sql.join(columns.map((c) => sql.ref(c)))} from ${sql.table(this.qualified(rows.shape.name))} limit 0`;
    await this.steps([
      () => session.run(create.compile(this.db)),
      async () => {
        if (rows.length > 0) await session.bulkInsert({ schema: null, table: name, columns }, rows);
        return 0;
      },
    ]);
    return name;
  }

  private stagingName(): string {
    return `_seedline_stage_${++this.stagingCounter}`;
  }

  /**
   * Writes shaped rows according to the write mode; resolves to the rows inserted. Merge, append
   * and replace load straight into the tables (merge first deletes the batch's keys, children by
   * their parent key: one statement for all tables with a bound key array, or one per table from
   * a staged key table; either way skipped when no key is in the parent table); history goes
   * through staging tables.
   */
  private async apply(session: SqlSession, layout: TableLayout, batch: ShapedBatch, runId: string): Promise<number> {
    const run = (query: RawBuilder<unknown>): Promise<number> => session.run(query.compile(this.db));
    const target = (name: string): RawBuilder<unknown> => sql`${sql.table(this.qualified(name))}`;
    const loads = [batch.parent, ...batch.children].map((rows) => () => this.load(session, rows));
    const statement = (query: RawBuilder<unknown>) => async (): Promise<number> => {
      await run(query);
      return 0;
    };
    switch (layout.writeMode) {
      case 'append':
        return this.steps(loads);
      case 'replace':
        // Rows of earlier runs go, rows of this run (earlier pages) stay: readers see the old table until commit.
        return this.steps([
          ...[batch.parent.shape, ...batch.children.map((c) => c.shape)].map((shape) =>
            statement(sql`delete from ${target(shape.name)} where ${sql.ref('_run_id')} is distinct from ${runId}`),
          ),
          ...loads,
        ]);
      case 'merge': {
        const keyColumns = layout.primaryKey.map((pk) => batch.parent.shape.columns.find((c) => c.name === pk)!);
        const childKeys = childKeyColumns(layout).map((c) => c.name);
        if (this.traits.arrayKeys && keyColumns.length === 1) {
          const type = keyColumns[0]!.type;
          const values = batch.keys[0]!.map((value) => (type === 'timestamp' ? new Date(value as number).toISOString() : typeof value === 'bigint' ? String(value) : value));
          const arrayType = sql.raw(`${this.traits.sqlType(type)}[]`);
          // The cast makes it `= any(array)` probing the column's index, not `= any(subquery)`.
          const matches = (column: string): RawBuilder<unknown> => sql`${sql.ref(`t.${column}`)} = any((select ${sql.ref('k')} from ${sql.table('_seedline_keys')})::${arrayType})`;
          // One probe of the parent's key index decides whether anything is deleted: the other deletes are gated on it
          // (a one-time filter), so keys that are all new (a first load, the common case) cost one index probe per key, not
          // one per key and table. Child rows are found through their parent, as in the staged path below.
          const existing = sql`exists (select 1 from ${sql.table('_seedline_existing')})`;
          const childDeletes = batch.children.map(
            (child, i) =>
              sql`${sql.table(`_seedline_deleted_${i}`)} as (delete from ${target(child.shape.name)} as t where ${existing} and ${matches(childKeys[0]!)})`,
          );
          return this.steps([
            statement(
              sql`with ${sql.table('_seedline_keys')} as (select ${values}::${arrayType} as ${sql.ref('k')}), ${sql.table('_seedline_existing')} as (select 1 from ${target(batch.parent.shape.name)} as t where ${matches(layout.primaryKey[0]!)} limit 1)${sql.join(
                childDeletes.map((d) => sql`, ${d}`),
                sql``,
              )} delete from ${target(batch.parent.shape.name)} as t where ${existing} and ${matches(layout.primaryKey[0]!)}`,
            ),
            ...loads,
          ]);
        }
        return this.mergeStaged(session, layout, batch, loads);
      }
      case 'history':
        return this.applyHistory(session, layout, batch);
    }
  }

  /**
   * Merge through a staged key table (no bound key array): the keys that may be in the parent
   * table (all of them, or those its key filter cannot rule out) are staged, probed, and each
   * table loses the rows of the ones found, children through their parent's key. Without key
   * indexes (DuckDB) a probe scans the parent table: the filter makes the common case (new keys)
   * cost nothing that grows with the table. Child rows whose parent row was deleted by hand are
   * not looked for.
   */
  private async mergeStaged(session: SqlSession, layout: TableLayout, batch: ShapedBatch, loads: readonly (() => Promise<number>)[]): Promise<number> {
    const parent = batch.parent.shape.name;
    const target = (name: string): RawBuilder<unknown> => sql`${sql.table(this.qualified(name))}`;
    const keyColumns = layout.primaryKey.map((pk) => batch.parent.shape.columns.find((c) => c.name === pk)!);
    const filtered = this.traits.keyFilter && keyColumns.every((c) => c.type === 'text' || c.type === 'bigint' || c.type === 'double');
    const source = filtered ? this.keyColumnSource(session, parent, layout.primaryKey) : null;
    const candidates = source ? await this.keyFilters.candidates(parent, batch.keys, batch.records, source) : null;
    const keys = candidates === null ? batch.keys : batch.keys.map((column) => candidates.map((i) => column[i]!));
    const count = candidates === null ? batch.records : candidates.length;
    let total = 0;
    if (count > 0) total += await this.deleteKeys(session, layout, batch, keyColumns, keys, count);
    total += await this.steps(loads);
    if (source) {
      const [row] = await session.all(sql`select count(*) as ${sql.ref('n')} from ${target(parent)}`.compile(this.db));
      this.keyFilters.written(parent, batch.keys, batch.records, Number(row!.n));
    }
    return total;
  }

  /** Stages `keys`, and when one of them is in the parent table deletes their rows from every table of the layout. */
  private async deleteKeys(session: SqlSession, layout: TableLayout, batch: ShapedBatch, keyColumns: PhysicalColumn[], keys: CellValue[][], count: number): Promise<number> {
    const run = (query: RawBuilder<unknown>): Promise<number> => session.run(query.compile(this.db));
    const target = (name: string): RawBuilder<unknown> => sql`${sql.table(this.qualified(name))}`;
    const childKeys = childKeyColumns(layout).map((c) => c.name);
    const staged = this.stagingName();
    await this.stage(session, { shape: { name: batch.parent.shape.name, columns: keyColumns }, columns: keys, length: count, constant: keyColumns.map(() => false), stamped: [] }, staged);
    const match = (columns: readonly string[]): RawBuilder<unknown> =>
      columns.length === 1
        ? this.traits.inList(sql.ref(`t.${columns[0]!}`), sql`select ${sql.ref(`k.${layout.primaryKey[0]!}`)} from ${sql.table(staged)} as k`)
        : sql`exists (select 1 from ${sql.table(staged)} as k where ${sql.join(
            columns.map((column, i) => sql`${sql.ref(`k.${layout.primaryKey[i]!}`)} = ${sql.ref(`t.${column}`)}`),
            sql` and `,
          )})`;
    const existing = await session.all(sql`select 1 as ${sql.ref('found')} from ${target(batch.parent.shape.name)} as t where ${match(layout.primaryKey)} limit 1`.compile(this.db));
    if (existing.length > 0) {
      for (const child of batch.children) await run(sql`delete from ${target(child.shape.name)} as t where ${match(childKeys)}`);
      await run(sql`delete from ${target(batch.parent.shape.name)} as t where ${match(layout.primaryKey)}`);
    }
    await run(sql`drop table ${sql.table(staged)}`);
    return 0;
  }

  /** The parent table's row count and key column, read on the unit's session (its own writes included). */
  private keyColumnSource(session: SqlSession, table: string, columns: readonly string[]): KeyColumnSource {
    const target = sql`${sql.table(this.qualified(table))}`;
    return {
      count: async () => {
        const [row] = await session.all(sql`select count(*) as ${sql.ref('n')} from ${target}`.compile(this.db));
        return Number(row!.n);
      },
      scan: (each) => session.scan!(sql`select ${sql.join(columns.map((c) => sql.ref(c)))} from ${target}`.compile(this.db), each),
    };
  }

  private async applyHistory(session: SqlSession, layout: TableLayout, batch: ShapedBatch): Promise<number> {
    const run = (query: RawBuilder<unknown>): Promise<number> => session.run(query.compile(this.db));
    const target = (name: string): RawBuilder<unknown> => sql`${sql.table(this.qualified(name))}`;
    const columnList = (shape: TableShape, alias: string): RawBuilder<unknown> => sql.join(shape.columns.map((c) => sql.ref(`${alias}.${c.name}`)));
    const keyMatch = (left: string, leftColumns: readonly string[], right: string, rightColumns: readonly string[]): RawBuilder<unknown> =>
      sql.join(
        leftColumns.map((column, i) => sql`${sql.ref(`${left}.${column}`)} = ${sql.ref(`${right}.${rightColumns[i]!}`)}`),
        sql` and `,
      );
    const parentKeys = layout.primaryKey;
    const childKeys = childKeyColumns(layout)
      .map((c) => c.name)
      .slice(0, parentKeys.length);
    const parentStage = await this.stage(session, batch.parent);
    const table = target(batch.parent.shape.name);
    const stage = sql.table(parentStage);
    const plain = (shape: TableShape): RawBuilder<unknown> => sql.join(shape.columns.map((c) => sql.ref(c.name)));
    await run(
      sql`update ${table} as t set ${sql.ref('_valid_to')} = s.${sql.ref('_valid_from')} from ${stage} as s where ${keyMatch('s', parentKeys, 't', parentKeys)} and t.${sql.ref('_valid_to')} is null and t.${sql.ref('_row_hash')} <> s.${sql.ref('_row_hash')}`,
    );
    let inserted = await run(
      sql`insert into ${table} (${plain(batch.parent.shape)}) select ${columnList(batch.parent.shape, 's')} from ${stage} as s where not exists (select 1 from ${table} as t where ${keyMatch('t', parentKeys, 's', parentKeys)} and t.${sql.ref('_valid_to')} is null)`,
    );
    const stages = [parentStage];
    for (const child of batch.children) {
      if (child.length === 0) continue;
      const childStage = await this.stage(session, child);
      stages.push(childStage);
      inserted += await run(
        sql`insert into ${target(child.shape.name)} (${plain(child.shape)}) select ${columnList(child.shape, 'c')} from ${sql.table(childStage)} as c where exists (select 1 from ${table} as t where ${keyMatch('t', parentKeys, 'c', childKeys)} and t.${sql.ref('_valid_from')} = c.${sql.ref('_parent_valid_from')})`,
      );
    }
    for (const name of stages) await run(sql`drop table ${sql.table(name)}`);
    return inserted;
  }

  private nextTimestamp(): number {
    this.lastTimestamp = Math.max(Date.now(), this.lastTimestamp + 1);
    return this.lastTimestamp;
  }
}

/** Records shaped by `SqlDestination.prepareWrite`, with the layout they were shaped for. */
class SqlPreparedWrite implements PreparedWrite {
  /** Set by its first write: the load time is stamped into its rows, which a second write would change under the first. */
  written = false;

  constructor(
    readonly table: string,
    readonly runId: string,
    readonly records: readonly Record<string, unknown>[],
    readonly layout: TableLayout,
    readonly batch: ShapedBatch,
  ) {}

  get size(): number {
    return this.records.length;
  }
}

/** The prepared write `input` is (null for plain records), checked against the unit writing it. */
function preparedFor(input: readonly Record<string, unknown>[] | PreparedWrite, table: string, runId: string): SqlPreparedWrite | null {
  if (Array.isArray(input)) return null;
  if (!(input instanceof SqlPreparedWrite)) throw new TypeError('LoadUnit.write takes records or a write prepared by Destination.prepareWrite');
  if (input.table !== table || input.runId !== runId) {
    throw new TypeError(`A write prepared for table ${input.table} in run ${input.runId} cannot be written to table ${table} in run ${runId}`);
  }
  if (input.written) throw new TypeError(`A write prepared for table ${table} was already written: prepare it again`);
  input.written = true;
  return input;
}

function safeJson(record: unknown): string {
  try {
    return JSON.stringify(record, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) ?? 'null';
  } catch {
    return String(record);
  }
}

function indexName(table: string, suffix: string): string {
  const name = `${table}_${suffix}`;
  return name.length <= 63 ? name : `${table.slice(0, 40)}_${createHash('sha1').update(table).digest('hex').slice(0, 12)}_${suffix}`;
}

/** The partition the engine set on a row (see PARTITION), as JSON text; null when none. */
function partitionOf(record: unknown): string | null {
  const partition = record !== null && typeof record === 'object' ? (record as { [PARTITION]?: unknown })[PARTITION] : undefined;
  return partition === undefined ? null : safeJson(partition);
}

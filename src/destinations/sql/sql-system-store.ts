import { sql, type InsertQueryBuilder } from 'kysely';
import type { AnswerRow, BatchPosition, BatchRow, RejectedRow, RunRow, SeedRow, StateRow } from '../destination.js';
import { cell } from '../../normalize/cell-values.js';
import type { ReadOptions, SqlContext, SqlSession, Statement } from './sql-session.js';
import type { SystemTable } from './system-tables.js';
import { lockDdl } from './sql-table-setup.js';
import {
  answerFromDb,
  batchFromDb,
  runFromDb,
  runToDb,
  seedFromDb,
  stateFromDb,
  systemTables,
} from './system-tables.js';

/**
 * Up to this many rows, a staged backend upserts system-table rows as VALUES: at 3,000 calls a
 * minute a paged stream's answer upsert took 13 ms against 20 ms through the stage (its create,
 * bulk load and drop), and a cursor upsert 9 against 14 ms (bench/README.md).
 */
const FEW_ROWS_UPSERTED_AS_VALUES = 16;

/**
 * The system tables of a SQL destination: creating them (and the columns an older release
 * lacks), the ledger reads (whole streams, by key, and keyset pages), and the statements a load
 * unit runs in its transaction (upserts, appends, deletes). Reads run on a session of their own.
 */
export class SqlSystemStore {
  /** Set once this object ensured the system tables: every later call is a no-op (serve drains often). */
  private ensured = false;
  private stagingCounter = 0;

  constructor(private readonly context: SqlContext) {}

  /** Creates the schema and the system tables when missing, and adds the columns added since an older release. */
  async ensure(): Promise<void> {
    if (this.ensured) return;
    const tables = Object.values(systemTables) as SystemTable[];
    await this.context.withSession(async (session) => {
      // Where processes set tables up side by side (Postgres workers), one at a time: in a transaction, under the DDL lock.
      if (!this.context.traits.ddlLock) return this.createTables(session, tables);
      await session.run({ sql: this.context.traits.begin, parameters: [] });
      try {
        await lockDdl(this.context, session);
        await this.createTables(session, tables);
        await session.run({ sql: 'COMMIT', parameters: [] });
      } catch (error) {
        await session.run({ sql: 'ROLLBACK', parameters: [] }).catch(() => undefined);
        throw error;
      }
    });
    this.ensured = true;
  }

  private async createTables(session: SqlSession, tables: readonly SystemTable[]): Promise<void> {
    await session.run(this.context.db.schema.createSchema(this.context.schema).ifNotExists().compile());
    for (const table of tables) {
      let builder = this.context.db.schema.createTable(this.context.qualified(table.name)).ifNotExists();
      for (const [name, type, notNull] of table.columns) {
        builder = builder.addColumn(name, sql.raw(this.context.traits.sqlType(type)), (col) =>
          notNull ? col.notNull() : col,
        );
      }
      if (table.primaryKey.length > 0)
        builder = builder.addPrimaryKeyConstraint(`${table.name}_pkey`, table.primaryKey as never[]);
      await session.run(builder.compile());
    }
    // A destination made by an older release lacks columns added since: add them (nullable).
    // IF NOT EXISTS: another process starting after the same upgrade may add them first.
    const existing = await session.all(
      this.context.db
        .selectFrom('information_schema.columns')
        .select(['table_name', 'column_name'])
        .where('table_schema', '=', this.context.schema)
        .where(
          'table_name',
          'in',
          tables.map((t) => t.name),
        )
        .compile(),
    );
    const has = new Set(existing.map((row) => `${String(row.table_name)}.${String(row.column_name)}`));
    for (const table of tables) {
      for (const [name, type] of table.columns) {
        if (!has.has(`${table.name}.${name}`))
          await session.run(
            sql`alter table ${sql.table(this.context.qualified(table.name))} add column if not exists ${sql.id(name)} ${sql.raw(this.context.traits.sqlType(type))}`.compile(
              this.context.db,
            ),
          );
      }
    }
    // Rows an older release left whole once they reached the status that empties a column (a completed job's body).
    for (const { name, emptiedAt } of tables)
      if (emptiedAt)
        await session.run(
          this.context.db
            .updateTable(this.context.qualified(name))
            .set(emptiedAt.column, '')
            .where('status', '=', emptiedAt.status)
            .where(emptiedAt.column, '<>', '')
            .compile(),
        );
  }

  /** See `Destination.readState`. */
  async readState(stream: string): Promise<Map<string, StateRow>> {
    const rows = await this.readSystem(
      this.context.db
        .selectFrom(this.context.qualified(systemTables.state.name))
        .selectAll()
        .where('stream', '=', stream)
        .compile(),
    );
    return new Map(rows.map(stateFromDb).map((row) => [row.partition, row]));
  }

  /** See `Destination.readStateByKey`. */
  async readStateByKey(stream: string, keys: readonly string[]): Promise<Map<string, StateRow>> {
    if (keys.length === 0) return new Map();
    const rows = await this.readSystem(
      this.context.db
        .selectFrom(this.context.qualified(systemTables.state.name))
        .selectAll()
        .where('stream', '=', stream)
        .where('partition', 'in', keys)
        .compile(),
    );
    return new Map(rows.map(stateFromDb).map((row) => [row.partition, row]));
  }

  /** See `Destination.readSeeds`. */
  async readSeeds(stream: string): Promise<Map<string, SeedRow>> {
    const rows = await this.readSystem(
      this.context.db
        .selectFrom(this.context.qualified(systemTables.seeds.name))
        .selectAll()
        .where('stream', '=', stream)
        .compile(),
      // Every ledger row of the stream: what reads it (a state reset, Airbyte's state) then rewrites many of them.
      { scansLargeTable: true },
    );
    return new Map(rows.map(seedFromDb).map((row) => [row.seedKey, row]));
  }

  /** See `Destination.readBatches`. */
  async readBatches(stream: string): Promise<BatchRow[]> {
    const rows = await this.readSystem(
      this.context.db
        .selectFrom(this.context.qualified(systemTables.batches.name))
        .selectAll()
        .where('stream', '=', stream)
        .orderBy('created_at')
        .orderBy('idempotency_key')
        .compile(),
    );
    return rows.map(batchFromDb);
  }

  /** See `Destination.readSeedsByKey`. Where a lookup scans the ledger, only for the keys its key filter cannot rule out. */
  async readSeedsByKey(stream: string, keys: readonly string[]): Promise<Map<string, SeedRow>> {
    const filters = await this.context.ledgerKeys();
    if (filters && keys.length > 0)
      keys = await filters.mayHave(this.context.schema, stream, keys, (add) => this.scanSeedKeys(stream, add));
    if (keys.length === 0) return new Map();
    const rows = await this.readSystem(
      this.context.db
        .selectFrom(this.context.qualified(systemTables.seeds.name))
        .selectAll()
        .where('stream', '=', stream)
        .where('seed_key', 'in', keys)
        .compile(),
      { scansLargeTable: filters !== null },
    );
    return new Map(rows.map(seedFromDb).map((row) => [row.seedKey, row]));
  }

  /** Calls `add` with every seed key of `stream`'s ledger, a chunk at a time. */
  private scanSeedKeys(stream: string, add: (seedKey: string) => void): Promise<void> {
    const statement = this.context.db
      .selectFrom(this.context.qualified(systemTables.seeds.name))
      .select('seed_key')
      .where('stream', '=', stream)
      .compile();
    return this.context.withSession(async (session) => {
      if (!session.scan) throw new Error('A ledger key filter needs a backend that scans (SqlSession.scan)');
      await session.scan(statement, (row) => add(String(row[0])));
    });
  }

  /** See `Destination.readSeedPage`. */
  async readSeedPage(stream: string, after: string | null, limit: number): Promise<SeedRow[]> {
    const rows = await this.readSystem(
      this.context.db
        .selectFrom(this.context.qualified(systemTables.seeds.name))
        .selectAll()
        .where('stream', '=', stream)
        .$if(after !== null, (query) => query.where('seed_key', '>', after!))
        .orderBy('seed_key')
        .limit(Math.max(1, Math.floor(limit)))
        .compile(),
    );
    return rows.map(seedFromDb);
  }

  /** See `Destination.readOpenBatchPage`. */
  async readOpenBatchPage(stream: string, after: BatchPosition | null, limit: number): Promise<BatchRow[]> {
    const rows = await this.readSystem(
      this.context.db
        .selectFrom(this.context.qualified(systemTables.batches.name))
        .selectAll()
        .where('stream', '=', stream)
        .where('status', 'in', ['intent', 'submitted'])
        .$if(after !== null, (query) =>
          query.where((eb) =>
            eb.or([
              eb('created_at', '>', after!.createdAt),
              eb.and([eb('created_at', '=', after!.createdAt), eb('idempotency_key', '>', after!.idempotencyKey)]),
            ]),
          ),
        )
        .orderBy('created_at')
        .orderBy('idempotency_key')
        .limit(Math.max(1, Math.floor(limit)))
        .compile(),
    );
    return rows.map(batchFromDb);
  }

  /** See `Destination.readAnswers`. */
  async readAnswers(stream: string): Promise<Map<string, AnswerRow>> {
    const rows = await this.readSystem(
      this.context.db
        .selectFrom(this.context.qualified(systemTables.answers.name))
        .selectAll()
        .where('stream', '=', stream)
        .compile(),
    );
    return new Map(rows.map(answerFromDb).map((row) => [row.callKey, row]));
  }

  /** The statement updating a run's row, saved before (an UPDATE costs a fraction of an upsert on DuckDB). */
  updateRunStatement(run: RunRow): Statement {
    const { run_id: runId, ...fields } = runToDb(run);
    return this.context.db
      .updateTable(this.context.qualified(systemTables.runs.name))
      .set(fields)
      .where('run_id', '=', runId)
      .compile();
  }

  /** The statement deleting a stream's state rows by partition. */
  dropStateStatement(stream: string, partitions: readonly string[]): Statement {
    return this.context.db
      .deleteFrom(this.context.qualified(systemTables.state.name))
      .where('stream', '=', stream)
      .where('partition', 'in', partitions)
      .compile();
  }

  /** The statement deleting a stream's journaled answers by call key. */
  dropAnswersStatement(stream: string, callKeys: readonly string[]): Statement {
    return this.context.db
      .deleteFrom(this.context.qualified(systemTables.answers.name))
      .where('stream', '=', stream)
      .where('call_key', 'in', callKeys)
      .compile();
  }

  /**
   * See `Destination.saveRun`. A run's row is saved many times while it runs (its books, coalesced): an UPDATE
   * of the row costs a quarter of the upsert on DuckDB (3.9 against 15 ms at 3,000 calls a minute), so the upsert
   * runs only when the UPDATE found no row (the run's first save).
   */
  async saveRun(run: RunRow): Promise<void> {
    await this.context.withSession(async (session) => {
      if ((await session.run(this.updateRunStatement(run))) === 0)
        await session.run(this.upsert(systemTables.runs, [runToDb(run)]));
    });
  }

  /** See `Destination.readRuns`. */
  async readRuns(limit: number, status?: RunRow['status']): Promise<RunRow[]> {
    const rows = await this.readSystem(
      this.context.db
        .selectFrom(this.context.qualified(systemTables.runs.name))
        .selectAll()
        .$if(status !== undefined, (query) => query.where('status', '=', status!))
        .orderBy('started_at', 'desc')
        .orderBy('run_id', 'desc')
        .limit(Math.max(0, Math.floor(limit)))
        .compile(),
    );
    return rows.map(runFromDb);
  }

  /** Inserts rejected rows (already in `_seedline_rejected` shape). */
  insertRejected(session: SqlSession, rows: Record<string, unknown>[]): Promise<void> {
    return this.insertSystemRows(session, systemTables.rejected, rows);
  }

  /** Appends rows (in the table's column shape) to a system table without a key. */
  async insertSystemRows(session: SqlSession, table: SystemTable, rows: Record<string, unknown>[]): Promise<void> {
    for (let i = 0; i < rows.length; i += 500) {
      await session.run(
        this.context.db
          .insertInto(this.context.qualified(table.name))
          .values(rows.slice(i, i + 500))
          .compile(),
      );
    }
  }

  /** The delete of one `_seedline_rejected` row, matched on what says which record it is (the table has no key). */
  deleteRejected(row: RejectedRow): Statement {
    return this.context.db
      .deleteFrom(this.context.qualified(systemTables.rejected.name))
      .where('run_id', '=', row.runId)
      .where('stream', '=', row.stream)
      .where('table', '=', row.table)
      .where('record', '=', row.record)
      .where('reason', '=', row.reason)
      .compile();
  }

  /** An upsert of system-table rows on the table's primary key; the last of duplicate keys wins. */
  upsert(table: SystemTable, rows: Record<string, unknown>[]): Statement {
    return this.context.db
      .insertInto(this.context.qualified(table.name))
      .values(lastOfEachKey(table, rows))
      .onConflict(this.onConflictUpdate(table))
      .compile();
  }

  /**
   * Upserts system-table rows on the unit's session, the last of duplicate keys winning. With
   * `stagedUpserts` (DuckDB) they are bulk-loaded into a temporary table and upserted from it in
   * one statement: DuckDB binds and plans a 500-row VALUES upsert in ~200 ms, which was most of a
   * batch sync's time (24.6 of 43.6 s at 20k profile seeds). A few rows (a paged stream's unit: an
   * answer or a cursor or two) go as VALUES: the stage's three statements cost more than they save.
   */
  async upsertRows(session: SqlSession, table: SystemTable, rows: Record<string, unknown>[]): Promise<void> {
    const unique = lastOfEachKey(table, rows);
    if (table === systemTables.seeds)
      (await this.context.ledgerKeys())?.writing(
        this.context.schema,
        unique as { stream: unknown; seed_key: unknown }[],
      );
    if (!this.context.traits.stagedUpserts || unique.length <= FEW_ROWS_UPSERTED_AS_VALUES) {
      for (let i = 0; i < unique.length; i += 500) await session.run(this.upsert(table, unique.slice(i, i + 500)));
      return this.emptyDone(session, table, unique);
    }
    const columns = table.columns.map(([name, type]) => ({ name, type }));
    const names = columns.map((c) => c.name);
    const stage = `_seedline_system_stage_${++this.stagingCounter}`;
    const target = this.context.qualified(table.name);
    await session.run(
      sql`create temporary table ${sql.table(stage)} as select ${sql.join(names.map((n) => sql.ref(n)))} from ${sql.table(target)} limit 0`.compile(
        this.context.db,
      ),
    );
    await session.bulkInsert(
      { schema: null, table: stage, columns: names },
      {
        shape: { name: table.name, columns },
        columns: columns.map((c) => unique.map((row) => cell(row[c.name], c.type, c.name, false))),
        length: unique.length,
        constant: columns.map(() => false),
        stamped: [],
      },
    );
    const fromStage = this.context.db.selectFrom(stage).select(names);
    await session.run(
      this.context.db
        .insertInto(target)
        .columns(names)
        .expression(fromStage)
        .onConflict(this.onConflictUpdate(table))
        .compile(),
    );
    await session.run(sql`drop table ${sql.table(stage)}`.compile(this.context.db));
    await this.emptyDone(session, table, unique);
  }

  /** Empties `table.emptiedAt`'s column in the rows of `rows` that reached its status (500 keys a statement). */
  private async emptyDone(
    session: SqlSession,
    table: SystemTable,
    rows: readonly Record<string, unknown>[],
  ): Promise<void> {
    const rule = table.emptiedAt;
    if (!rule) return;
    const key = table.primaryKey[0]!;
    const done = rows.filter((row) => row.status === rule.status).map((row) => String(row[key]));
    for (let i = 0; i < done.length; i += 500)
      await session.run(
        this.context.db
          .updateTable(this.context.qualified(table.name))
          .set(rule.column, '')
          .where(key, 'in', done.slice(i, i + 500))
          .where(rule.column, '<>', '')
          .compile(),
      );
  }

  /** On a key already there, every column but the key, `created_at` and the table's write-once columns takes the new row's value. */
  private onConflictUpdate(table: SystemTable): Parameters<InsertQueryBuilder<any, any, any>['onConflict']>[0] {
    const kept = new Set([...table.primaryKey, 'created_at', ...(table.writeOnce ?? [])]);
    const updated = table.columns.map(([name]) => name).filter((name) => !kept.has(name));
    return (oc) =>
      oc
        .columns(table.primaryKey as string[])
        .doUpdateSet(Object.fromEntries(updated.map((name) => [name, sql.ref(`excluded.${name}`)])));
  }

  private async readSystem(statement: Statement, options?: ReadOptions): Promise<Record<string, unknown>[]> {
    return this.context.withSession((session) => session.all(statement, options));
  }
}

/**
 * Rows upserted one after another, as one upsert leaves them: a row a key, with the last row's
 * values and the first row's `created_at` (an upsert keeps the `created_at` it finds).
 */
function lastOfEachKey(table: SystemTable, rows: readonly Record<string, unknown>[]): Record<string, unknown>[] {
  const byKey = new Map<string, Record<string, unknown>>();
  const keepsCreatedAt = table.columns.some(([name]) => name === 'created_at');
  for (const row of rows) {
    const key = JSON.stringify(table.primaryKey.map((column) => row[column]));
    const first = byKey.get(key);
    byKey.set(key, first && keepsCreatedAt ? { ...row, created_at: first.created_at } : row);
  }
  return [...byKey.values()];
}

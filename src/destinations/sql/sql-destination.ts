import type { Kysely } from 'kysely';
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
  RunRow,
  SeedRowChange,
  SeedRow,
  StateRow,
  WriteOutcome,
} from '../destination.js';
import type { ShapedWrite, WriteShaping } from '../../normalize/record-shaper.js';
import type { TableDefinition } from '../../normalize/table-definition.js';
import { isFrozenRejection, PARTITION } from '../../normalize/table-definition.js';
import { shapeForWrite } from '../../normalize/record-shaper.js';
import {
  DestinationError,
  DestinationQueryError,
  DestinationSettleError,
  DestinationWriteError,
  NotReadOnlyError,
  OutsideWarehouseError,
  UnknownTableError,
} from '../destination-error.js';
import { assertIdentifier, quoteIdentifier } from '../identifiers.js';
import { SqlLoadUnit } from './sql-load-unit.js';
import type { ShapedBatch } from '../../normalize/record-shaper.js';
import { stampLoadTime } from '../../normalize/record-shaper.js';
import type { SqlContext, SqlDialectTraits, SqlSession } from './sql-session.js';
import { SqlSystemStore } from './sql-system-store.js';
import { SqlTableSetup } from './sql-table-setup.js';
import { SqlWriteModes } from './sql-write-modes.js';
import { SqlTriggerChanges } from './sql-trigger-changes.js';
import type { LedgerKeyFilters } from './ledger-key-filters.js';
import { rejectedToDb, seedFromDb, systemTables } from './system-tables.js';
import type { TableLayout } from '../../normalize/table-layout.js';
import { sameLayout, tableLayout } from '../../normalize/table-layout.js';

/**
 * The load time of the last write of this process, in epoch milliseconds. Shared by its
 * destinations, so two writing the same keys of one DuckDB file stamp them in the order they
 * wrote them, never twice the same: a settle keeps a key's latest write (PendingReplacements).
 */
let lastTimestamp = 0;

/** The parts a `SqlDestination` delegates to, one per role, sharing its sessions. */
interface SqlDestinationParts {
  /** The system tables: ensuring them, the ledger reads, the statements of a unit. */
  store: SqlSystemStore;
  /** The data tables: creating and evolving them. */
  tableSetup: SqlTableSetup;
  /** How a shaped batch goes into its tables, per write mode. */
  writeModes: SqlWriteModes;
  /** What Triggers said, written into rows (refresh on change). */
  triggerChanges: SqlTriggerChanges;
}

/** The ledger's columns, as `seedFromDb` reads them. */
const SEED_COLUMNS = systemTables.seeds.columns.map(([name]) => name);

/**
 * The write-mode logic shared by the SQL backends: tables from zod, staging and merge, history,
 * system tables. A backend supplies sessions (connections), its bulk path, its type names and
 * its lock. Statements are built with kysely (identifiers quoted by kysely, values bound). The
 * destination shapes and routes writes; the system tables (`SqlSystemStore`), the data tables'
 * DDL (`SqlTableSetup`) and the write modes (`SqlWriteModes`) are parts of their own.
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
  /** Made on first use: a backend sets `db` and `traits` after this constructor has run. */
  private madeParts: SqlDestinationParts | null = null;

  protected constructor(schema: string) {
    this.schema = assertIdentifier(schema, 'schema');
  }

  abstract lock(options: LockOptions): Promise<void>;
  abstract close(): Promise<void>;
  /** Opens a session (a connection of its own). */
  protected abstract openSession(): Promise<SqlSession>;
  /** Throws when the writer lock this destination took is lost, so a unit is not committed without it. Default: no-op. */
  protected assertWriterLock(): void {}
  /** The ledger's key filters, for a backend whose lookups by key scan the ledger (see `LedgerKeyFilters`). Default: none. */
  protected ledgerKeyFilters(): Promise<LedgerKeyFilters | null> {
    return Promise.resolve(null);
  }

  async ensureSystemTables(): Promise<void> {
    await this.parts.store.ensure();
    await this.settle();
  }

  async settle(): Promise<void> {
    if (!this.traits.deferredMerge) return;
    try {
      await this.withSession(async (session) => {
        if (await this.parts.writeModes.unsettled(session))
          await this.asWriter(() => this.parts.writeModes.settle(session));
      });
    } catch (error) {
      if (error instanceof DestinationError) throw error;
      throw new DestinationSettleError(null, error);
    }
  }

  /**
   * Runs `fn`, which writes outside any unit, when no unit of another destination can be under
   * way: a backend whose destinations share a writer slot in the process (DuckDB) runs it only
   * when this destination holds the slot or can hold it meanwhile, and otherwise skips it.
   */
  protected asWriter(fn: () => Promise<void>): Promise<void> {
    return fn();
  }

  async ensureTable(definition: TableDefinition): Promise<void> {
    const layout = tableLayout(definition);
    await this.withSession(async (session) => {
      const physical = await this.parts.tableSetup.ensure(session, layout);
      // The same layout again keeps its object: writes shaped for it elsewhere (a worker thread) still fit it as they are.
      const known = this.tables.get(layout.name);
      this.tables.set(layout.name, known && sameLayout(known, layout) ? known : layout);
      for (const [name, order] of physical) this.physical.set(name, order);
    });
  }

  async expectKeys(stream: string, table: string, keys: number): Promise<void> {
    this.parts.writeModes.expectKeys(table, keys);
    (await this.ledgerKeyFilters())?.expect(this.schema, stream, keys);
  }

  async applyTriggerChanges(table: string, runId: string, changes: readonly SeedRowChange[]): Promise<number> {
    if (changes.length === 0 || !(await this.hasTable(table))) return 0;
    const { triggerChanges } = this.parts;
    return this.withSession(async (session) => {
      const added = await triggerChanges.ensureColumns(session, table);
      this.physical.get(table)?.push(...added);
      await session.workOnStoredRows?.();
      await session.run({ sql: this.traits.begin, parameters: [] });
      try {
        const changed = await triggerChanges.apply(session, table, runId, changes);
        this.assertWriterLock();
        await session.run({ sql: 'COMMIT', parameters: [] });
        return changed;
      } catch (error) {
        await session.run({ sql: 'ROLLBACK', parameters: [] }).catch(() => undefined);
        if (error instanceof DestinationError) throw error;
        throw new DestinationWriteError(`Applying Triggers' changes to ${table}`, error);
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
    return new SqlLoadUnit(this, this.parts.store, session, runId, () => this.assertWriterLock());
  }

  async query<Row extends Record<string, unknown> = Record<string, unknown>>(
    text: string,
    params: readonly unknown[] = [],
  ): Promise<Row[]> {
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
        if (error instanceof NotReadOnlyError || error instanceof OutsideWarehouseError) throw error;
        throw new DestinationQueryError(error);
      }
    });
  }

  async *readQueryChunks(text: string, size: number): AsyncGenerator<unknown[][]> {
    const session = await this.openSession();
    let broken = false;
    try {
      yield* session.readOnlyChunks(text, size);
    } catch (error) {
      if (error instanceof NotReadOnlyError || error instanceof OutsideWarehouseError) throw error;
      broken = true;
      throw new DestinationQueryError(error);
    } finally {
      await session.release(broken);
    }
  }

  readState(stream: string): Promise<Map<string, StateRow>> {
    return this.parts.store.readState(stream);
  }

  readSeeds(stream: string): Promise<Map<string, SeedRow>> {
    return this.parts.store.readSeeds(stream);
  }

  readBatches(stream: string): Promise<BatchRow[]> {
    return this.parts.store.readBatches(stream);
  }

  readSeedsByKey(stream: string, keys: readonly string[]): Promise<Map<string, SeedRow>> {
    return this.parts.store.readSeedsByKey(stream, keys);
  }

  readStateByKey(stream: string, keys: readonly string[]): Promise<Map<string, StateRow>> {
    return this.parts.store.readStateByKey(stream, keys);
  }

  async *readSeedChunks(stream: string, size: number): AsyncGenerator<SeedRow[]> {
    const table = `${quoteIdentifier(this.schema, 'schema')}.${quoteIdentifier(systemTables.seeds.name, 'table')}`;
    // The read-only path streams without a transaction held open; the stream's name is a literal, its quotes doubled.
    const sql = `select ${SEED_COLUMNS.join(', ')} from ${table} where stream = '${stream.replaceAll("'", "''")}'`;
    for await (const rows of this.readQueryChunks(sql, size))
      yield rows.map((values) => seedFromDb(Object.fromEntries(SEED_COLUMNS.map((column, i) => [column, values[i]]))));
  }

  readSeedPage(stream: string, after: string | null, limit: number): Promise<SeedRow[]> {
    return this.parts.store.readSeedPage(stream, after, limit);
  }

  readOpenBatchPage(stream: string, after: BatchPosition | null, limit: number): Promise<BatchRow[]> {
    return this.parts.store.readOpenBatchPage(stream, after, limit);
  }

  readAnswers(stream: string): Promise<Map<string, AnswerRow>> {
    return this.parts.store.readAnswers(stream);
  }

  saveRun(run: RunRow): Promise<void> {
    return this.parts.store.saveRun(run);
  }

  readRuns(limit: number, status?: RunRow['status']): Promise<RunRow[]> {
    return this.parts.store.readRuns(limit, status);
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
    const rows = await this.query(
      'select 1 as found from information_schema.tables where table_schema = $1 and table_name = $2',
      [this.schema, table],
    );
    return rows.length > 0;
  }

  prepareWrite(table: string, records: readonly Record<string, unknown>[], runId: string): PreparedWrite {
    const layout = this.layoutOf(table);
    try {
      return new SqlPreparedWrite(
        table,
        runId,
        records.length,
        () => records,
        layout,
        this.shape(layout, records, runId),
      );
    } catch (error) {
      // What a unit's write would have thrown: shaping only rejects records, anything else is a failure of the write.
      throw new DestinationWriteError(`Writing ${records.length} records to ${table}`, error);
    }
  }

  writeShaping(table: string): WriteShaping | undefined {
    const layout = this.tables.get(table);
    return layout && { table, layout, rejectNul: this.traits.rejectNul };
  }

  adoptWrite(
    shaping: WriteShaping,
    shaped: ShapedWrite,
    size: number,
    records: () => readonly Record<string, unknown>[],
    runId: string,
  ): PreparedWrite {
    return new SqlPreparedWrite(shaping.table, runId, size, records, shaping.layout, shaped);
  }

  /** Writes one batch of records, or a write prepared by `prepareWrite`, inside a unit's transaction. */
  async writeInUnit(
    session: SqlSession,
    runId: string,
    table: string,
    input: readonly Record<string, unknown>[] | PreparedWrite,
    stream = table,
  ): Promise<WriteOutcome> {
    const layout = this.layoutOf(table);
    const prepared = preparedFor(input, table, runId);
    const lookup = session.prepareBulk?.(
      [layout.name, ...layout.children.map((c) => c.name)].map((name) => this.parts.writeModes.bulkTarget(name)),
    );
    // Settled even when shaping throws, so its failure is not left unhandled.
    lookup?.catch(() => undefined);
    // A pipelined session sends a statement from a microtask: let the lookup go out now, so the server answers it
    // while the records are shaped instead of after.
    if (lookup) await undefined;
    // A write prepared before its table evolved (a new column) is shaped again.
    const batch =
      prepared?.layout === layout
        ? prepared.batch
        : this.shape(layout, prepared ? prepared.records() : (input as readonly Record<string, unknown>[]), runId);
    stampLoadTime(batch, this.nextTimestamp());
    await lookup;
    if (batch.rejected.length > 0) {
      const now = new Date();
      const rows = batch.rejected.map((r) =>
        rejectedToDb(
          { runId, stream, table, record: safeJson(r.record), reason: r.reason, partition: partitionOf(r.record) },
          now,
        ),
      );
      await this.parts.store.insertRejected(session, rows);
    }
    const rows = batch.records > 0 ? await this.parts.writeModes.apply(session, layout, batch, runId) : 0;
    const frozen = batch.rejected.filter((r) => isFrozenRejection(r.reason)).length;
    return {
      records: batch.records,
      rows,
      rejected: batch.rejected.length,
      ...(batch.repairs.length > 0 ? { repairs: batch.repairs } : {}),
      ...(frozen > 0 ? { frozen } : {}),
    };
  }

  private layoutOf(table: string): TableLayout {
    const layout = this.tables.get(table);
    if (!layout) throw new UnknownTableError(table);
    return layout;
  }

  /** Shaped rows of `records`, as `shapeForWrite` shapes them in any thread; their load time is stamped when they are written. */
  private shape(layout: TableLayout, records: readonly Record<string, unknown>[], runId: string): ShapedBatch {
    return shapeForWrite({ table: layout.name, layout, rejectNul: this.traits.rejectNul }, records, runId);
  }

  /** The parts, made on first use. */
  private get parts(): SqlDestinationParts {
    if (this.madeParts === null) {
      const context: SqlContext = {
        db: this.db,
        schema: this.schema,
        traits: this.traits,
        qualified: (table) => this.qualified(table),
        withSession: (fn) => this.withSession(fn),
        ledgerKeys: () => this.ledgerKeyFilters(),
      };
      this.madeParts = {
        store: new SqlSystemStore(context),
        tableSetup: new SqlTableSetup(context),
        writeModes: new SqlWriteModes(context, this.physical),
        triggerChanges: new SqlTriggerChanges(context),
      };
    }
    return this.madeParts;
  }

  private nextTimestamp(): number {
    lastTimestamp = Math.max(Date.now(), lastTimestamp + 1);
    return lastTimestamp;
  }
}

/** Records shaped by `SqlDestination.prepareWrite`, with the layout they were shaped for. */
class SqlPreparedWrite implements PreparedWrite {
  /** Set by its first write: the load time is stamped into its rows, which a second write would change under the first. */
  written = false;

  /**
   * @param records The records shaped, should their table change before the write (then shaped again).
   * @param layout The layout they were shaped for.
   */
  constructor(
    readonly table: string,
    readonly runId: string,
    readonly size: number,
    readonly records: () => readonly Record<string, unknown>[],
    readonly layout: TableLayout,
    readonly batch: ShapedBatch,
  ) {}
}

/** The prepared write `input` is (null for plain records), checked against the unit writing it. */
function preparedFor(
  input: readonly Record<string, unknown>[] | PreparedWrite,
  table: string,
  runId: string,
): SqlPreparedWrite | null {
  if (Array.isArray(input)) return null;
  if (!(input instanceof SqlPreparedWrite))
    throw new TypeError('LoadUnit.write takes records or a write prepared by Destination.prepareWrite');
  if (input.table !== table || input.runId !== runId) {
    throw new TypeError(
      `A write prepared for table ${input.table} in run ${input.runId} cannot be written to table ${table} in run ${runId}`,
    );
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

/** The partition the engine set on a row (see PARTITION), as JSON text; null when none. */
function partitionOf(record: unknown): string | null {
  const partition =
    record !== null && typeof record === 'object' ? (record as { [PARTITION]?: unknown })[PARTITION] : undefined;
  return partition === undefined ? null : safeJson(partition);
}

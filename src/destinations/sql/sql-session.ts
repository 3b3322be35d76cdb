import type { Kysely, RawBuilder } from 'kysely';
import type { ShapedRows } from '../../normalize/record-shaper.js';
import type { LogicalType } from '../../normalize/table-layout.js';
import type { LedgerKeyFilters } from './ledger-key-filters.js';

/** A compiled statement: SQL with `$n` placeholders and its bound values. */
export interface Statement {
  /** The SQL text, with `$n` placeholders. */
  sql: string;
  /** The values bound to the placeholders, in order. */
  parameters: readonly unknown[];
}

/** How a read runs. */
export interface ReadOptions {
  /**
   * The read scans a table that grows with the warehouse (a ledger lookup by keys on DuckDB). A
   * backend whose commits checkpoint in the same bounded memory (DuckDB) runs it apart from
   * them: beside a checkpoint, one of the two runs out of `memory_limit`.
   */
  scansLargeTable?: boolean;
}

/** One connection of a backend, held for a unit or a single operation. */
export interface SqlSession {
  /** Runs a statement; resolves to the number of rows it changed. */
  run(statement: Statement): Promise<number>;
  /** Runs a statement; resolves to its rows as plain JS values (see `Destination.query`). */
  all(statement: Statement, options?: ReadOptions): Promise<Record<string, unknown>[]>;
  /** Runs one read-only statement a user wrote (see `Destination.readQuery`); throws `NotReadOnlyError` for anything else. */
  readOnly(sql: string): Promise<Record<string, unknown>[]>;
  /** `readOnly` a chunk of about `size` rows at a time (values in column order); the session stays busy until the generator ends. */
  readOnlyChunks(sql: string, size: number): AsyncGenerator<unknown[][]>;
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
  /**
   * Says the unit is about to change or delete rows already stored (a merge of keys a table may
   * hold, a replace or history write, a settle), so a backend that runs loads of new keys in less
   * memory (DuckDB) gives it the room such work needs; awaited before that work. Optional.
   */
  workOnStoredRows?(): Promise<void>;
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
  /** System-table upserts go through a bulk-loaded temporary table (`SqlSystemStore.upsertRows`) instead of a bound VALUES list. */
  stagedUpserts: boolean;
  /** Merges rule out new keys with a filter of the parent table's keys (see `MergeKeyFilters`) instead of probing the table: for a backend without key indexes. */
  keyFilter: boolean;
  /**
   * A merge does not delete the earlier rows of its keys: it lists the keys, and the destination
   * deletes those rows when it settles (see `PendingReplacements`). For a backend without key
   * indexes, where finding a key's rows scans the table.
   */
  deferredMerge: boolean;
  /**
   * A statement that, run first in a transaction, makes other processes' table setup of `schema`
   * wait until it commits (Postgres: workers creating or evolving one table at once would collide
   * on the catalog). None where one process writes (DuckDB).
   */
  ddlLock?: (schema: string) => Statement;
}

/** What the parts of a `SqlDestination` share: how they build statements and reach a session. */
export interface SqlContext {
  /** Builds and compiles statements (identifiers quoted by kysely, values bound). */
  readonly db: Kysely<any>;
  /** The destination's schema, validated. */
  readonly schema: string;
  /** What differs between the SQL backends. */
  readonly traits: SqlDialectTraits;
  /** `schema.table`, validated, for kysely to quote. */
  qualified(table: string): string;
  /** Runs `fn` on a session of its own and releases it (discarded when `fn` failed other than with a `DestinationError`). */
  withSession<T>(fn: (session: SqlSession) => Promise<T>): Promise<T>;
  /** The ledger's key filters where a lookup by key scans the ledger (DuckDB; see `LedgerKeyFilters`); null where it probes an index. */
  ledgerKeys(): Promise<LedgerKeyFilters | null>;
}

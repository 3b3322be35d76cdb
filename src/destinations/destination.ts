import type { z } from 'zod';
import type { RepairCount, TableDefinition } from '../normalize/table-definition.js';
import type { ShapedWrite, WriteShaping } from '../normalize/record-shaper.js';
import type { LogicalType } from '../normalize/table-layout.js';
import type { FleetStore } from './fleet-store.js';

/**
 * The interface the engine loads through, made of four roles (lifecycle and lock, warehouse reads,
 * system store, loader) so a module can ask for only the role it uses. Modelled on kysely's
 * Dialect/Driver split: a backend is a small set of factory methods in its own folder (`duckdb/`,
 * `postgres/`, sharing `sql/`); the engine never imports a backend directly, only this file and
 * `createDestination`.
 *
 * @example
 * ```ts
 * const dest = await createDestination({ type: 'duckdb', path: 'data/w.duckdb', schema: 'seedline' });
 * await dest.lock({ holder: 'sync run_123', wait: false });
 * await dest.ensureSystemTables();
 * await dest.ensureTable(profilesTable);
 * const unit = await dest.beginUnit('run_123');
 * await unit.write('profiles', records); // or dest.prepareWrite('profiles', records, 'run_123'), shaped earlier
 * await unit.saveState([{ stream: 'profiles', partition: '*', cursor: '{"page":2}' }]);
 * await unit.commit();
 * await dest.close();
 * ```
 */
export interface Destination extends DestinationLifecycle, WarehouseReads, SystemStore, Loader {}

/** A destination's lifecycle: what it is, its single-writer lock, its system tables, settling and closing. */
export interface DestinationLifecycle {
  /** What this backend can do. */
  readonly capabilities: DestinationCapabilities;
  /** Backend name (`duckdb` | `postgres`), for messages. */
  readonly kind: DestinationKind;
  /** The destination schema (default `seedline`). */
  readonly schema: string;

  /**
   * Takes the single-writer lock (DuckDB: the file; Postgres: an advisory lock per schema).
   * Throws `DestinationLockedError` naming the current holder, or waits when `wait` is true.
   */
  lock(options: LockOptions): Promise<void>;

  /**
   * Creates the schema and the `_seedline_*` system tables when missing, and settles what a
   * killed process left unsettled (see `settle`). Idempotent.
   */
  ensureSystemTables(): Promise<void>;

  /**
   * Finishes the merges units left for later: a backend without key indexes (DuckDB) does not
   * delete a merged key's earlier rows in the unit (that would scan the table every unit) but
   * lists the key, and here deletes the rows replaced, one scan per table. Until then a table may
   * hold a key's earlier rows beside its new ones. Call it outside any unit, with no unit running
   * (under the run's write lock), before the tables are read: the engine does after each stream.
   * On DuckDB it settles only when this destination holds the writer lock or, for as long as it
   * settles, can take it: another destination of the process that holds it settles its own merges.
   * Throws `DestinationSettleError` (the rows loaded are kept, and the keys stay listed). A no-op
   * where units merge in place (Postgres). Idempotent.
   */
  settle(): Promise<void>;

  /** Releases the lock and closes connections. */
  close(): Promise<void>;

  /** What workers share through this destination (`seedline worker`); absent where one process writes (DuckDB). */
  fleetStore?(): FleetStore;
}

/** What loads rows: tables made or evolved, writes shaped (here or in another thread), and load units. */
export interface Loader {
  /**
   * Creates the table (and its child tables) for a stream from its zod schema, or evolves it:
   * fields new to the schema add nullable columns. Idempotent.
   */
  ensureTable(table: TableDefinition): Promise<void>;

  /**
   * Starts a load unit: everything written through it (rows, rejected records, state, seed
   * ledger, batch ledger) commits in one transaction or not at all.
   */
  beginUnit(runId: string): Promise<LoadUnit>;

  /**
   * Shapes records for a table (created by `ensureTable`) ahead of the unit that writes them:
   * CPU work that needs no connection, so it can run while another unit commits. Pass the result
   * to `LoadUnit.write` of a unit of the same run, once; nothing is written until then.
   */
  prepareWrite(table: string, records: readonly Record<string, unknown>[], runId: string): PreparedWrite;

  /**
   * How writes to `table` are shaped now, as plain data another thread can take (see
   * `shapeForWrite`): undefined until `ensureTable` made the table in this process.
   */
  writeShaping(table: string): WriteShaping | undefined;

  /**
   * A write of rows `shapeForWrite` shaped with `shaping` (in this thread or another), as
   * `prepareWrite` would have made it from `size` records. `records` gives those records again,
   * for the rare write whose table changed since (it is shaped anew); it is not called otherwise.
   */
  adoptWrite(
    shaping: WriteShaping,
    shaped: ShapedWrite,
    size: number,
    records: () => readonly Record<string, unknown>[],
    runId: string,
  ): PreparedWrite;

  /**
   * Says a sync is about to look up and write up to `keys` seeds of `stream` in the ledger, and
   * as many records in `table`: a backend that keeps key filters in memory sizes them once for
   * that many instead of growing them by doublings (up to half the bytes). A hint only: more or
   * fewer keys are fine.
   */
  expectKeys?(stream: string, table: string, keys: number): Promise<void>;

  /**
   * Writes what Triggers said into the rows of their seeds (matched by the table's `seed` column),
   * in one transaction, in order: merge updates the row; history closes its open version at the
   * Trigger's `checked_at` and adds a version from then (child rows copied to it). Each changed
   * row records the Trigger in `_trigger_id` and `_trigger_checked_at` (added to the table the
   * first time; a load leaves them NULL). A change no newer than the row's last one is skipped, so
   * applying twice changes nothing. Resolves to the rows changed; 0 when the table is not there.
   * See docs/streams.md#what-a-trigger-already-says.
   */
  applyTriggerChanges(table: string, runId: string, changes: readonly SeedRowChange[]): Promise<number>;
}

/** The columns of a row written from a Trigger (see `Loader.applyTriggerChanges`); a load leaves them NULL. */
export const TRIGGER_COLUMNS: readonly { name: string; type: LogicalType }[] = [
  { name: '_trigger_id', type: 'text' },
  { name: '_trigger_checked_at', type: 'timestamp' },
];

/** What one Trigger's diff said of a row's columns (refresh on change, the manifest's `apply`). */
export interface TriggerChange {
  triggerId: string;
  checkedAt: Date;
  /** Column → the diff's `after`. */
  values: Readonly<Record<string, unknown>>;
}

/** A Trigger's change to the row of one seed, as its table's `seed` column holds it. */
export interface SeedRowChange extends TriggerChange {
  seed: string;
}

/** Reads of the warehouse: a user's read-only SQL, seedline's own queries, and whether a table exists. */
export interface WarehouseReads {
  /**
   * Runs SQL a user wrote, read-only by construction: exactly one statement, and a select (DuckDB:
   * its prepared statement type; Postgres: in a read-only transaction, sent as one prepared
   * statement). Anything else throws `NotReadOnlyError` and nothing is run.
   */
  readQuery<Row extends Record<string, unknown> = Record<string, unknown>>(sql: string): Promise<Row[]>;
  /**
   * Runs SQL a user wrote as `readQuery` does (refused the same way) and yields its rows a chunk
   * of about `size` at a time, each row its values in column order, never holding the whole
   * answer. Breaking out of the loop ends the query and returns its connection.
   */
  readQueryChunks(sql: string, size: number): AsyncGenerator<unknown[][]>;
  /** Whether a table of this name is in the destination's schema. */
  hasTable(table: string): Promise<boolean>;
  /** Runs seedline's own SQL (bound `$1`-style parameters) and returns plain rows. */
  query<Row extends Record<string, unknown> = Record<string, unknown>>(
    sql: string,
    params?: readonly unknown[],
  ): Promise<Row[]>;
}

/** The system tables outside a unit: stream state, seed and batch ledgers, journaled answers and runs (writes go through a `LoadUnit`). */
export interface SystemStore {
  /** Reads saved stream state, keyed by partition. */
  readState(stream: string): Promise<Map<string, StateRow>>;
  /** Reads the seed ledger of a stream, keyed by seed key. */
  readSeeds(stream: string): Promise<Map<string, SeedRow>>;
  /** Reads the batch intent log of a stream (all statuses), oldest first. */
  readBatches(stream: string): Promise<BatchRow[]>;
  /** Reads the state rows of these partition keys (a chunk's worth, up to a few thousand), keyed by partition; a key without a row is absent. */
  readStateByKey(stream: string, keys: readonly string[]): Promise<Map<string, StateRow>>;
  /** Reads the ledger rows of these seed keys (a chunk's worth, up to a few thousand), keyed by seed key; a key without a row is absent. */
  readSeedsByKey(stream: string, keys: readonly string[]): Promise<Map<string, SeedRow>>;
  /** Every ledger row of a stream in one read, about `size` at a time, in no order: for an export, where a keyset scan would query a large ledger page by page. */
  readSeedChunks(stream: string, size: number): AsyncGenerator<SeedRow[]>;
  /** One page of a keyset scan of a stream's ledger: up to `limit` rows with a seed key after `after` (from the first when null), in seed-key order. */
  readSeedPage(stream: string, after: string | null, limit: number): Promise<SeedRow[]>;
  /** One page of a keyset scan of a stream's open batches (`intent` or `submitted`): up to `limit` rows after `after` (from the first when null), oldest first. */
  readOpenBatchPage(stream: string, after: BatchPosition | null, limit: number): Promise<BatchRow[]>;

  /** Reads the answers of billed single calls journaled for a stream and not yet loaded, keyed by call key. */
  readAnswers(stream: string): Promise<Map<string, AnswerRow>>;
  /** Records the start or the end of a run in `_seedline_runs` (outside any unit; upsert on run_id). */
  saveRun(run: RunRow): Promise<void>;
  /** Reads runs, newest first; `status` keeps only the runs in that state (default: every run). */
  readRuns(limit: number, status?: RunRow['status']): Promise<RunRow[]>;
}

/** A backend's capabilities (as readonly booleans, each with its default stated). */
export interface DestinationCapabilities {
  /** Bulk writes go through a native bulk path (appender / COPY) rather than INSERTs. Default: true. */
  readonly bulkLoad: boolean;
  /** Several processes may read while one writes. DuckDB: false (the file is locked). Postgres: true. */
  readonly concurrentReaders: boolean;
  /** The JSON type is binary and indexable (jsonb). DuckDB: false. Postgres: true. */
  readonly binaryJson: boolean;
}

/** Supported backends. */
export type DestinationKind = 'duckdb' | 'postgres';

/** Options of `lock`. */
export interface LockOptions {
  /** Who takes the lock (shown to a second writer), e.g. `seedline sync (pid 123, run r_…)`. */
  holder: string;
  /** Wait for the lock instead of failing. Default: false. */
  wait?: boolean;
  /**
   * Share the lock with other holders that share it (`seedline worker` on Postgres: workers write
   * side by side, a `sync` waits for them all, and they for it). Postgres only. Default: false.
   */
  shared?: boolean;
  /** Ends a wait early with `LockWaitAbortedError` (e.g. on SIGTERM). Default: none (the wait lasts until the lock is free). */
  signal?: AbortSignal;
}

/** Result of `LoadUnit.write`. */
export interface WriteOutcome {
  /** Parent records written. */
  records: number;
  /** Rows written, parents and children. */
  rows: number;
  /** Records sent to `_seedline_rejected`. */
  rejected: number;
  /** Values that did not fit and were kept in `_extra` or discarded, per field. Default: none. */
  repairs?: RepairCount[];
  /** Of `rejected`, the records `schema_contract: freeze` refused. Default: 0. */
  frozen?: number;
}

/** Options of `LoadUnit.write`. */
export interface WriteOptions {
  /** Stream the records belong to, recorded with the ones sent to `_seedline_rejected`. Default: the table's name. */
  stream?: string;
}

/** Records shaped by `Destination.prepareWrite`, waiting for `LoadUnit.write`. */
export interface PreparedWrite {
  readonly table: string;
  readonly runId: string;
  /** Number of records given (before de-duplication and rejection). */
  readonly size: number;
}

/** One transaction's worth of rows and the state that says they were loaded. */
export interface LoadUnit {
  /**
   * Writes records with the table's write mode. A record whose value does not fit its column's
   * type goes to `_seedline_rejected` with the reason; the rest load.
   */
  write(
    table: string,
    records: readonly Record<string, unknown>[] | PreparedWrite,
    options?: WriteOptions,
  ): Promise<WriteOutcome>;
  /** Records that failed validation upstream (schema parse), kept with their raw JSON and reason. */
  reject(rows: readonly RejectedRow[]): Promise<void>;
  /** Appends counts of fields repaired so that records load (`_seedline_repairs`). */
  saveRepairs(rows: readonly RepairRow[]): Promise<void>;
  /** Deletes rows of `_seedline_rejected` (each matched on run, stream, table, record and reason), e.g. once they loaded on a retry. */
  dropRejected(rows: readonly RejectedRow[]): Promise<void>;
  /** Upserts stream state rows. */
  saveState(rows: readonly StateRow[]): Promise<void>;
  /** Upserts seed-ledger rows. */
  saveSeeds(rows: readonly SeedRow[]): Promise<void>;
  /** Deletes the state of these partitions of a stream (`seedline state reset`: they start over at the next run). */
  dropState(stream: string, partitions: readonly string[]): Promise<void>;
  /** Upserts batch-ledger rows (on idempotency_key). */
  saveBatches(rows: readonly BatchRow[]): Promise<void>;
  /** Upserts journaled answers of billed single calls (on stream and call key). */
  saveAnswers(rows: readonly AnswerRow[]): Promise<void>;
  /** Deletes journaled answers once what they hold is loaded (in the same unit as the rows). */
  dropAnswers(stream: string, callKeys: readonly string[]): Promise<void>;
  /** Updates the run's row in `_seedline_runs` (saved before by `saveRun`) with the unit: its books commit with what they paid for. */
  updateRun(run: RunRow): Promise<void>;
  /**
   * Sends what the unit still holds (system-table upserts wait for the COMMIT) without
   * committing: after it, a failure of `commit` is the COMMIT's own. `commit` does it anyway.
   */
  flush(): Promise<void>;
  /** Commits everything written through this unit. */
  commit(): Promise<void>;
  /** Discards everything written through this unit. */
  rollback(): Promise<void>;
}

/** Row of `_seedline_state`. */
export interface StateRow {
  stream: string;
  /** Partition key (`*` for unpartitioned streams). */
  partition: string;
  /** Opaque cursor, usually JSON. */
  cursor: string;
  updatedAt?: Date;
}

/** Status of a seed in the ledger. */
export type SeedStatus = 'pending' | 'submitted' | 'fetched' | 'failed' | 'skipped';

/** Row of `_seedline_seeds`. */
export interface SeedRow {
  stream: string;
  /** Stable key of the seed (normalised). */
  seedKey: string;
  /** The seed exactly as the user wrote it. */
  seed: string;
  status: SeedStatus;
  /** Canonical URL the service answered with, when known. */
  canonicalUrl?: string | null;
  jobId?: string | null;
  credits?: number;
  fetchedAt?: Date | null;
  error?: string | null;
  updatedAt?: Date;
}

/** Status of a batch intent. */
export type BatchStatus = 'intent' | 'submitted' | 'completed' | 'failed';

/** Row of `_seedline_batches`. */
/** Where a keyset scan of batch rows stands: the last row read (rows are ordered by creation, then key). */
export type BatchPosition = Pick<BatchRow, 'idempotencyKey'> & { createdAt: Date };

export interface BatchRow {
  idempotencyKey: string;
  stream: string;
  /** sha256 of the exact request body. */
  bodyHash: string;
  /** The exact request body (JSON), so an unanswered intent can be resubmitted byte for byte. */
  body: string;
  jobId?: string | null;
  status: BatchStatus;
  /** Cursor of `GET /v1/batch/{id}/results` after the last loaded page. */
  resultsCursor?: string | null;
  itemCount: number;
  createdAt?: Date;
  updatedAt?: Date;
  /**
   * Fingerprint of the API key the job is asked with (`seedline worker` with several keys): a job
   * belongs to one account, so only that key re-attaches to it. Null or absent: the primary key.
   */
  keyId?: string | null;
}

/**
 * Row of `_seedline_answers`: the answer of a billed single call, written the moment it arrives
 * (before shaping) and deleted in the unit that loads it, so a crash in between pays nothing again.
 */
export interface AnswerRow {
  stream: string;
  /** sha256 of the call and its exact arguments: the same request in a later run finds it. */
  callKey: string;
  /** Partition key of the stream the call was made for. */
  partition: string;
  /** The call's name (`searchJobs`, `profiles.enrich`, …). */
  call: string;
  /** The call's arguments as JSON text (the body sent). */
  args: string;
  /** The answer envelope as JSON text (`{ data, meta }`). */
  answer: string;
  /** Credits the service billed for it (`meta.creditsUsed`). */
  credits: number;
  /** Run that paid for it. */
  runId: string;
  receivedAt: Date;
  /**
   * The partition's values as JSON text, so a run that cannot make the partition itself (a fresh
   * store without its parent rows) still loads the answer. Default: none (journaled before them).
   */
  partitionValues?: string | null;
}

/** Row of `_seedline_repairs`: how many values of one field a unit of one run kept in `_extra` or discarded. */
export interface RepairRow extends RepairCount {
  runId: string;
  stream: string;
}

/** Row of `_seedline_rejected`. */
export interface RejectedRow {
  runId: string;
  stream: string;
  table: string;
  /** The raw record as JSON text. */
  record: string;
  reason: string;
  /** The partition the record was shaped for, as JSON text (what `rejected retry` shapes it with again). Default: none. */
  partition?: string | null;
}

/** Row of `_seedline_runs`. */
export interface RunRow {
  runId: string;
  startedAt: Date;
  finishedAt?: Date | null;
  /** `running` | `succeeded` | `partial` | `failed` | `stopped` | `interrupted`. */
  status: string;
  /** JSON: per-stream summary. */
  streams?: string | null;
  creditsEstimated?: number;
  /** Credits the service said it billed, as the run read them (answers, and results of batch jobs, earlier runs' included). */
  creditsUsed?: number;
  /** Credits it may have billed without saying so (lost answers, unread batch items, calls in flight when killed), at worst case. */
  creditsAtRisk?: number;
  /** Worst case of earlier runs' at-risk items this run read the bills of (counted in its `creditsUsed`). */
  creditsSettledEarlier?: number;
  /** How far the account's `credits_remaining` fell over the run (GET /v1/account at start and end); null when unknown. */
  balanceChange?: number | null;
  error?: string | null;
  /** Why some stream stopped before its work was done (`budget_exhausted`); null when none did. */
  stopReason?: string | null;
  /** Group of `schedule:` that started the run; null for a run started by hand. */
  scheduleGroup?: string | null;
}

/** Connection settings of a destination. */
export type DestinationConfig =
  | {
      type: 'duckdb';
      path: string;
      schema?: string;
      /** DuckDB settings over the defaults (e.g. `{ memory_limit: '1GB' }`). Default: none. */ settings?: Record<
        string,
        string
      >;
    }
  | {
      type: 'postgres';
      url: string;
      schema?: string;
      /** Sessions idle inside a transaction this long are ended by the server (a worker: its lease). Default: never. */
      idleInTransactionTimeoutMs?: number;
    };

/** Validates and double-quotes an identifier, for the few statements built outside a backend. */

import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { Mutex } from '../../util/mutex.js';

/** How a file's connections reach its instance, and how the instance is opened again. */
export interface DuckDbInstanceSource {
  /** A new connection to `instance`, set up as every connection of the file is (its default catalog). */
  connect(instance: DuckDBInstance): Promise<DuckDBConnection>;
  /** Closes `current` and opens the file again, with `settings` over those it was first opened with; null for a file that cannot be (an in-memory one: it would be lost). */
  reopen:
    | ((current: DuckDBInstance, settings: Readonly<Record<string, string>> | undefined) => Promise<DuckDBInstance>)
    | null;
}

/** How a file's connections manage its instance. */
export interface DuckDbConnectionOptions {
  /** See `DEFAULT_ROWS_BETWEEN_REOPENS`. */
  rowsBetweenReopens?: number | undefined;
  /** Memory settings set once the process works on stored rows (`DuckDbMemoryModes.widened`); null: none. */
  widened?: Readonly<Record<string, string>> | null;
  /** The instance was opened with the widened settings already (a write-ahead log to replay). */
  wide?: boolean;
}

/**
 * Rows appended to a file's tables after which its instance is closed and opened again, the next
 * time no connection is in use. DuckDB keeps native memory for what was written through an open
 * instance that neither a checkpoint nor a DETACH gives back (~50 MB over 8 million rows appended
 * in 1,000-row transactions, DuckDB alone); closing the instance does: docs/operations.md#memory-and-allocator-variables.
 */
export const DEFAULT_ROWS_BETWEEN_REOPENS = 250_000;

/**
 * The connections of one open DuckDB file, shared by every destination of the process that uses
 * it, and the file's reopening: once `rowsBetweenReopens` rows were appended, the first moment
 * no connection is in use closes the instance (DuckDB checkpoints it) and opens it again. A
 * connection asked for meanwhile waits for the new instance. Nothing is open across it: a unit
 * holds its connection from its first statement to its commit, so every unit is whole on one side.
 */
export class DuckDbConnections {
  private readonly idle: DuckDBConnection[] = [];
  private inUse = 0;
  private appendedSinceOpen = 0;
  private reopening: Promise<void> | null = null;
  /** Why the file could not be opened again: every later connection fails with it. */
  private lost: unknown = null;
  private closed = false;
  private reopens = 0;
  /** Commits, checkpoints and scans of large tables, one at a time (see `apart`). */
  private readonly heavy = new Mutex();
  private readonly rowsBetweenReopens: number;
  private readonly widenedSettings: Readonly<Record<string, string>> | null;
  /** The widening under way or done (see `widen`). */
  private widening: Promise<void> | null = null;
  private wide = false;

  constructor(
    private instance: DuckDBInstance,
    private readonly source: DuckDbInstanceSource,
    options: DuckDbConnectionOptions = {},
  ) {
    this.rowsBetweenReopens = options.rowsBetweenReopens ?? DEFAULT_ROWS_BETWEEN_REOPENS;
    this.widenedSettings = options.widened ?? null;
    this.wide = options.wide === true && this.widenedSettings !== null;
    if (this.wide) this.widening = Promise.resolve();
  }

  /** Times the instance was opened again (for tests and benches). */
  get reopened(): number {
    return this.reopens;
  }

  /** A connection of the open instance, waiting for a reopening under way. */
  async acquire(): Promise<DuckDBConnection> {
    while (this.reopening) await this.reopening;
    if (this.lost) throw this.lost;
    if (this.closed) throw new Error('This DuckDB file is closed');
    this.inUse++;
    try {
      return this.idle.pop() ?? (await this.source.connect(this.instance));
    } catch (error) {
      this.inUse--;
      throw error;
    }
  }

  /** Takes a connection back (closes it when `broken`); the last one in use may start a reopening. */
  release(connection: DuckDBConnection, broken: boolean): void {
    this.inUse--;
    if (broken || this.closed) connection.closeSync();
    else this.idle.push(connection);
    if (this.inUse === 0 && this.dueForReopen()) this.reopening = this.reopen();
  }

  /**
   * Runs `task` when no other task given here runs: COMMIT and CHECKPOINT statements, and reads
   * that scan a table growing with the warehouse (a ledger lookup). A commit checkpoints the file
   * in DuckDB's `memory_limit`; a lookup beside it on another connection took that memory (its
   * hash table and the ledger's blocks), the checkpoint could not pin a block, and DuckDB
   * invalidated the database (bench/README.md, "Ledger lookups apart from commits").
   */
  apart<T>(task: () => Promise<T>): Promise<T> {
    return this.heavy.run(task);
  }

  /**
   * Sets the widened memory settings (see `DuckDbMemoryModes`) through `connection`, once: they
   * hold for every connection, and for the instance a reopening opens, until the file is closed.
   */
  widen(connection: DuckDBConnection): Promise<void> {
    const settings = this.widenedSettings;
    if (!settings) return Promise.resolve();
    this.widening ??= (async () => {
      for (const [name, value] of Object.entries(settings))
        await connection.run(`SET GLOBAL ${name} = '${value.replace(/'/g, "''")}'`);
      this.wide = true;
    })().catch((error: unknown) => {
      this.widening = null;
      throw error;
    });
    return this.widening;
  }

  /** Whether the widened memory settings are in force (for tests and benches). */
  get widened(): boolean {
    return this.wide;
  }

  /** Counts rows appended through a connection of this file. */
  appended(rows: number): void {
    this.appendedSinceOpen += rows;
  }

  /** Closes every connection and the instance (DuckDB checkpoints and releases the file). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.closeIdle();
    // A reopening under way closes the instance it opens itself.
    if (!this.lost && !this.reopening) this.instance.closeSync();
  }

  private dueForReopen(): boolean {
    return (
      !this.closed && !this.lost && this.source.reopen !== null && this.appendedSinceOpen >= this.rowsBetweenReopens
    );
  }

  private async reopen(): Promise<void> {
    try {
      this.closeIdle();
      // A widening under way sets the instance being closed: the new one takes its settings now.
      const wide = this.widening !== null;
      const instance = await this.source.reopen!(this.instance, wide ? this.widenedSettings! : undefined);
      if (wide) this.wide = true;
      // Closed while it was being opened again: nothing will use it.
      if (this.closed) instance.closeSync();
      this.instance = instance;
      this.appendedSinceOpen = 0;
      this.reopens++;
    } catch (error) {
      this.lost = error;
    } finally {
      this.reopening = null;
    }
  }

  private closeIdle(): void {
    for (const connection of this.idle) connection.closeSync();
    this.idle.length = 0;
  }
}

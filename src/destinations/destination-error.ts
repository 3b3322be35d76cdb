/** Stable codes of destination errors. */
export type DestinationErrorCode =
  | 'SEEDLINE_DESTINATION_LOCKED'
  | 'SEEDLINE_LOCK_WAIT_ABORTED'
  | 'SEEDLINE_DESTINATION_LOCK_LOST'
  | 'SEEDLINE_INVALID_IDENTIFIER'
  | 'SEEDLINE_INVALID_TABLE_DEFINITION'
  | 'SEEDLINE_UNKNOWN_TABLE'
  | 'SEEDLINE_DESTINATION_WRITE_FAILED'
  | 'SEEDLINE_DESTINATION_SETTLE_FAILED'
  | 'SEEDLINE_DESTINATION_QUERY_FAILED'
  | 'SEEDLINE_QUERY_NOT_READ_ONLY'
  | 'SEEDLINE_QUERY_OUTSIDE_WAREHOUSE'
  | 'SEEDLINE_DESTINATION_UNAVAILABLE'
  | 'SEEDLINE_DESTINATION_SETTING_INVALID'
  | 'SEEDLINE_UNIT_CLOSED';

/** Base class of every error a destination throws on purpose; `code` is stable, the message says what to do. */
export class DestinationError extends Error {
  /** Stable machine-readable code. */
  readonly code: DestinationErrorCode;

  constructor(code: DestinationErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Another writer holds the destination's single-writer lock. */
export class DestinationLockedError extends DestinationError {
  /** Who holds the lock, as that writer described itself (or what the engine reported). */
  readonly holder: string;
  /** What is locked, e.g. `DuckDB file /data/warehouse.duckdb`. */
  readonly target: string;

  /**
   * @param options.retry one more way out, offered by the caller that knows it (e.g. `run again
   * with --wait` from a command that has that flag). Default: none.
   */
  constructor(target: string, holder: string, options?: { cause?: unknown; retry?: string }) {
    const retry = options?.retry ? `, or ${options.retry}` : '';
    super(
      'SEEDLINE_DESTINATION_LOCKED',
      `${target} is locked by another writer: ${holder}. Wait for it to finish or stop it${retry}.`,
      options && 'cause' in options ? { cause: options.cause } : undefined,
    );
    this.holder = holder;
    this.target = target;
  }
}

/** A wait for the writer lock was ended by its abort signal before the lock was free. */
export class LockWaitAbortedError extends DestinationError {
  constructor(target: string) {
    super(
      'SEEDLINE_LOCK_WAIT_ABORTED',
      `Stopped waiting for the writer lock of ${target}: the wait was cancelled (stop requested). Nothing was written.`,
    );
  }
}

/** The single-writer lock this destination took is gone (its connection dropped): it writes nothing more. */
export class DestinationLockLostError extends DestinationError {
  /** What was locked, e.g. `Postgres schema seedline`. */
  readonly target: string;
  /** Why the lock was lost, e.g. the error that ended its connection. */
  readonly reason: string;

  /** @param options.unit whether a load unit was refused (rolled back) because of the loss. Default: false. */
  constructor(target: string, reason: string, options?: { unit?: boolean }) {
    const outcome = options?.unit
      ? 'this load unit was rolled back and nothing of it was committed'
      : 'this destination writes nothing more';
    super(
      'SEEDLINE_DESTINATION_LOCK_LOST',
      `The writer lock on ${target} was lost (its connection dropped: ${reason}), so another writer may hold it now: ${outcome}. Run again; if the lock keeps dropping, check the server's idle_session_timeout and the connection to the database.`,
    );
    this.target = target;
    this.reason = reason;
  }
}

/** A table, column or schema name does not match `^[a-z_][a-z0-9_]{0,62}$`. */
export class InvalidIdentifierError extends DestinationError {
  /** The rejected name. */
  readonly identifier: string;

  constructor(identifier: string, what: string) {
    super(
      'SEEDLINE_INVALID_IDENTIFIER',
      `Invalid ${what} name ${JSON.stringify(identifier.slice(0, 100))}: names must match ^[a-z_][a-z0-9_]{0,62}$ (lowercase letters, digits, underscores; at most 63 characters). Rename it in the stream or config.`,
    );
    this.identifier = identifier;
  }
}

/** A table definition cannot be turned into tables (e.g. merge without a primary key). */
export class InvalidTableDefinitionError extends DestinationError {
  constructor(table: string, problem: string) {
    super('SEEDLINE_INVALID_TABLE_DEFINITION', `Table ${table}: ${problem}. Fix the stream definition.`);
  }
}

/** `write` was called for a table that `ensureTable` has not prepared in this process. */
export class UnknownTableError extends DestinationError {
  constructor(table: string) {
    super(
      'SEEDLINE_UNKNOWN_TABLE',
      `Table ${table} is not known to this destination: call ensureTable() with its definition before writing to it.`,
    );
  }
}

/** A statement of a load unit failed; nothing of the unit is committed. */
export class DestinationWriteError extends DestinationError {
  constructor(what: string, cause: unknown) {
    super(
      'SEEDLINE_DESTINATION_WRITE_FAILED',
      `${what} failed: ${describeCause(cause)}. Nothing of this load unit was committed; roll it back and run again.`,
      { cause },
    );
  }
}

/** Deleting the rows that merged keys replaced (`Destination.settle`) failed: nothing loaded is lost. */
export class DestinationSettleError extends DestinationError {
  /** @param table The table being settled; null when the pending tables could not be listed. */
  constructor(table: string | null, cause: unknown) {
    super(
      'SEEDLINE_DESTINATION_SETTLE_FAILED',
      `Deleting the rows ${table === null ? '' : `of ${table} `}that merged keys replaced failed: ${describeCause(cause)}. ` +
        `The rows loaded are kept and the keys stay listed in _seedline_pending__${table ?? '<table>'}: ` +
        'the next command that opens the destination finishes it (raise destination.settings.memory_limit if DuckDB ran out of memory).',
      { cause },
    );
  }
}

/** A `query` failed. */
export class DestinationQueryError extends DestinationError {
  constructor(cause: unknown) {
    super(
      'SEEDLINE_DESTINATION_QUERY_FAILED',
      `Query failed: ${describeCause(cause)}. Check the SQL and its parameters.`,
      { cause },
    );
  }
}

/** SQL a user wrote (`seedline query`, `seeds.*.sql`) that is not one read-only statement: refused, nothing run. */
export class NotReadOnlyError extends DestinationError {
  constructor(what: string) {
    super(
      'SEEDLINE_QUERY_NOT_READ_ONLY',
      `Only one read-only statement (a select) runs here, and this is ${what}: nothing was run. Write one select; change the warehouse with its own tools.`,
    );
  }
}

/** A user's select that would read or write outside the warehouse (a file, a program, another database). */
export class OutsideWarehouseError extends DestinationError {
  constructor(what: string) {
    super(
      'SEEDLINE_QUERY_OUTSIDE_WAREHOUSE',
      `A select here reads the warehouse's tables only, and this one reaches outside it (${what}): nothing was run. Read files with the database's own tools, not through seedline.`,
    );
  }
}

/** The warehouse could not be opened or reached. */
export class DestinationUnavailableError extends DestinationError {
  constructor(target: string, cause: unknown) {
    super(
      'SEEDLINE_DESTINATION_UNAVAILABLE',
      `Cannot open ${target}: ${describeCause(cause)}. Check the destination settings and that the database is running.`,
      { cause },
    );
  }
}

/** The warehouse refused one of the configured settings (`destination.settings.<name>`) when opening. */
export class DestinationSettingError extends DestinationError {
  /** Name of the refused setting, e.g. `memory_limit`. */
  readonly setting: string;

  /** @param problem what the warehouse said about the value, without the value (it may be a credential). */
  constructor(target: string, setting: string, problem: string, options?: { cause?: unknown }) {
    super(
      'SEEDLINE_DESTINATION_SETTING_INVALID',
      `Cannot open ${target}: the value of destination.settings.${setting} was refused: ${problem}. Fix or remove destination.settings.${setting} in the config.`,
      options,
    );
    this.setting = setting;
  }
}

/** The load unit was already committed, rolled back, or failed. */
export class UnitClosedError extends DestinationError {
  constructor(state: string) {
    super('SEEDLINE_UNIT_CLOSED', `This load unit is ${state}: begin a new unit (a failed unit must be rolled back).`);
  }
}

/**
 * The message of an unknown thrown value, without a stack. DuckDB's own advice on running out of
 * memory or on a failed checkpoint is SQL a seedline user never types (`SET memory_limit`,
 * detach and reattach): it is replaced by what to do here.
 */
export function describeCause(cause: unknown): string {
  const message = cause instanceof Error ? cause.message : String(cause);
  return DUCKDB_OUT_OF_MEMORY.test(message) ? duckDbMemoryAdvice(message) : message;
}

// DuckDB's buffer manager words it "failed to pin block", "could not allocate block" or "failed to allocate data".
const DUCKDB_OUT_OF_MEMORY = /Out of Memory Error|failed to (pin|allocate) (block|data)|could not allocate block/;
const DUCKDB_ADVICE = /\s*Possible solutions:[\s\S]*$/;
const DUCKDB_REATTACH = / Detach and reattach it before using it again\./;

function duckDbMemoryAdvice(message: string): string {
  const what = message
    .replace(DUCKDB_ADVICE, '')
    .replace(DUCKDB_REATTACH, '')
    .replace(/\s*\n\s*/g, ' ')
    .replace(/\.$/, '');
  const closed = /invalidated|FATAL Error/.test(message)
    ? ' DuckDB closed the database: the units committed before are kept, and opening the file again replays them from its write-ahead log.'
    : '';
  return `${what}.${closed} DuckDB ran out of its memory_limit: raise destination.settings.memory_limit in the config (default 64MB while a run loads new keys, 128MB once it works on stored rows; see docs/operations.md#memory-and-allocator-variables)`;
}

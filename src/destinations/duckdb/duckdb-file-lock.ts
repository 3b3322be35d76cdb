import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { DestinationError, DestinationLockedError, DestinationUnavailableError } from '../destination-error.js';
import { LedgerKeyFilters } from '../sql/ledger-key-filters.js';
import { sleep } from '../../util/sleep.js';
import { DuckDbConnections } from './duckdb-connections.js';
import { duckDbSettingsError } from './duckdb-settings-error.js';
import type { DuckDbMemoryModes } from './duckdb-memory-modes.js';

/**
 * The catalog a warehouse file is attached as. DuckDB names a file's catalog after the file
 * (`own.duckdb` → `own`): with `destination.schema: own`, `own.profiles` would be ambiguous. Under
 * a catalog name of seedline's own, a schema may be named like its file.
 */
export const WAREHOUSE_CATALOG = 'seedline_warehouse';

/** One open DuckDB file, shared by every destination of this process that points at it. */
export interface SharedDuckDbFile {
  /** Absolute path (or `:memory:`). */
  readonly path: string;
  /** Its connections, whose default catalog is the warehouse; they reopen the file now and then. */
  readonly connections: DuckDbConnections;
  /** Destinations using it. */
  refs: number;
  /** The destination holding the single-writer lock in this process, and how it described itself. */
  writer: { owner: object; holder: string } | null;
  /** Which seed keys have a ledger row, for every destination of the file: all of them write through it while it is open. */
  readonly ledgerKeys: LedgerKeyFilters;
}

/** Contents of the `<path>.lock` sidecar, written by the writer after it opened the file. */
interface Sidecar {
  holder: string;
  pid: number;
  host: string;
  since: string;
  /** When the holder's process started (Linux's clock ticks since boot): a later process given the same pid is not it. */
  started?: string;
}

// DuckDB locks the file per process, and a second instance on the same file inside one process
// would not be refused (POSIX locks are per process): the process shares one instance per file.
const open = new Map<string, Promise<SharedDuckDbFile>>();

/**
 * The DuckDB file lock, plus what DuckDB cannot say: who holds it. DuckDB refuses a second
 * process; inside one process, the writer slot of the shared instance refuses a second writer.
 * The holder's description is kept in a `<path>.lock` sidecar for writers of other processes.
 */
export const duckDbFileLock = {
  /**
   * Opens (or shares) the file with `memory`'s opening settings (DuckDB's own defaults when
   * none); throws `DestinationLockedError` when another process holds it,
   * `DestinationSettingError` naming a refused setting.
   */
  async open(path: string, memory?: DuckDbMemoryModes, rowsBetweenReopens?: number): Promise<SharedDuckDbFile> {
    const key = path === ':memory:' ? `:memory:${Math.random()}` : resolve(path);
    let pending = open.get(key);
    if (!pending) {
      const file = path === ':memory:' ? undefined : key;
      // A write-ahead log left by a process that ended without closing the file is replayed on opening, in one go: it
      // may hold up to a widened checkpoint threshold of rows, so it gets the widened memory. An in-memory warehouse
      // keeps all its rows in the pool: it gets the widened memory from the start.
      const wide = memory?.widened != null && (file === undefined || walLeft(file));
      const settings = wide ? { ...memory.opening, ...memory.widened } : memory?.opening;
      pending = openInstance(file, settings).then(
        (instance) => ({
          path: key,
          connections: new DuckDbConnections(
            instance,
            file === undefined
              ? { connect: (instance) => instance.connect(), reopen: null }
              : {
                  connect: connectToWarehouse,
                  reopen: (current, over) => reopenInstance(current, file, { ...settings, ...over }),
                },
            { rowsBetweenReopens, widened: memory?.widened ?? null, wide },
          ),
          refs: 0,
          writer: null,
          ledgerKeys: new LedgerKeyFilters(),
        }),
        async (error: unknown) => {
          open.delete(key);
          throw (await duckDbSettingsError(`DuckDB file ${key}`, settings, error)) ?? asLockError(key, error);
        },
      );
      open.set(key, pending);
    }
    const file = await pending;
    file.refs++;
    return file;
  },

  /** Takes the writer slot for `owner`; throws `DestinationLockedError` naming the holder when taken. */
  claim(file: SharedDuckDbFile, owner: object, holder: string): void {
    if (file.writer && file.writer.owner !== owner)
      throw new DestinationLockedError(`DuckDB file ${file.path}`, file.writer.holder);
    file.writer = { owner, holder };
    if (file.path.startsWith(':memory:')) return;
    const started = processStart(process.pid);
    const sidecar: Sidecar = {
      holder,
      pid: process.pid,
      host: hostname(),
      since: new Date().toISOString(),
      ...(started ? { started } : {}),
    };
    try {
      writeFileSync(`${file.path}.lock`, `${JSON.stringify(sidecar)}\n`);
    } catch {
      // The sidecar only improves the message another writer sees; the file lock is DuckDB's.
    }
  },

  /** Gives the writer slot back (when `owner` holds it). */
  unclaim(file: SharedDuckDbFile, owner: object): void {
    if (file.writer?.owner !== owner) return;
    file.writer = null;
    if (!file.path.startsWith(':memory:')) rmSync(`${file.path}.lock`, { force: true });
  },

  /** Drops one reference; the last one closes the instance (and DuckDB releases the file). */
  release(file: SharedDuckDbFile): void {
    file.refs--;
    if (file.refs > 0) return;
    open.delete(file.path);
    file.connections.close();
  },
};

/**
 * An instance with the file attached as {@link WAREHOUSE_CATALOG} (an in-memory one for `file`
 * undefined). Its spill folder stays beside the file, where DuckDB puts it for a file it opens itself.
 */
async function openInstance(
  file: string | undefined,
  settings: Readonly<Record<string, string>> | undefined,
): Promise<DuckDBInstance> {
  if (file === undefined) return DuckDBInstance.create(':memory:', settings && { ...settings });
  const instance = await DuckDBInstance.create(':memory:', { temp_directory: `${file}.tmp`, ...settings });
  const connection = await instance.connect();
  try {
    await connection.run(`ATTACH '${file.replace(/'/g, "''")}' AS ${WAREHOUSE_CATALOG}`);
    const holder = heldElsewhere(file);
    if (holder) throw new DestinationLockedError(`DuckDB file ${file}`, describeHolder(holder));
    return instance;
  } catch (error) {
    instance.closeSync();
    throw error;
  } finally {
    connection.closeSync();
  }
}

/**
 * `current` closed, and the file opened again by the process that holds it. Closing released
 * DuckDB's lock for a moment: a seedline process that opened the file meanwhile sees the sidecar
 * and lets go at once (see `heldElsewhere`), so a lock error is retried for a while before it is
 * final. A file that changed in between was written by someone else: what this process knows of
 * it (the ledger's keys) may be wrong, so the reopen fails rather than trust it.
 */
async function reopenInstance(
  current: DuckDBInstance,
  file: string,
  settings: Readonly<Record<string, string>> | undefined,
): Promise<DuckDBInstance> {
  current.closeSync();
  const closed = fileState(file);
  for (let attempt = 1; ; attempt++) {
    try {
      const instance = await openInstance(file, settings);
      if (fileState(file) === closed) return instance;
      instance.closeSync();
      throw new DestinationUnavailableError(
        `DuckDB file ${file}`,
        new Error('another process wrote the file while seedline closed and opened it again; run again'),
      );
    } catch (error) {
      const reason = asLockError(file, error);
      if (!(reason instanceof DestinationLockedError) || attempt >= REOPEN_ATTEMPTS) throw reason;
      await sleep(REOPEN_RETRY_MS);
    }
  }
}

/** Whether the file has a write-ahead log not yet checkpointed into it. */
function walLeft(file: string): boolean {
  return (statSync(`${file}.wal`, { throwIfNoEntry: false })?.size ?? 0) > 0;
}

/** The file's size and modification time, with its WAL's: what a write by another process changes. */
function fileState(file: string): string {
  return [file, `${file}.wal`]
    .map((path) => {
      const stat = statSync(path, { throwIfNoEntry: false });
      return stat ? `${stat.size}@${stat.mtimeMs}` : '-';
    })
    .join(' ');
}

const REOPEN_ATTEMPTS = 100;
const REOPEN_RETRY_MS = 50;

async function connectToWarehouse(instance: DuckDBInstance): Promise<DuckDBConnection> {
  const connection = await instance.connect();
  await connection.run(`USE ${WAREHOUSE_CATALOG}`);
  return connection;
}

function asLockError(path: string, error: unknown): Error {
  if (error instanceof DestinationError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (!/could not set lock|conflicting lock/i.test(message))
    return new DestinationUnavailableError(`DuckDB file ${path}`, error);
  return new DestinationLockedError(`DuckDB file ${path}`, lockHolder(path, message), { cause: error });
}

/**
 * Who holds the file. The sidecar outlives a writer that was killed, so it names the holder only
 * when it is the process DuckDB names; without such a name, only while its writer may be alive.
 */
function lockHolder(path: string, message: string): string {
  const named = processNamedByDuckDb(message);
  const sidecar = readSidecar(path);
  if (sidecar && (named ? isSidecarOf(sidecar, named.pid) : !isDeadHere(sidecar))) return describeHolder(sidecar);
  if (!named) return 'another process';
  return named.program ? `process ${named.pid} (${named.program})` : `process ${named.pid}`;
}

/** The process in DuckDB's "Conflicting lock is held in <program> (PID n)", if it names one. */
function processNamedByDuckDb(message: string): { pid: number; program: string | null } | null {
  const held = /held in (.+?) \(PID (\d+)\)/i.exec(message);
  if (held) return { pid: Number(held[2]), program: held[1]! };
  // The file's path comes first in the message: the last PID is DuckDB's.
  const pid = [...message.matchAll(/PID (\d+)/gi)].at(-1)?.[1];
  return pid ? { pid: Number(pid), program: null } : null;
}

function readSidecar(path: string): Sidecar | null {
  try {
    const sidecar = JSON.parse(readFileSync(`${path}.lock`, 'utf8')) as Partial<Sidecar>;
    const valid =
      typeof sidecar.holder === 'string' &&
      Number.isInteger(sidecar.pid) &&
      sidecar.pid! > 0 &&
      typeof sidecar.host === 'string';
    return valid
      ? {
          holder: sidecar.holder!,
          pid: sidecar.pid!,
          host: sidecar.host!,
          since: String(sidecar.since),
          ...(typeof sidecar.started === 'string' ? { started: sidecar.started } : {}),
        }
      : null;
  } catch {
    return null;
  }
}

// DuckDB's PID is a process of this host (the lock is a local POSIX lock).
function isSidecarOf(sidecar: Sidecar, pid: number): boolean {
  return sidecar.pid === pid && sidecar.host === hostname();
}

function describeHolder(sidecar: Sidecar): string {
  return `${sidecar.holder} (pid ${sidecar.pid} on ${sidecar.host}, since ${sidecar.since})`;
}

/**
 * The sidecar's holder when it is another live process of this host: DuckDB's lock was free only
 * because the holder is opening the file again (`reopenInstance`). Only a sidecar that says when
 * its process started counts, so a stale one whose pid was given to another process never does.
 */
function heldElsewhere(path: string): Sidecar | null {
  const sidecar = readSidecar(path);
  if (!sidecar?.started || sidecar.host !== hostname() || sidecar.pid === process.pid) return null;
  return processStart(sidecar.pid) === sidecar.started ? sidecar : null;
}

/** When process `pid` started, in clock ticks since boot (`/proc/<pid>/stat`, field 22); null where there is no /proc. */
function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces), from field 3 on.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

// Signal 0 checks existence only. The stale sidecar is left in place rather than removed: a writer
// that claims the file between our read and a removal would lose its fresh one, and it rewrites it anyway.
function isDeadHere(sidecar: Sidecar): boolean {
  if (sidecar.host !== hostname()) return false;
  try {
    process.kill(sidecar.pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

import { randomBytes } from 'node:crypto';
import { appendFile, link, readFile, rm, stat, writeFile } from 'node:fs/promises';
import type { SignalBulkBody } from '../../schemas/index.js';

/** A bulk-create chunk as sent: enough to send it again under the same key. */
export interface JournaledChunk {
  /** The chunk's Idempotency-Key. */
  idempotencyKey: string;
  /** The exact body sent. */
  body: SignalBulkBody;
}

/** A chunk sent but never marked done. */
export interface PendingChunk extends JournaledChunk {
  /** When it was journaled; null for a line written before lines carried a time. */
  sentAt: Date | null;
}

/** Another apply holds the journal's lock file. */
export class JournalLockedError extends Error {
  readonly code = 'SEEDLINE_SIGNALS_JOURNAL_LOCKED';
}

/** How long a lock file without a pid counts as held: one written by an older seedline before its pid landed. */
const PIDLESS_LOCK_GRACE_MS = 10_000;

type Line = { sending: string; body: SignalBulkBody; at?: string } | { done: string };

/**
 * A write-ahead log of bulk-create chunks (JSON lines beside the secrets file, mode 0600; it holds
 * no secret). A chunk is written before it is sent and marked done once its answer's secrets are
 * kept, so a chunk whose answer a crash lost can be sent again under its key: the service answers
 * with the original result, one-time secrets included, and creates nothing.
 */
export class ChunkJournal {
  constructor(private readonly path: string) {}

  /** Records a chunk about to be sent. */
  async sending(chunk: JournaledChunk, now: Date = new Date()): Promise<void> {
    await this.append({ sending: chunk.idempotencyKey, body: chunk.body, at: now.toISOString() });
  }

  /** Records that a chunk's answer was handled. */
  async done(idempotencyKey: string): Promise<void> {
    await this.append({ done: idempotencyKey });
  }

  /** Chunks sent but never marked done, oldest first. A missing journal has none. */
  async pending(): Promise<PendingChunk[]> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const open = new Map<string, PendingChunk>();
    // A crash can cut the last line short: it is the chunk that was never sent.
    for (const raw of text.split('\n')) {
      let line: Line;
      try {
        line = JSON.parse(raw) as Line;
      } catch {
        continue;
      }
      if ('done' in line) open.delete(line.done);
      else
        open.set(line.sending, {
          idempotencyKey: line.sending,
          body: line.body,
          sentAt: line.at === undefined ? null : new Date(line.at),
        });
    }
    return [...open.values()];
  }

  /**
   * Takes the journal's lock file (`<journal>.lock`, holding our pid), so two applies on one
   * secrets file never clear each other's pending lines. A lock left by a process that no longer
   * runs (kill -9) is taken over, as is one without a pid older than a few seconds. Returns the release.
   */
  async lock(): Promise<() => Promise<void>> {
    const path = `${this.path}.lock`;
    for (let attempt = 0; ; attempt++) {
      try {
        await placeLock(path);
        return () => rm(path, { force: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        const holder = await lockHolder(path);
        // A second EEXIST: another apply took the lock at the same time.
        if (holder.state === 'held' || attempt > 0 || (holder.state === 'stale' && !(await removeStaleLock(path)))) {
          const who =
            holder.state !== 'held' ? '' : holder.pid === undefined ? ' (pid not yet written)' : ` (pid ${holder.pid})`;
          throw new JournalLockedError(
            `another signals apply${who} is using ${this.path}: wait for it to finish (or delete ${path} if it is not running)`,
          );
        }
      }
    }
  }

  /** Removes the journal once nothing in it is pending. */
  async clearIfSettled(): Promise<void> {
    if ((await this.pending()).length === 0) await rm(this.path, { force: true });
  }

  private async append(line: Line): Promise<void> {
    // Led by a newline too: a line a crash cut short must not swallow the next one.
    await appendFile(this.path, `\n${JSON.stringify(line)}\n`, { mode: 0o600 });
  }
}

/** Errors of `link` on a filesystem without hard links. */
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV']);

/**
 * Creates the lock file with our pid already in it: written to a temporary file, then hard-linked
 * into place, which fails EEXIST when the lock exists. A lock created empty and written after
 * would look pid-less, so stale, to a second apply reading it in between.
 */
async function placeLock(path: string): Promise<void> {
  const temporary = `${path}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(temporary, String(process.pid), { mode: 0o600, flag: 'wx' });
  try {
    await link(temporary, path);
  } catch (error) {
    if (!NO_HARD_LINKS.has((error as NodeJS.ErrnoException).code ?? '')) throw error;
    // Some mounts (SMB, FUSE) have no hard links: create the lock, then write the pid; a pid-less lock is young, so held.
    await writeFile(path, String(process.pid), { mode: 0o600, flag: 'wx' });
  } finally {
    await rm(temporary, { force: true });
  }
}

/**
 * Removes a stale lock while holding `<lock>.takeover` (placed like the lock itself), after
 * checking again that it is still stale: two applies that both found it stale would otherwise
 * each remove it, the second removing the lock the first had just placed. A takeover guard left
 * by a killed apply is cleared and taken. False when another apply is taking over.
 */
async function removeStaleLock(path: string): Promise<boolean> {
  const guard = `${path}.takeover`;
  if (!(await tryPlaceLock(guard))) {
    if ((await lockHolder(guard)).state !== 'stale') return false;
    await rm(guard, { force: true });
    if (!(await tryPlaceLock(guard))) return false;
  }
  try {
    if ((await lockHolder(path)).state === 'stale') await rm(path, { force: true });
    return true;
  } finally {
    await rm(guard, { force: true });
  }
}

/** {@link placeLock}, false instead of EEXIST. */
async function tryPlaceLock(path: string): Promise<boolean> {
  try {
    await placeLock(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/** An existing lock file: held (a running pid, or no pid yet and young), stale, or released meanwhile. */
type LockState = { state: 'held'; pid?: number } | { state: 'stale' } | { state: 'gone' };

/** The state of an existing lock file. */
async function lockHolder(path: string): Promise<LockState> {
  let text: string;
  let modifiedMs: number;
  try {
    [text, modifiedMs] = await Promise.all([readFile(path, 'utf8'), stat(path).then((info) => info.mtimeMs)]);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { state: 'gone' };
    throw error;
  }
  const pid = Number.parseInt(text, 10);
  if (Number.isInteger(pid) && pid > 0) return isRunning(pid) ? { state: 'held', pid } : { state: 'stale' };
  return Date.now() - modifiedMs < PIDLESS_LOCK_GRACE_MS ? { state: 'held' } : { state: 'stale' };
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

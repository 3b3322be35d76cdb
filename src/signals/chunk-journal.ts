import { appendFile, open, readFile, rm } from 'node:fs/promises';
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
      else open.set(line.sending, { idempotencyKey: line.sending, body: line.body, sentAt: line.at === undefined ? null : new Date(line.at) });
    }
    return [...open.values()];
  }

  /**
   * Takes the journal's lock file (`<journal>.lock`, holding our pid), so two applies on one
   * secrets file never clear each other's pending lines. A lock left by a process that no longer
   * runs (kill -9) is taken over. Returns the release.
   */
  async lock(): Promise<() => Promise<void>> {
    const path = `${this.path}.lock`;
    for (let attempt = 0; ; attempt++) {
      try {
        const file = await open(path, 'wx', 0o600);
        await file.writeFile(String(process.pid));
        await file.close();
        return () => rm(path, { force: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw error;
        const holder = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10);
        if (Number.isInteger(holder) && holder > 0 && isRunning(holder)) {
          throw new JournalLockedError(`another signals apply (pid ${holder}) is using ${this.path}: wait for it to finish (or delete ${path} if it is not running)`);
        }
        await rm(path, { force: true });
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

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

import { createHash, randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import { access, link, mkdir, open, readdir, readFile, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';

/** One accepted delivery, as kept in the spool until it is loaded. */
export interface SpooledDelivery {
  /** Dedupe key: `trigger:<trigger_id>`, `job:<job_id>`, or `<event>:<sha256 of the body>`. */
  key: string;
  /** Event name (`signal.triggered`, …), or `unreadable` for a signed body that is not an event. */
  event: string;
  /** When the receiver accepted it (ISO 8601). */
  receivedAt: string;
  /** The raw, verified body. */
  raw: string;
  /** Why the body could not be read, and the table it was meant for; absent for a readable event. */
  rejected?: { table: string; reason: string };
}

/** A spooled delivery and the file holding it. */
export interface SpoolEntry {
  /** File name inside the spool folder. */
  file: string;
  /** The delivery. */
  delivery: SpooledDelivery;
}

const SUFFIX = '.json';
const TEMPORARY_SUFFIX = '.tmp';
/** Age after which a temporary file can only be a crash's leftover (a write takes milliseconds). */
const STALE_TEMPORARY_MS = 60_000;

/** The spool folder cannot be created or written: deliveries could not be kept, so none is accepted. */
export class SpoolUnwritableError extends Error {
  readonly code = 'SEEDLINE_SPOOL_UNWRITABLE';
  constructor(dir: string, cause: unknown) {
    super(
      `webhooks.spool_dir ${dir} cannot be written (${(cause as NodeJS.ErrnoException).code ?? (cause as Error).message}): make it a writable folder or point webhooks.spool_dir elsewhere`,
      { cause },
    );
    this.name = 'SpoolUnwritableError';
  }
}

/**
 * A durable queue of accepted deliveries outside the database: one file per dedupe key, written
 * to a temporary name, fsynced, then hard-linked into place (and the folder fsynced), so a
 * delivery is on disk whole before it is answered 2xx, and a crash leaves either the whole file or
 * none. A duplicate of a queued delivery maps to the same file name, and the link refuses it.
 *
 * @example
 * ```ts
 * const spool = new DeliverySpool('.seedline/spool');
 * await spool.put({ key: 'trigger:trg_1', event: 'signal.triggered', receivedAt: new Date().toISOString(), raw });
 * for (const { file, delivery } of await spool.list()) …;
 * await spool.remove(files);
 * ```
 */
export class DeliverySpool {
  private ready: Promise<void> | undefined;

  /** @param dir The spool folder (created when missing). */
  constructor(readonly dir: string) {}

  /**
   * Creates the folder when missing and checks it can be written (throws `SpoolUnwritableError`
   * otherwise); deletes temporary files a crash left behind (older than a minute, so a write under
   * way in another process is never touched).
   */
  async check(): Promise<void> {
    try {
      await this.ensureDir();
      await access(this.dir, constants.W_OK);
    } catch (error) {
      this.ready = undefined;
      throw new SpoolUnwritableError(this.dir, error);
    }
    const now = Date.now();
    for (const name of (await readdir(this.dir)).filter((n) => n.startsWith('.') && n.endsWith(TEMPORARY_SUFFIX))) {
      const path = join(this.dir, name);
      const at = await stat(path).then((info) => info.mtimeMs, ignoreGone);
      if (at !== undefined && now - at > STALE_TEMPORARY_MS) await unlink(path).catch(ignoreGone);
    }
  }

  /** Queues a delivery durably; resolves false when one with the same key is already queued. */
  async put(delivery: SpooledDelivery): Promise<boolean> {
    await this.ensureDir();
    const file = fileNameOf(delivery.key);
    const target = join(this.dir, file);
    const temporary = join(this.dir, `.${file}.${randomUUID()}${TEMPORARY_SUFFIX}`);
    const handle = await open(temporary, 'wx', 0o600);
    try {
      await handle.writeFile(JSON.stringify(delivery));
      // The file's time is its acceptance time, so drains can take the oldest first without reading every file.
      const accepted = new Date(delivery.receivedAt);
      if (!Number.isNaN(accepted.getTime())) await handle.utimes(accepted, accepted);
      await handle.sync();
    } finally {
      await handle.close();
    }
    // link() fails if the target exists, so of two puts of one key exactly one wins; rename would replace.
    let linked = true;
    try {
      await link(temporary, target);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      linked = false;
    } finally {
      await unlink(temporary).catch(ignoreGone);
    }
    if (linked) await this.syncDir();
    return linked;
  }

  /** Every queued delivery, oldest accepted first. A file that cannot be read is set aside as `*.bad` and reported through `onBad`. */
  async list(onBad: (file: string, reason: string) => void = () => undefined): Promise<SpoolEntry[]> {
    return this.read(await this.pending(), onBad);
  }

  /** The queued files' names, oldest accepted first (by file time), without reading them: a drain reads them a chunk at a time. */
  async pending(): Promise<string[]> {
    return (await this.dated()).map((d) => d.file);
  }

  /** How many deliveries wait, and when the oldest was accepted (null when none): for the health probe. */
  async stats(): Promise<{ count: number; oldestAt: Date | null }> {
    const dated = await this.dated();
    return { count: dated.length, oldestAt: dated.length === 0 ? null : new Date(dated[0]!.at) };
  }

  /** These queued files' deliveries, oldest accepted first; a file gone meanwhile is skipped, one that cannot be read is set aside as `*.bad`. */
  async read(
    files: readonly string[],
    onBad: (file: string, reason: string) => void = () => undefined,
  ): Promise<SpoolEntry[]> {
    const entries: SpoolEntry[] = [];
    for (const file of files) {
      try {
        entries.push({ file, delivery: parseDelivery(await readFile(join(this.dir, file), 'utf8')) });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
        await rename(join(this.dir, file), join(this.dir, `${file}.bad`)).catch(() => undefined);
        onBad(file, (error as Error).message);
      }
    }
    return entries.sort(
      (a, b) => a.delivery.receivedAt.localeCompare(b.delivery.receivedAt) || a.file.localeCompare(b.file),
    );
  }

  /** Queued deliveries (a cheap count): 0 when the folder does not exist yet; any other failure to read it throws. */
  async size(): Promise<number> {
    return (await this.names()).length;
  }

  /** Deletes loaded deliveries' files (a file already gone is fine). */
  async remove(files: readonly string[]): Promise<void> {
    for (const file of files) await unlink(join(this.dir, file)).catch(ignoreGone);
    // Made durable, so a crash does not bring loaded files back (a reload would be a harmless merge, but slow).
    if (files.length > 0) await this.syncDir();
  }

  /** Queued files' names; none when the folder does not exist yet. */
  private async names(): Promise<string[]> {
    try {
      return (await readdir(this.dir)).filter(isQueued);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
  }

  /** Queued files with their time (acceptance), oldest first. */
  private async dated(): Promise<{ file: string; at: number }[]> {
    const dated: { file: string; at: number }[] = [];
    for (const file of await this.names()) {
      const at = await stat(join(this.dir, file)).then((info) => info.mtimeMs, ignoreGone);
      if (at !== undefined) dated.push({ file, at });
    }
    return dated.sort((a, b) => a.at - b.at || a.file.localeCompare(b.file));
  }

  private ensureDir(): Promise<void> {
    this.ready ??= mkdir(this.dir, { recursive: true, mode: 0o700 }).then(() => undefined);
    return this.ready;
  }

  /** A rename is durable only once its folder is synced. */
  private async syncDir(): Promise<void> {
    const handle = await open(this.dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }
}

/** The file name of a dedupe key: a hash, so any key is a safe name and duplicates collide. */
export function fileNameOf(key: string): string {
  return `${createHash('sha256').update(key).digest('hex').slice(0, 40)}${SUFFIX}`;
}

/** A queued delivery's file: `<hash>.json` (temporary files start with a dot, set-aside ones end in `.bad`). */
function isQueued(name: string): boolean {
  return name.endsWith(SUFFIX) && !name.startsWith('.');
}

function ignoreGone(error: NodeJS.ErrnoException): undefined {
  if (error.code === 'ENOENT') return undefined;
  throw error;
}

function parseDelivery(text: string): SpooledDelivery {
  const value = JSON.parse(text) as Partial<SpooledDelivery>;
  if (
    typeof value.key !== 'string' ||
    typeof value.event !== 'string' ||
    typeof value.receivedAt !== 'string' ||
    typeof value.raw !== 'string'
  ) {
    throw new Error('not a spooled delivery (key, event, receivedAt, raw expected)');
  }
  return value as SpooledDelivery;
}

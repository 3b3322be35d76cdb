import { mkdtemp, open, readdir, rm, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deserialize, serialize } from 'node:v8';

/** Bytes of the length before each chunk. */
const HEADER = 4;
/** Folders of spool files: `seedline-scan-<pid>-<random>` in the system's temporary folder (apart from the webhook receiver's spool). */
const PREFIX = 'seedline-scan-';

/**
 * Chunks of values written once to a temporary file and read back in order, one chunk in memory
 * at a time, as often as needed: what a long list read in several passes costs on disk instead of
 * in memory. Values go through V8's serializer, so dates, bigints and nested values come back as
 * they went in. `remove` deletes the file; the files of a process that died without removing them
 * (killed, or out of memory) are deleted by the next `fill` of any process on the machine.
 *
 * @example
 * ```ts
 * const spool = await SpoolFile.fill(rowsInChunks());
 * try {
 *   for await (const rows of spool.chunks()) handle(rows);
 * } finally {
 *   await spool.remove();
 * }
 * ```
 */
export class SpoolFile {
  private constructor(
    private readonly folder: string,
    private readonly path: string,
    /** Chunks written. */
    readonly count: number,
  ) {}

  /** Writes every chunk `source` yields (empty ones skipped) to a new temporary file. */
  static async fill(source: AsyncIterable<readonly unknown[]>): Promise<SpoolFile> {
    await removeOrphans();
    const folder = await mkdtemp(join(tmpdir(), `${PREFIX}${process.pid}-`)).catch((error: NodeJS.ErrnoException) => {
      throw new Error(
        `cannot write a temporary file in ${tmpdir()} (${error.code ?? error.message}): set TMPDIR to a writable folder`,
      );
    });
    const path = join(folder, 'chunks.v8');
    let count = 0;
    try {
      const file = await open(path, 'w');
      try {
        for await (const chunk of source) {
          if (chunk.length === 0) continue;
          const body = serialize(chunk);
          const header = Buffer.alloc(HEADER);
          header.writeUInt32LE(body.length);
          await file.writev([header, body]);
          count++;
        }
      } finally {
        await file.close();
      }
    } catch (error) {
      await rm(folder, { recursive: true, force: true });
      throw error;
    }
    return new SpoolFile(folder, path, count);
  }

  /** The chunks in the order they were written. */
  async *chunks(): AsyncGenerator<unknown[]> {
    const file = await open(this.path, 'r');
    try {
      let position = 0;
      for (let n = 0; n < this.count; n++) {
        const header = await readExactly(file, HEADER, position);
        const body = await readExactly(file, header.readUInt32LE(0), position + HEADER);
        position += HEADER + body.length;
        yield deserialize(body) as unknown[];
      }
    } finally {
      await file.close();
    }
  }

  /** Deletes the file. */
  async remove(): Promise<void> {
    await rm(this.folder, { recursive: true, force: true });
  }
}

/** Deletes the spool folders of processes no longer running. */
async function removeOrphans(): Promise<void> {
  const names = await readdir(tmpdir()).catch(() => [] as string[]);
  for (const name of names) {
    const pid = new RegExp(`^${PREFIX}(\\d+)-`).exec(name)?.[1];
    if (pid !== undefined && !isRunning(Number(pid)))
      await rm(join(tmpdir(), name), { recursive: true, force: true }).catch(() => undefined);
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

async function readExactly(file: FileHandle, length: number, position: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(length);
  let read = 0;
  while (read < length) {
    const { bytesRead } = await file.read(buffer, read, length - read, position + read);
    if (bytesRead === 0) throw new Error(`spool file ended early: ${read} of ${length} bytes at ${position}`);
    read += bytesRead;
  }
  return buffer;
}

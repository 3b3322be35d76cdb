import { createReadStream } from 'node:fs';
import { resolve } from 'node:path';
import { CsvRows } from '../util/csv-rows.js';
import type { SeedSource } from './config-schema.js';
import { closestName } from '../util/closest-name.js';
import { redactSecrets } from '../util/redact-secrets.js';

/** Runs read-only SQL on the warehouse (for `{ sql: … }` seed sources), yielding rows of values a chunk at a time (`Destination.readQueryChunks`). */
export type SeedQuery = (sql: string, size: number) => AsyncIterable<unknown[][]>;

/** A seed source that could not be read: names the config key and what to do. */
export class SeedSourceError extends Error {
  readonly code = 'SEEDLINE_SEEDS_UNREADABLE';
}

/** A seed file that is missing or lacks the named column: the config points at the wrong thing (exit 2). */
export class SeedFileConfigError extends Error {
  readonly code = 'SEEDLINE_SEEDS_FILE_INVALID';
}

/** A `{ sql: … }` seed source that is not one read-only statement, or reads outside the warehouse: refused before it ran (a config problem, exit 2). */
export class SeedSqlRefusedError extends Error {
  readonly code = 'SEEDLINE_QUERY_NOT_READ_ONLY';
}

/** Seeds per chunk unless a reader asks otherwise. */
export const SEED_CHUNK = 1000;

/**
 * A seed source that is read in chunks, as often as needed, without holding it whole: a CSV file
 * is read again from disk on each pass, so a list of millions costs one chunk of memory (a file
 * edited during a run may show a later pass seeds the first did not: the batch runner never
 * submits a seed twice in a run whatever the passes show). A `{ sql }` source runs its query
 * again on each pass and reads its answer through a cursor, a chunk at a time (a query without
 * `order by` may answer in another order on another pass: the budget's cut then takes as many
 * seeds, maybe others). Opening checks what can be checked before any call (the file, its
 * column, that the query runs and only reads).
 *
 * @example
 * ```ts
 * const list = await SeedList.open('seeds.profiles', { file: 'crm.csv', column: 'url' }, baseDir, query);
 * for await (const seeds of list.chunks()) handle(seeds); // trimmed, blanks dropped, repeats kept
 * ```
 */
export class SeedList {
  private constructor(private readonly read: (size: number) => AsyncGenerator<string[]>) {}

  /** Opens a seed source; throws `SeedSourceError` (or `SeedSqlRefusedError`) when it cannot be read. */
  static async open(key: string, source: SeedSource, baseDir: string, query: SeedQuery): Promise<SeedList> {
    if (Array.isArray(source)) return SeedList.of(source);
    if ('file' in source) {
      const path = resolve(baseDir, source.file);
      const index = await csvColumnIndex(key, path, source.column);
      return new SeedList((size) => csvChunks(key, path, index, size));
    }
    const sql = source.sql;
    // Its first chunk is read and dropped: a refused or failing query fails here, before any call.
    const probe = sqlChunks(key, sql, query, 1);
    await probe.next();
    await probe.return(undefined);
    return new SeedList((size) => sqlChunks(key, sql, query, size));
  }

  /** A list held in memory (inline seeds). */
  static of(values: readonly string[]): SeedList {
    return new SeedList(async function* (size) {
      for (let i = 0; i < values.length; i += size) yield clean(values.slice(i, i + size));
    });
  }

  /** The seeds in chunks of at most `size`, in the source's order: trimmed, blanks dropped, repeats kept. */
  async *chunks(size = SEED_CHUNK): AsyncGenerator<string[]> {
    for await (const chunk of this.read(size)) if (chunk.length > 0) yield chunk;
  }

  /** Every seed, repeats removed (first wins): for readers that need the whole list at once. */
  async toArray(): Promise<string[]> {
    const seen = new Set<string>();
    for await (const chunk of this.chunks()) for (const seed of chunk) seen.add(seed);
    return [...seen];
  }
}

function clean(values: readonly string[]): string[] {
  return values.map((v) => v.trim()).filter((v) => v.length > 0);
}

/** Rows of a CSV file, a piece at a time. */
async function* csvRows(key: string, path: string): AsyncGenerator<string[][]> {
  const rows = new CsvRows();
  try {
    for await (const piece of createReadStream(path, { encoding: 'utf8', highWaterMark: 256 * 1024 }))
      yield rows.push(piece as string);
  } catch {
    throw new SeedSourceError(
      `${key}.file: cannot read ${path}: check the path (relative paths resolve against the config file's folder)`,
    );
  }
  yield rows.end();
}

async function csvColumnIndex(key: string, path: string, column: string): Promise<number> {
  const header = await csvHeader(key, path);
  const names = header.map((h) => h.trim());
  const index = names.indexOf(column);
  if (index >= 0) return index;
  throw new SeedFileConfigError(
    `${key}.column: ${path} has no column "${column}": ${describeHeader(names, column)}. ` +
      `Point ${key}.file at a CSV whose first line names its columns, and ${key}.column at one of them (exact name, case included).`,
  );
}

/** The first line of a seed file; a file that cannot be read is a config error, found before any call. */
async function csvHeader(key: string, path: string): Promise<string[]> {
  try {
    for await (const rows of csvRows(key, path)) if (rows[0]) return rows[0];
    return [];
  } catch (error) {
    if (error instanceof SeedSourceError) throw new SeedFileConfigError(error.message);
    throw error;
  }
}

/** Names a column may have: a short word, no value of a row (a URL, an email, `KEY=value`, a token) looks like one. */
const COLUMN_NAME = /^[A-Za-z_][A-Za-z0-9_ -]{0,39}$/;

/**
 * What the first line holds: its names when every one looks like a column name (with the
 * closest to `column`), else only how many there are, so a file named by mistake (a .env, a
 * list without a header) never has its contents printed.
 */
function describeHeader(names: readonly string[], column: string): string {
  const count = `${names.length} column${names.length === 1 ? '' : 's'}`;
  if (names.length === 0 || !names.every((name) => COLUMN_NAME.test(name) && redactSecrets(name) === name))
    return `its first line has ${count} (names not shown: they do not look like column names, and the file may hold secrets)`;
  const close = closestName(column, names);
  return `its first line names ${count}: ${names.map((name) => `"${name}"`).join(', ')}${close ? ` (did you mean "${close}"?)` : ''}`;
}

async function* csvChunks(key: string, path: string, index: number, size: number): AsyncGenerator<string[]> {
  let header = true;
  let chunk: string[] = [];
  for await (const rows of csvRows(key, path)) {
    for (const row of rows) {
      if (header) header = false;
      else chunk.push(row[index] ?? '');
      if (chunk.length < size) continue;
      yield clean(chunk);
      chunk = [];
    }
  }
  if (chunk.length > 0) yield clean(chunk);
}

/** The first column of a query's rows, as text (nulls dropped), a chunk at a time. */
async function* sqlChunks(key: string, sql: string, query: SeedQuery, size: number): AsyncGenerator<string[]> {
  try {
    for await (const rows of query(sql, size))
      yield clean(
        rows
          .map((row) => row[0])
          .filter((v) => v !== null && v !== undefined)
          .map(String),
      );
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'SEEDLINE_QUERY_NOT_READ_ONLY' || code === 'SEEDLINE_QUERY_OUTSIDE_WAREHOUSE')
      throw new SeedSqlRefusedError(`${key}.sql: ${(error as Error).message}`);
    throw new SeedSourceError(`${key}.sql failed on the warehouse: ${(error as Error).message}`);
  }
}

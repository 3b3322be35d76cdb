import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseCsv } from '../util/csv.js';
import type { SeedSource } from './config-schema.js';

/** Runs read-only SQL on the warehouse (for `{ sql: … }` seed sources). */
export type SeedQuery = (sql: string) => Promise<Record<string, unknown>[]>;

/** A seed source that could not be read: names the config key and what to do. */
export class SeedSourceError extends Error {
  readonly code = 'SEEDLINE_SEEDS_UNREADABLE';
}

/** A `{ sql: … }` seed source that is not one read-only statement: refused before it ran (a config problem, exit 2). */
export class SeedSqlRefusedError extends Error {
  readonly code = 'SEEDLINE_QUERY_NOT_READ_ONLY';
}

/**
 * Resolves a seed source to its seeds, trimmed, blanks dropped, duplicates removed (first wins).
 * @param key the config key, for messages (`seeds.profiles`)
 */
export async function resolveSeeds(key: string, source: SeedSource, baseDir: string, query: SeedQuery): Promise<string[]> {
  const values = Array.isArray(source)
    ? source
    : 'file' in source
      ? await readCsvColumn(key, resolve(baseDir, source.file), source.column)
      : await readSqlColumn(key, source.sql, query);
  return [...new Set(values.map((v) => v.trim()).filter((v) => v.length > 0))];
}

async function readCsvColumn(key: string, path: string, column: string): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    throw new SeedSourceError(`${key}.file: cannot read ${path}: check the path (relative paths resolve against the config file's folder)`);
  }
  const [header, ...rows] = parseCsv(text);
  const index = header?.map((h) => h.trim()).indexOf(column) ?? -1;
  if (index < 0) {
    // The header's names are not shown: a file named by mistake (a .env) would print its secrets.
    const count = header?.length ?? 0;
    throw new SeedSourceError(
      `${key}.column: ${path} has no column "${column}": its first line has ${count} column${count === 1 ? '' : 's'} (names not shown, in case the file holds secrets). ` +
        `Point ${key}.file at a CSV whose first line names its columns, and ${key}.column at one of them (exact name, case included).`,
    );
  }
  return rows.map((row) => row[index] ?? '');
}

async function readSqlColumn(key: string, sql: string, query: SeedQuery): Promise<string[]> {
  let rows: Record<string, unknown>[];
  try {
    rows = await query(sql);
  } catch (error) {
    if ((error as { code?: unknown }).code === 'SEEDLINE_QUERY_NOT_READ_ONLY') throw new SeedSqlRefusedError(`${key}.sql: ${(error as Error).message}`);
    throw new SeedSourceError(`${key}.sql failed on the warehouse: ${(error as Error).message}`);
  }
  return rows.map((row) => Object.values(row)[0]).filter((v) => v !== null && v !== undefined).map(String);
}

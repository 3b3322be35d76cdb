import type { SeedSource } from './config-schema.js';
import { SeedList, type SeedQuery } from './seed-list.js';

export { SeedSourceError, SeedSqlRefusedError, type SeedQuery } from './seed-list.js';

/**
 * Resolves a seed source to its seeds, trimmed, blanks dropped, duplicates removed (first wins),
 * held whole: for readers of a short list (signals targets). A sync streams its seeds (`SeedList`).
 * @param key the config key, for messages (`seeds.profiles`)
 */
export async function resolveSeeds(
  key: string,
  source: SeedSource,
  baseDir: string,
  query: SeedQuery,
): Promise<string[]> {
  return (await SeedList.open(key, source, baseDir, query)).toArray();
}

import { copyFile, mkdtemp } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A copy of a warehouse built once: the folder it is in and its DuckDB file. */
export interface WarehouseCopy {
  dir: string;
  path: string;
}

/**
 * A DuckDB warehouse built once per test file by `build` (given an empty folder, it leaves
 * `w.duckdb` there, e.g. by syncing into it) and copied for each test that asks, so every test
 * gets a warehouse of its own to change without paying for the build again.
 */
export function syncedWarehouse(build: (dir: string) => Promise<void>): () => Promise<WarehouseCopy> {
  let template: Promise<string> | undefined;
  return async () => {
    template ??= (async () => {
      const dir = await mkdtemp(join(tmpdir(), 'seedline-fixture-'));
      await build(dir);
      return join(dir, 'w.duckdb');
    })();
    const source = await template;
    const dir = await mkdtemp(join(tmpdir(), 'seedline-copy-'));
    const path = join(dir, 'w.duckdb');
    await copyFile(source, path);
    // A write-ahead log not yet checkpointed holds the last commits.
    if (existsSync(`${source}.wal`)) await copyFile(`${source}.wal`, `${path}.wal`);
    return { dir, path };
  };
}

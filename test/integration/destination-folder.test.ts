import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempWorkspace, writeConfig } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';

// Issue 34, item 3: a mistyped destination.path used to make a new folder and an empty
// warehouse, whose ledger knows nothing: every seed would have been bought again.

/** A config in `dir` syncing one profile into the DuckDB file at `path`. */
function configIn(dir: string, path: string): Promise<string> {
  return writeConfig(dir, {
    api: { base_url: 'sandbox', api_key: 'svc_test_folder' },
    destination: { type: 'duckdb', path },
    seeds: { profiles: ['https://www.network.example/in/ada-lovelace'] },
    streams: { profiles: {} },
  });
}

describe('a DuckDB destination.path whose folder does not exist', () => {
  it('given plan, sync and query, when run, then each exits 2 naming the folder and how to create it, and creates nothing', async () => {
    const dir = await tempWorkspace();
    const configPath = await configIn(dir, 'warehuose/w.duckdb');
    for (const args of [['plan'], ['sync'], ['query', 'select 1']]) {
      const result = await runCliInProcess([...args, '--config', configPath]);
      expect(result.code, args[0]).toBe(2);
      expect(result.stderr).toContain(`destination.path: the folder ${join(dir, 'warehuose')} does not exist`);
      expect(result.stderr).toContain(`mkdir -p '${join(dir, 'warehuose')}'`);
    }
    expect(existsSync(join(dir, 'warehuose'))).toBe(false);
  });

  it('given the folder made, when synced, then the warehouse is created in it', async () => {
    const dir = await tempWorkspace();
    const configPath = await configIn(dir, 'w.duckdb');
    const result = await runCliInProcess(['sync', '--config', configPath]);
    expect(result.code, result.stderr).toBe(0);
    expect(existsSync(join(dir, 'w.duckdb'))).toBe(true);
  });
});

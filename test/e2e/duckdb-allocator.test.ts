import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { DUCKDB_ALLOCATOR_ENV, DUCKDB_ALLOCATOR_OPTIONS } from '../../src/cli/duckdb-allocator.js';
import { runCli, tempWorkspace, writeConfig } from '../helpers/cli.js';

// jemalloc inside libduckdb reads its options once, when the native library is loaded: the entry point must set them
// before anything imports DuckDB. A preloaded module reports the variable as it is at that moment.
const PROBE = `
const dlopen = process.dlopen;
process.dlopen = function (module, filename, ...rest) {
  if (/duckdb/.test(filename)) process.stderr.write('libduckdb loaded with ' + (process.env.${DUCKDB_ALLOCATOR_ENV} ?? '(unset)') + '\\n');
  return dlopen.call(this, module, filename, ...rest);
};
`;

async function allocatorOptionsSeen(env: NodeJS.ProcessEnv): Promise<string[]> {
  const dir = await tempWorkspace();
  const probe = join(dir, 'probe.mjs');
  await writeFile(probe, PROBE);
  // `query` reads an existing file only.
  (await DuckDBInstance.create(join(dir, 'w.duckdb'))).closeSync();
  const config = await writeConfig(dir, {
    api: { base_url: 'http://127.0.0.1:9', api_key: 'svc_test_allocator' },
    destination: { type: 'duckdb', path: join(dir, 'w.duckdb') },
    streams: { account: {} },
  });
  const result = await runCli(['query', '--config', config, 'select 42 as n'], {
    env: { ...env, NODE_OPTIONS: `--import=${probe}` },
  });
  expect(result.code, result.stderr).toBe(0);
  expect(result.stdout).toContain('42');
  return [...result.stderr.matchAll(/^libduckdb loaded with (.*)$/gm)].map((m) => m[1]!);
}

describe('DuckDB allocator options of the seedline entry point', () => {
  it('given no allocator options in the environment, when a command opens DuckDB, then libduckdb loads with freed pages returned at once', async () => {
    expect(await allocatorOptionsSeen({ [DUCKDB_ALLOCATOR_ENV]: undefined })).toEqual([DUCKDB_ALLOCATOR_OPTIONS]);
  });

  it("given the user's own allocator options, when a command opens DuckDB, then libduckdb loads with theirs", async () => {
    expect(await allocatorOptionsSeen({ [DUCKDB_ALLOCATOR_ENV]: 'dirty_decay_ms:5000' })).toEqual([
      'dirty_decay_ms:5000',
    ]);
  });
});

import { describe, expect, it } from 'vitest';
import { tempWorkspace, writeConfig } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';

// Issue 39, item 7: DuckDB names a file's catalog after the file, so `own.duckdb` with
// `schema: own` made `own.profiles` ambiguous and the config was refused. The file is now
// attached under a catalog of seedline's own: any file name works with any schema.

describe('a DuckDB file named like its schema', () => {
  it.each([
    ['own.duckdb', 'own'],
    ['seedline.duckdb', undefined],
  ])('given %s with schema %s, when synced and queried, then the schema reads as the schema', async (path, schema) => {
    const dir = await tempWorkspace();
    const config = await writeConfig(dir, {
      api: { base_url: 'sandbox', api_key: 'svc_test_file_names' },
      destination: { type: 'duckdb', path, ...(schema ? { schema } : {}) },
      seeds: { profiles: ['https://www.network.example/in/ada-lovelace'] },
      streams: { profiles: {} },
    });
    const sync = await runCliInProcess(['sync', '--config', config]);
    expect(sync.code, sync.stderr).toBe(0);
    const query = await runCliInProcess([
      'query',
      '--config',
      config,
      '--format',
      'json',
      `select full_name from ${schema ?? 'seedline'}.profiles`,
    ]);
    expect(query.code, query.stderr).toBe(0);
    expect(JSON.parse(query.stdout)).toEqual([{ full_name: 'Ada Lovelace' }]);
    const status = await runCliInProcess(['status', '--config', config]);
    expect(status.code, status.stderr).toBe(0);
  });
});

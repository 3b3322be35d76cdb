import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';

// Issue 39, item 1: `seedline init` writes a .env example; a .env beside the config fills ${VAR}s.
const CONFIG = `
api:
  base_url: sandbox
  api_key: \${SEEDLINE_API_KEY:-svc_test_default}
destination: { type: duckdb, path: w.duckdb, schema: "\${WAREHOUSE_SCHEMA}" }
streams: { account: {} }
`;

describe('a .env file beside the config', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'seedline-dotenv-'));
    await writeFile(join(dir, 'seedline.yaml'), CONFIG);
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('given a .env, when the config loads, then its variables fill placeholders the environment leaves unset', async () => {
    await writeFile(join(dir, '.env'), '# comment\nSEEDLINE_API_KEY=svc_test_from_file\nWAREHOUSE_SCHEMA="crm"\n');
    const { config } = await loadConfig(join(dir, 'seedline.yaml'), {}, () => {});
    expect(config.api.api_key).toBe('svc_test_from_file');
    expect(config.destination.schema).toBe('crm');
  });

  it('given a variable set in both, when the config loads, then the environment wins', async () => {
    await writeFile(join(dir, '.env'), 'SEEDLINE_API_KEY=svc_test_from_file\nWAREHOUSE_SCHEMA=crm\n');
    const { config } = await loadConfig(
      join(dir, 'seedline.yaml'),
      { SEEDLINE_API_KEY: 'svc_test_from_env' },
      () => {},
    );
    expect(config.api.api_key).toBe('svc_test_from_env');
  });

  it('given no .env and a variable without default unset, when the config loads, then the error names the variable', async () => {
    await expect(loadConfig(join(dir, 'seedline.yaml'), {}, () => {})).rejects.toThrow(
      /environment variable WAREHOUSE_SCHEMA is not set/,
    );
  });
});

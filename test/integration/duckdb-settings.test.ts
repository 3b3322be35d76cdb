import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSession } from '../../src/cli/open-session.js';

describe('DuckDB settings from the config', () => {
  it('given destination.settings, when a session opens the file, then DuckDB runs with them', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'seedline-settings-'));
    const configPath = join(dir, 'seedline.yaml');
    await writeFile(
      configPath,
      ['api: { base_url: sandbox, api_key: svc_test_settings }', 'destination: { type: duckdb, path: w.duckdb, settings: { threads: 1, memory_limit: 96MB } }', 'streams: {}', ''].join('\n'),
    );

    const session = await openSession(configPath);
    try {
      const [row] = await session.destination.query("select current_setting('threads') as threads, current_setting('memory_limit') as memory_limit");
      expect(Number(row!.threads)).toBe(1);
      // DuckDB reports the limit in binary units: 96 MB = 91.5 MiB.
      expect(String(row!.memory_limit)).toMatch(/^91\.\d+ MiB$/);
    } finally {
      await session.close();
    }
  });
});

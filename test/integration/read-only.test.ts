import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startSandbox } from '../../src/sandbox/index.js';
import { tempWorkspace, writeConfig } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { queryDestination } from '../helpers/destinations.js';

// `seedline query` and `seeds.*.sql` only read: anything but one select is refused (exit 2) and changes nothing.
describe('reads only read', () => {
  it('given a synced warehouse, when query is given a statement that writes or two statements, or a seed source SQL drops the run history, then each exits 2 saying why and every table is intact', async () => {
    const sandbox = await startSandbox({ rpm: 100_000 });
    try {
      const dir = await tempWorkspace();
      const dest = { type: 'duckdb' as const, path: join(dir, 'w.duckdb'), schema: 'seedline' };
      const config = (seeds: Record<string, unknown> = {}, streams: Record<string, unknown> = { account: {} }) => ({
        api: { base_url: sandbox.url, api_key: 'svc_test_read_only' },
        destination: dest,
        seeds,
        streams,
      });
      const configPath = await writeConfig(dir, config());
      expect((await runCliInProcess(['sync', '--config', configPath])).code).toBe(0);

      for (const sql of [
        'select 1; drop table seedline.account',
        'drop table seedline.account',
        'create table seedline.intruder (a int)',
      ]) {
        const refused = await runCliInProcess(['query', '--config', configPath, sql]);
        expect(refused.code, sql).toBe(2);
        expect(refused.stderr).toMatch(
          /Only one read-only statement \(a select\) runs here.*nothing was run.*SEEDLINE_QUERY_NOT_READ_ONLY/,
        );
      }
      const read = await runCliInProcess([
        'query',
        '--config',
        configPath,
        '--format',
        'json',
        'select count(*) as n from seedline.account',
      ]);
      expect(JSON.parse(read.stdout)).toEqual([{ n: 1 }]);

      await writeConfig(
        dir,
        config({ profiles: { sql: 'select 1 as url; drop table seedline._seedline_runs' } }, { profiles: {} }),
      );
      const sync = await runCliInProcess(['sync', '--config', configPath]);
      expect(sync.code, sync.stderr).toBe(2);
      expect(sync.stderr).toMatch(/seeds\.profiles\.sql: Only one read-only statement/);
      const runs = await queryDestination(dest, 'select count(*) as n from seedline._seedline_runs');
      expect(Number(runs[0]?.n)).toBeGreaterThanOrEqual(1);
      expect(sandbox.ledger.entries.filter((e) => e.credits > 0)).toEqual([]);
    } finally {
      await sandbox.close();
    }
  });
});

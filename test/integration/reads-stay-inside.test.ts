import { existsSync, mkdtempSync } from 'node:fs';
import { chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { e2eBackends } from '../helpers/destinations.js';
import { useSandboxWorkspace } from '../helpers/sandbox-workspace.js';

// Issue 34, item 1: `query` and `seeds.*.sql` read the warehouse's tables and nothing else. A
// read-only transaction (Postgres) or a select-only check (DuckDB) alone let a select write a
// file on the server (`COPY … TO`), read one (`pg_read_file`, `read_csv`) or list a folder (`glob`).

const ATTEMPTS: Record<string, (file: string, folder: string) => string[]> = {
  postgres: (file, folder) => [
    `copy (select 1) to '${file}'`,
    `select pg_read_file('/etc/hostname')`,
    `select pg_ls_dir('${folder}')`,
    `select lo_import('/etc/hostname')`,
  ],
  duckdb: (file, folder) => [
    `copy (select 1) to '${file}'`,
    `export database '${join(folder, 'exported')}'`,
    `select * from read_csv('/etc/hostname')`,
    `select * from '/etc/hostname'`,
    `select count(*) from glob('${folder}/*')`,
    `select * from query_table('seedline.account')`,
  ],
};

describe.each(e2eBackends)('reads stay inside the warehouse, on $name', ({ name, make }) => {
  const workspace = useSandboxWorkspace('svc_test_reads_inside', { streams: { account: {} } }, (dir) =>
    make(dir, 'reads_inside'),
  );

  it('given a synced warehouse, when query reads or writes a file, lists a folder or reads through another function, then each exits 2, runs nothing and creates nothing; a select of its tables still answers', async (ctx) => {
    const { destination, configPath } = workspace;
    if (!destination) return ctx.skip();
    expect((await runCliInProcess(['sync', '--config', configPath])).code).toBe(0);
    // A folder the Postgres server could write to: nothing may appear in it.
    const folder = mkdtempSync(join(tmpdir(), 'seedline-outside-'));
    await chmod(folder, 0o777);
    const file = join(folder, 'leak.csv');
    for (const sql of ATTEMPTS[name]!(file, folder)) {
      const refused = await runCliInProcess(['query', '--config', configPath, sql]);
      expect(refused.code, `${sql}: ${refused.stderr}`).toBe(2);
      expect(refused.stderr, sql).toMatch(/nothing was run.*\(SEEDLINE_QUERY_(OUTSIDE_WAREHOUSE|NOT_READ_ONLY)\)/s);
    }
    expect(existsSync(file)).toBe(false);
    expect(existsSync(join(folder, 'exported'))).toBe(false);

    const schema = destination.schema ?? 'seedline';
    const read = await runCliInProcess([
      'query',
      '--config',
      configPath,
      '--format',
      'json',
      `select count(*) as n from ${schema}.account`,
    ]);
    expect(read.code, read.stderr).toBe(0);
    expect(JSON.parse(read.stdout)).toEqual([{ n: 1 }]);
  });
});

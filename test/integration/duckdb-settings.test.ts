import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openSession } from '../../src/cli/open-session.js';
import { DestinationSettingError, DestinationWriteError } from '../../src/destinations/destination-error.js';
import { DuckDbDestination } from '../../src/destinations/duckdb/duckdb-destination.js';

async function configWithSettings(settings: string): Promise<{ dir: string; configPath: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'seedline-settings-'));
  const configPath = join(dir, 'seedline.yaml');
  await writeFile(
    configPath,
    [
      'api: { base_url: sandbox, api_key: svc_test_settings }',
      `destination: { type: duckdb, path: w.duckdb, settings: ${settings} }`,
      'streams: {}',
      '',
    ].join('\n'),
  );
  return { dir, configPath };
}

describe('DuckDB settings from the config', () => {
  it('given destination.settings, when a session opens the file, then DuckDB runs with them', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'seedline-settings-'));
    const configPath = join(dir, 'seedline.yaml');
    await writeFile(
      configPath,
      [
        'api: { base_url: sandbox, api_key: svc_test_settings }',
        'destination: { type: duckdb, path: w.duckdb, settings: { threads: 1, memory_limit: 96MB } }',
        'streams: {}',
        '',
      ].join('\n'),
    );

    const session = await openSession(configPath);
    try {
      const [row] = await session.destination.query(
        "select current_setting('threads') as threads, current_setting('memory_limit') as memory_limit",
      );
      expect(Number(row!.threads)).toBe(1);
      // DuckDB reports the limit in binary units: 96 MB = 91.5 MiB.
      expect(String(row!.memory_limit)).toMatch(/^91\.\d+ MiB$/);
    } finally {
      await session.close();
    }
  });

  it("given a value DuckDB refuses, when a session opens the file, then the error names destination.settings.<key> and DuckDB's reason", async () => {
    const { dir, configPath } = await configWithSettings('{ threads: 2, memory_limit: lots }');
    const error = await openSession(configPath).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(DestinationSettingError);
    expect(error).toMatchObject({
      code: 'SEEDLINE_DESTINATION_SETTING_INVALID',
      setting: 'memory_limit',
      message: `Cannot open DuckDB file ${join(dir, 'w.duckdb')}: the value of destination.settings.memory_limit was refused: Parser Error: Memory must have a number (e.g. 1GB). Fix or remove destination.settings.memory_limit in the config.`,
    });
  });

  it("given an unknown setting, when a session opens the file, then the error names it with DuckDB's suggestion", async () => {
    const { configPath } = await configWithSettings('{ memory_limt: 1GB }');
    await expect(openSession(configPath)).rejects.toThrow(
      /destination\.settings\.memory_limt was refused: .*unrecognized configuration parameter "memory_limt".*memory_limit/,
    );
  });

  it("given a refused value that could be a credential, when reported, then the value is not shown, not even inside DuckDB's reason", async () => {
    const { configPath } = await configWithSettings('{ threads: hunter2secret }');
    const error = (await openSession(configPath).catch((thrown: unknown) => thrown)) as Error;
    expect(error.message).toMatch(/the value of destination\.settings\.threads was refused: .*\(the value\)/);
    expect(error.message).not.toContain('hunter2secret');
    const lowered = (await openSession((await configWithSettings('{ default_order: SeCrEt99 }')).configPath).catch(
      (thrown: unknown) => thrown,
    )) as Error;
    expect(lowered.message).toMatch(/destination\.settings\.default_order was refused/);
    expect(lowered.message.toLowerCase()).not.toContain('secret99');
  });

  it('given a memory_limit the units outgrow, when a commit runs out of it, then the error says which setting to raise, and the units before are kept', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'seedline-settings-'));
    // 2 MB values held until a checkpoint (64 MB of WAL by default) fill a 16 MB limit within a few units.
    const dest = new DuckDbDestination({ path: join(dir, 'w.duckdb'), settings: { memory_limit: '16MB' } });
    const body = (n: number): string => String(n % 10).repeat(2_000_000);
    let failure: unknown;
    let committed = 0;
    try {
      await dest.lock({ holder: 'duckdb-settings.test.ts' });
      await dest.ensureTable({
        name: 'bodies',
        schema: z.object({ id: z.string(), body: z.string() }),
        primaryKey: ['id'],
        writeMode: 'merge',
      });
      while (failure === undefined && committed < 40) {
        const unit = await dest.beginUnit('run_1');
        try {
          await unit.write('bodies', [{ id: `k${committed}`, body: body(committed) }]);
          await unit.commit();
          committed++;
        } catch (error) {
          failure = error;
          await unit.rollback();
        }
      }
      expect(failure).toBeInstanceOf(DestinationWriteError);
      const message = (failure as Error).message;
      expect(message).toContain('raise destination.settings.memory_limit in the config');
      expect(message).not.toMatch(/SET memory_limit|Possible solutions/);
      expect(await dest.query(`select count(*) as n from ${dest.schema}.bodies`)).toEqual([{ n: committed }]);
    } finally {
      await dest.close();
    }
  });
});

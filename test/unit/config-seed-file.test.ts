import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveSeeds } from '../../src/config/resolve-seeds.js';

const noQuery = async function* (): AsyncGenerator<unknown[][]> {};

describe('a seed file without the named column', () => {
  it('given a .env named as the seed file, when resolved, then the error names the file, the column and how many columns the first line has, and never its contents', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'seedline-seed-file-'));
    await writeFile(join(dir, '.env'), 'SEEDLINE_API_KEY=svc_live_s3cr3t_value,OTHER=x\nMORE=y\n');
    const error = await resolveSeeds('seeds.profiles', { file: '.env', column: 'url' }, dir, noQuery).catch(
      (e: Error) => e,
    );
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toMatch(
      /^seeds\.profiles\.column: .*\.env has no column "url": its first line has 2 columns \(names not shown/,
    );
    expect(message).not.toMatch(/s3cr3t|SEEDLINE_API_KEY|OTHER|MORE/);
  });

  it('given a CSV whose header names other columns, when resolved, then the error is a config error listing them with a did-you-mean', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'seedline-seed-file-'));
    await writeFile(join(dir, 'crm.csv'), 'name,profile_url,owner\nJane,https://x/in/jane,bob@example.com\n');
    const error = await resolveSeeds('seeds.profiles', { file: 'crm.csv', column: 'profile_ulr' }, dir, noQuery).catch(
      (e: Error & { code?: string }) => e,
    );
    expect(error).toMatchObject({ code: 'SEEDLINE_SEEDS_FILE_INVALID' });
    expect((error as Error).message).toMatch(
      /crm\.csv has no column "profile_ulr": its first line names 3 columns: "name", "profile_url", "owner" \(did you mean "profile_url"\?\)/,
    );
    expect((error as Error).message).not.toMatch(/Jane|example\.com/);
  });

  it('given a CSV without a header (its first line a seed), when resolved, then the error shows no value of it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'seedline-seed-file-'));
    await writeFile(join(dir, 'urls.csv'), 'https://www.network.example/in/jane-doe\n');
    const error = await resolveSeeds('seeds.profiles', { file: 'urls.csv', column: 'url' }, dir, noQuery).catch(
      (e: Error) => e,
    );
    expect((error as Error).message).toMatch(/its first line has 1 column \(names not shown/);
    expect((error as Error).message).not.toMatch(/jane-doe|network\.example/);
  });

  it('given a CSV with the column, when resolved, then its values come back trimmed and without duplicates', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'seedline-seed-file-'));
    await writeFile(join(dir, 'seeds.csv'), 'name,url\nJane, jane-doe \nJohn,john-roe\nJane,jane-doe\n');
    expect(await resolveSeeds('seeds.profiles', { file: 'seeds.csv', column: 'url' }, dir, noQuery)).toEqual([
      'jane-doe',
      'john-roe',
    ]);
  });
});

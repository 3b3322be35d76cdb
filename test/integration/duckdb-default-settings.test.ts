import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Profile } from '../../schemas/profile.js';
import { createDestination } from '../../src/destinations/create-destination.js';
import { DuckDbDestination } from '../../src/destinations/duckdb/duckdb-destination.js';
import { duckDbFileLock } from '../../src/destinations/duckdb/duckdb-file-lock.js';
import type { Destination } from '../../src/destinations/destination.js';
import type { TableDefinition } from '../../src/normalize/table-definition.js';
import { profileRecord, seedRow } from '../helpers/destinations.js';

const profiles: TableDefinition = { name: 'profiles', schema: Profile, primaryKey: ['url'], writeMode: 'merge' };

/** DuckDB's own rendering of the sizes: 64MB is 61.0 MiB, 128MB 122.0 MiB, 16MB 15.2 MiB, 96MB 91.5 MiB. */
const LEAN = { memory_limit: '61.0 MiB', checkpoint_threshold: '15.2 MiB' };
const FULL = { memory_limit: '122.0 MiB', checkpoint_threshold: '61.0 MiB' };

describe('DuckDB default settings', () => {
  const opened: { destination: Destination; dir: string }[] = [];
  afterEach(async () => {
    for (const { destination, dir } of opened.splice(0)) {
      await destination.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  async function open(settings?: Record<string, string>, rowsBetweenReopens?: number): Promise<Destination> {
    const dir = mkdtempSync(join(tmpdir(), 'seedline-settings-'));
    const path = join(dir, 'w.duckdb');
    const destination = rowsBetweenReopens
      ? new DuckDbDestination({ path, rowsBetweenReopens, ...(settings ? { settings } : {}) })
      : await createDestination({ type: 'duckdb', path, ...(settings ? { settings } : {}) });
    opened.push({ destination, dir });
    return destination;
  }

  async function settingsOf(destination: Destination): Promise<Record<string, string>> {
    const [row] = await destination.query(
      "select current_setting('memory_limit') as memory_limit, current_setting('checkpoint_threshold') as checkpoint_threshold, current_setting('threads') as threads",
    );
    return Object.fromEntries(Object.entries(row!).map(([name, value]) => [name, String(value)]));
  }

  async function merge(destination: Destination, run: string, people: readonly number[]): Promise<void> {
    const unit = await destination.beginUnit(run);
    await unit.write(
      'profiles',
      people.map((n) => profileRecord(n)),
    );
    await unit.commit();
  }

  it('given a destination config without settings, when the file opens, then DuckDB has the lean 64 MB pool with 16 MB checkpoints', async () => {
    expect(await settingsOf(await open())).toMatchObject(LEAN);
  });

  it('given destination.settings naming other settings, when the file opens, then they apply and the lean memory settings stay', async () => {
    const row = await settingsOf(await open({ threads: '1' }));
    expect(row).toMatchObject({ ...LEAN, threads: '1' });
  });

  it('given a first load of new keys only, when its units commit, then the file keeps the lean settings', async () => {
    const destination = await open();
    await destination.ensureTable(profiles);
    await merge(destination, 'run_1', [1, 2, 3]);
    await merge(destination, 'run_1', [4, 5]);
    expect(await settingsOf(destination)).toMatchObject(LEAN);
  });

  it('given a merge of a key the table already holds, when the unit writes, then DuckDB takes the full 128 MB pool and 64 MB checkpoints, and the rows are right', async () => {
    const destination = await open();
    await destination.ensureTable(profiles);
    await merge(destination, 'run_1', [1, 2]);
    expect(await settingsOf(destination)).toMatchObject(LEAN);
    await merge(destination, 'run_2', [2, 3]);
    expect(await settingsOf(destination)).toMatchObject(FULL);
    await destination.settle();
    const rows = await destination.query<{ url: string }>(
      `select url from ${destination.schema}.profiles order by url`,
    );
    expect(rows.map((row) => row.url)).toEqual([1, 2, 3].map((n) => profileRecord(n).url));
  });

  it('given a lookup of ledger keys that may be stored, when it runs, then DuckDB takes the full settings first', async () => {
    const destination = await open();
    await destination.ensureSystemTables();
    const unit = await destination.beginUnit('run_1');
    await unit.saveSeeds([seedRow(1)]);
    await unit.commit();
    expect(await settingsOf(destination)).toMatchObject(LEAN);
    const found = await destination.readSeedsByKey('profiles', ['person-1']);
    expect([...found.keys()]).toEqual(['person-1']);
    expect(await settingsOf(destination)).toMatchObject(FULL);
  });

  it('given a select a user wrote (seedline query, seeds by SQL), when it runs, then DuckDB takes the full settings first', async () => {
    const destination = await open();
    expect(await settingsOf(destination)).toMatchObject(LEAN);
    expect(await destination.readQuery('select 42 as answer')).toEqual([{ answer: 42 }]);
    expect(await settingsOf(destination)).toMatchObject(FULL);
  });

  it('given widened settings, when the file is closed and opened again between units, then the new instance keeps them', async () => {
    const destination = await open(undefined, 3);
    await destination.ensureTable(profiles);
    await merge(destination, 'run_1', [1, 2]);
    expect(await settingsOf(destination)).toMatchObject(LEAN);
    await merge(destination, 'run_2', [2, 3, 4, 5]);
    const shared = await duckDbFileLock.open((destination as DuckDbDestination)['path']);
    try {
      await merge(destination, 'run_3', [6]);
      expect(shared.connections.reopened).toBeGreaterThan(0);
      expect(shared.connections.widened).toBe(true);
    } finally {
      duckDbFileLock.release(shared);
    }
    expect(await settingsOf(destination)).toMatchObject(FULL);
  });

  it('given a write-ahead log left by a process that did not close the file, when the file opens, then it opens with the full settings to replay it, and the rows are there', async () => {
    const writer = await open();
    await writer.ensureTable(profiles);
    await merge(writer, 'run_1', [1, 2]);
    const path = (writer as DuckDbDestination)['path'];
    expect(existsSync(`${path}.wal`)).toBe(true);
    // The files as a process killed now would leave them.
    const dir = mkdtempSync(join(tmpdir(), 'seedline-settings-'));
    const copy = join(dir, 'copy.duckdb');
    copyFileSync(path, copy);
    copyFileSync(`${path}.wal`, `${copy}.wal`);
    const reader = await createDestination({ type: 'duckdb', path: copy });
    opened.push({ destination: reader, dir });
    expect(await settingsOf(reader)).toMatchObject(FULL);
    const rows = await reader.query<{ n: unknown }>(`select count(*) as n from ${reader.schema}.profiles`);
    expect(Number(rows[0]!.n)).toBe(2);
    // The same file closed cleanly has no log left: it opens lean.
    await reader.close();
    expect(existsSync(`${copy}.wal`)).toBe(false);
    const again = await createDestination({ type: 'duckdb', path: copy });
    opened.push({ destination: again, dir: mkdtempSync(join(tmpdir(), 'seedline-settings-')) });
    expect(await settingsOf(again)).toMatchObject(LEAN);
  });

  it('given merges a killed run left unsettled, when a new process opens the file and settles them, then it takes the full settings first and the rows are right', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'seedline-settings-'));
    const path = join(dir, 'w.duckdb');
    const writer = new DuckDbDestination({ path });
    await writer.ensureTable(profiles);
    await merge(writer, 'run_1', [1, 2]);
    await merge(writer, 'run_2', [2, 3]);
    // Closed with the replaced rows of person 2 still listed: what a kill leaves (the settle runs at the stream's end).
    await writer.close();
    const next = new DuckDbDestination({ path });
    opened.push({ destination: next, dir });
    await next.ensureTable(profiles);
    expect(await settingsOf(next)).toMatchObject(LEAN);
    await next.settle();
    expect(await settingsOf(next)).toMatchObject(FULL);
    const rows = await next.query<{ url: string }>(`select url from ${next.schema}.profiles order by url`);
    expect(rows.map((row) => row.url)).toEqual([1, 2, 3].map((n) => profileRecord(n).url));
  });

  it("given a read of a stream's whole ledger (a state reset), when it runs, then DuckDB takes the full settings first", async () => {
    const destination = await open();
    await destination.ensureSystemTables();
    const unit = await destination.beginUnit('run_1');
    await unit.saveSeeds([seedRow(1), seedRow(2)]);
    await unit.commit();
    expect(await settingsOf(destination)).toMatchObject(LEAN);
    expect([...(await destination.readSeeds('profiles')).keys()].sort()).toEqual(['person-1', 'person-2']);
    expect(await settingsOf(destination)).toMatchObject(FULL);
  });

  it("given destination.settings with a memory limit, when the file works on stored rows, then the user's limit holds throughout", async () => {
    const destination = await open({ memory_limit: '96MB' });
    expect(await settingsOf(destination)).toMatchObject({ memory_limit: '91.5 MiB', checkpoint_threshold: '61.0 MiB' });
    await destination.ensureTable(profiles);
    await merge(destination, 'run_1', [1]);
    await merge(destination, 'run_2', [1]);
    expect(await settingsOf(destination)).toMatchObject({ memory_limit: '91.5 MiB', checkpoint_threshold: '61.0 MiB' });
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DuckDbDestination } from '../../src/destinations/duckdb/duckdb-destination.js';
import { duckDbFileLock, type SharedDuckDbFile } from '../../src/destinations/duckdb/duckdb-file-lock.js';
import { seedRow } from '../helpers/destinations.js';

// A commit checkpoints the file inside DuckDB's memory_limit; a ledger lookup beside it took that memory and the
// checkpoint failed (bench/README.md, "Ledger lookups apart from commits"). They run one at a time.
describe('DuckDB: commits and ledger lookups run apart', () => {
  let dir: string;
  let dest: DuckDbDestination;
  let shared: SharedDuckDbFile;
  /** What went through `apart`, in the order each started. */
  let apart: string[];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'seedline-apart-'));
    const path = join(dir, 'warehouse.duckdb');
    dest = new DuckDbDestination({ path });
    await dest.lock({ holder: 'seedline sync (run r_apart)' });
    await dest.ensureSystemTables();
    shared = await duckDbFileLock.open(path);
    apart = [];
    const original = shared.connections.apart.bind(shared.connections);
    shared.connections.apart = (task) => {
      apart.push('task');
      return original(task);
    };
  });

  afterEach(async () => {
    duckDbFileLock.release(shared);
    await dest.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('given a unit and a lookup of ledger keys, when they run, then the COMMIT and the lookup go through apart and the unit’s other statements do not', async () => {
    const unit = await dest.beginUnit('run_1');
    await unit.saveSeeds([seedRow(1), seedRow(2)]);
    expect(apart).toEqual([]);
    await unit.commit();
    expect(apart).toEqual(['task']);

    const rows = await dest.readSeedsByKey('profiles', ['person-1', 'person-9']);
    expect([...rows.keys()]).toEqual(['person-1']);
    expect(apart).toEqual(['task', 'task']);
  });

  it('given a lookup holding the file’s turn, when a unit commits meanwhile, then its COMMIT runs only once the lookup is done', async () => {
    const unit = await dest.beginUnit('run_2');
    await unit.saveSeeds([seedRow(3)]);
    const order: string[] = [];
    let lookupMayEnd!: () => void;
    const lookup = shared.connections.apart(async () => {
      order.push('lookup started');
      await new Promise<void>((resolve) => (lookupMayEnd = resolve));
      order.push('lookup ended');
    });
    const committed = unit.commit().then(() => order.push('committed'));
    // The COMMIT is queued behind the lookup: however long this waits, it cannot end first.
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['lookup started']);
    lookupMayEnd();
    await Promise.all([lookup, committed]);
    expect(order).toEqual(['lookup started', 'lookup ended', 'committed']);
    expect((await dest.readSeedsByKey('profiles', ['person-3'])).get('person-3')?.status).toBe('pending');
  });
});

import { describe, expect, it } from 'vitest';
import { GrowingKeyFilter } from '../../src/destinations/sql/key-filter.js';
import { LedgerKeyFilters, type LedgerKeyScan } from '../../src/destinations/sql/ledger-key-filters.js';

/** A stream's ledger keys in memory, counting the scans made of them. */
function ledger(keys: string[]): { scan: LedgerKeyScan; scans: () => number } {
  let scans = 0;
  return {
    scan: async (add) => {
      scans++;
      for (const key of keys) add(key);
    },
    scans: () => scans,
  };
}

const url = (n: number) => `https://www.network.example/in/person-${n}`;

describe('GrowingKeyFilter', () => {
  it('given 10 times as many keys as its first capacity, when each is asked for, then none is ruled out, and unseen keys rarely pass', () => {
    const filter = new GrowingKeyFilter(10_000);
    for (let n = 0; n < 100_000; n++) filter.add(url(n));
    let missed = 0;
    for (let n = 0; n < 100_000; n++) if (!filter.mayContain(url(n))) missed++;
    let passed = 0;
    for (let n = 100_000; n < 200_000; n++) if (filter.mayContain(url(n))) passed++;
    expect(missed).toBe(0);
    expect(passed).toBeLessThan(20);
  });
});

describe('LedgerKeyFilters', () => {
  it('given a ledger of 3 keys, when lookups ask for them and for keys never recorded, then only the recorded ones may be there, and the ledger is read once', async () => {
    const filters = new LedgerKeyFilters();
    const rows = ledger([url(1), url(2), url(3)]);
    expect(await filters.mayHave('s', 'profiles', [url(1), url(9), url(3)], rows.scan)).toEqual([url(1), url(3)]);
    expect(await filters.mayHave('s', 'profiles', [url(8), url(2)], rows.scan)).toEqual([url(2)]);
    expect(rows.scans()).toBe(1);
  });

  it('given keys written before the first lookup and while its read is under way, when asked for, then none of them is ruled out', async () => {
    const filters = new LedgerKeyFilters();
    // Written by a unit not committed yet: the ledger read cannot see it.
    filters.writing('s', [{ stream: 'profiles', seed_key: url(1) }]);
    let release!: () => void;
    const slowScan: LedgerKeyScan = async (add) => {
      add(url(2));
      await new Promise<void>((resolve) => (release = resolve));
    };
    const lookup = filters.mayHave('s', 'profiles', [url(1), url(2), url(3), url(4)], slowScan);
    filters.writing('s', [{ stream: 'profiles', seed_key: url(3) }]);
    release();
    expect(await lookup).toEqual([url(1), url(2), url(3)]);
  });

  it('given the same key in two streams and two schemas, when one is written, then only that stream of that schema may have it', async () => {
    const filters = new LedgerKeyFilters();
    const empty = ledger([]);
    filters.writing('s', [{ stream: 'profiles', seed_key: url(1) }]);
    expect(await filters.mayHave('s', 'profiles', [url(1)], empty.scan)).toEqual([url(1)]);
    expect(await filters.mayHave('s', 'companies', [url(1)], empty.scan)).toEqual([]);
    expect(await filters.mayHave('other', 'profiles', [url(1)], empty.scan)).toEqual([]);
  });

  it('given a ledger read that fails, when the next lookup comes, then it reads the ledger again instead of trusting a half-read filter', async () => {
    const filters = new LedgerKeyFilters();
    const failing: LedgerKeyScan = async (add) => {
      add(url(1));
      throw new Error('connection lost');
    };
    await expect(filters.mayHave('s', 'profiles', [url(2)], failing)).rejects.toThrow('connection lost');
    const rows = ledger([url(1), url(2)]);
    expect(await filters.mayHave('s', 'profiles', [url(2), url(3)], rows.scan)).toEqual([url(2)]);
    expect(rows.scans()).toBe(1);
  });
});

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

  it('given the keys to come announced, when they are added, then one filter holds them, and more keys announced past them get a filter twice its size', () => {
    const filter = new GrowingKeyFilter(1 << 16);
    filter.expect(500_000);
    for (let n = 0; n < 500_000; n++) filter.add(url(n));
    expect(filter.bytes).toBe(2_000_000);
    filter.expect(10);
    filter.add(url(500_000));
    filter.add(url(500_001));
    expect(filter.bytes).toBe(2_000_000 + 4_000_000);
    for (let n = 0; n < 500_002; n++) if (!filter.mayContain(url(n))) throw new Error(`key ${n} was ruled out`);
  });
});

describe('LedgerKeyFilters', () => {
  it('given the seeds of a stream announced before the first lookup, when each is written twice, then one filter holds them and the keys of the ledger are still found', async () => {
    const filters = new LedgerKeyFilters();
    filters.expect('s', 'profiles', 200_000);
    const rows = ledger([url(-1)]);
    for (let chunk = 0; chunk < 200; chunk++) {
      const keys = Array.from({ length: 1000 }, (_, i) => url(chunk * 1000 + i));
      expect(await filters.mayHave('s', 'profiles', keys, rows.scan)).toEqual([]);
      // A seed's ledger row is written as it is submitted, and again as it is fetched.
      const written = keys.map((key) => ({ stream: 'profiles', seed_key: key }));
      filters.writing('s', written);
      filters.writing('s', written);
    }
    expect(filters.bytes).toBe(800_000);
    expect(await filters.mayHave('s', 'profiles', [url(-1), url(0), url(199_999)], rows.scan)).toEqual([
      url(-1),
      url(0),
      url(199_999),
    ]);
    expect(rows.scans()).toBe(1);
  });

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

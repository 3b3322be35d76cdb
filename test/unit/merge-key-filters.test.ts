import { describe, expect, it } from 'vitest';
import { KeyFilter } from '../../src/destinations/sql/key-filter.js';
import type { KeyColumnSource } from '../../src/destinations/sql/merge-key-filters.js';
import { MergeKeyFilters } from '../../src/destinations/sql/merge-key-filters.js';

/** A table's key column in memory, counting the scans made of it. */
function table(keys: string[]): KeyColumnSource & { scans: number; keys: string[] } {
  return {
    keys,
    scans: 0,
    async count() {
      return this.keys.length;
    },
    async scan(each) {
      this.scans++;
      for (const key of this.keys) each([key]);
    },
  };
}

describe('KeyFilter', () => {
  it('given 100,000 keys added, when each is asked for, then none is ever ruled out, and unseen keys rarely pass', () => {
    const filter = new KeyFilter(100_000);
    for (let i = 0; i < 100_000; i++) filter.add(`https://network.example/in/person-${i}`);
    let missed = 0;
    for (let i = 0; i < 100_000; i++) if (!filter.mayContain(`https://network.example/in/person-${i}`)) missed++;
    let passed = 0;
    for (let i = 100_000; i < 200_000; i++) if (filter.mayContain(`https://network.example/in/person-${i}`)) passed++;
    expect(missed).toBe(0);
    expect(passed).toBeLessThan(5);
    expect(filter.full).toBe(false);
  });
});

describe('MergeKeyFilters', () => {
  it('given an empty table, when units merge, then only keys already written are candidates and the table is scanned once', async () => {
    const filters = new MergeKeyFilters();
    const source = table([]);
    expect(await filters.candidates('t', [['a', 'b']], 2, source)).toEqual([]);
    source.keys.push('a', 'b');
    filters.written('t', [['a', 'b']], 2, 2);
    expect(await filters.candidates('t', [['c', 'b', 'd', 'a']], 4, source)).toEqual([1, 3]);
    expect(source.scans).toBe(1);
  });

  it('given a table much larger than the unit, when a destination merges for the first time, then it probes every key rather than scan the table', async () => {
    const filters = new MergeKeyFilters();
    const source = table(Array.from({ length: 100 }, (_, i) => `k${i}`));
    expect(await filters.candidates('t', [['k1', 'new']], 2, source)).toBeNull();
    expect(source.scans).toBe(0);
  });

  it('given a filter, when the table gained rows it did not see, then the filter is rebuilt from the table', async () => {
    const filters = new MergeKeyFilters();
    const source = table(['a']);
    expect(await filters.candidates('t', [['a', 'x']], 2, source)).toEqual([0]);
    source.keys.push('x');
    filters.written('t', [['a', 'x']], 2, 2);
    source.keys.push('y');
    expect(await filters.candidates('t', [['y', 'z']], 2, source)).toEqual([0]);
    expect(source.scans).toBe(2);
  });

  it('given compound keys, when asked, then a key matches only on all its values', async () => {
    const filters = new MergeKeyFilters();
    const source: KeyColumnSource = {
      count: async () => 1,
      scan: async (each) => each(['2024-05', 7n]),
    };
    expect(
      await filters.candidates(
        't',
        [
          ['2024-05', '2024-05'],
          [7, 8],
        ],
        2,
        source,
      ),
    ).toEqual([0]);
  });
});

describe('MergeKeyFilters growth', () => {
  it('given more keys written than the first filter holds, when asked, then every written key is still a candidate and the table was scanned once', async () => {
    const filters = new MergeKeyFilters();
    const source = table([]);
    await filters.candidates('t', [[]], 0, source);
    for (let unit = 0; unit < 30; unit++) {
      const keys = Array.from({ length: 5000 }, (_, i) => `k${unit * 5000 + i}`);
      source.keys.push(...keys);
      filters.written('t', [keys], keys.length, source.keys.length);
    }
    const asked = Array.from({ length: 1000 }, (_, i) => `k${i * 150}`);
    expect(await filters.candidates('t', [asked], asked.length, source)).toHaveLength(1000);
    expect(await filters.candidates('t', [['new-1', 'new-2']], 2, source)).toEqual([]);
    expect(source.scans).toBe(1);
  });
});

describe('MergeKeyFilters sized by expect', () => {
  /** Writes `units` units of 5,000 new keys into an empty table, after `expected` is announced (0: none). */
  async function fill(
    expected: number,
    units: number,
  ): Promise<{ filters: MergeKeyFilters; source: ReturnType<typeof table> }> {
    const filters = new MergeKeyFilters();
    const source = table([]);
    if (expected > 0) filters.expect('t', expected);
    for (let unit = 0; unit < units; unit++) {
      const keys = Array.from({ length: 5000 }, (_, i) => `k${unit * 5000 + i}`);
      expect(await filters.candidates('t', [keys], keys.length, source)).toEqual([]);
      source.keys.push(...keys);
      filters.written('t', [keys], keys.length, source.keys.length);
    }
    return { filters, source };
  }

  it('given 300,000 keys announced, when they are merged, then one filter of their size holds them, in fewer bytes than doublings, and none is lost', async () => {
    const sized = await fill(300_000, 60);
    const grown = await fill(0, 60);
    // 4 bytes a key; doubling from 65,536 keys, 300,000 keys take filters of 65,536, 131,072, 262,144 keys.
    expect(sized.filters.bytes).toBe(1_200_000);
    expect(grown.filters.bytes).toBe(4 * (65_536 + 131_072 + 262_144));
    const asked = Array.from({ length: 1000 }, (_, i) => `k${i * 300}`);
    expect(await sized.filters.candidates('t', [asked], asked.length, sized.source)).toHaveLength(1000);
    expect(sized.source.scans).toBe(1);
  });

  it('given fewer keys announced than come, when the rest are merged, then the filter grows past them and loses none', async () => {
    const { filters, source } = await fill(10_000, 10);
    const asked = Array.from({ length: 1000 }, (_, i) => `k${i * 50}`);
    expect(await filters.candidates('t', [asked], asked.length, source)).toHaveLength(1000);
    expect(await filters.candidates('t', [['new-1', 'new-2']], 2, source)).toEqual([]);
  });
});

import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SeedList } from '../../src/config/seed-list.js';
import { RepeatFinder } from '../../src/engine/partitions/repeat-finder.js';
import { CsvRows, parseCsv } from '../../src/util/csv-rows.js';

const noQuery = async function* (): AsyncGenerator<unknown[][]> {};

async function collect(list: SeedList, size?: number): Promise<string[][]> {
  const chunks: string[][] = [];
  for await (const chunk of list.chunks(size)) chunks.push(chunk);
  return chunks;
}

describe('a seed list read in chunks', () => {
  it('given a CSV of 25,000 rows, when read in chunks of 1,000, then every seed comes back once, in order, trimmed, no chunk over 1,000, and a second pass reads the same', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'seedline-seed-list-'));
    const lines = ['name,url'];
    for (let i = 0; i < 25_000; i++) lines.push(`"Person, ${i}", https://x.example/in/person-${i} `);
    await writeFile(join(dir, 'seeds.csv'), `${lines.join('\r\n')}\r\n`);
    const list = await SeedList.open('seeds.profiles', { file: 'seeds.csv', column: 'url' }, dir, noQuery);

    const first = await collect(list, 1000);
    const second = await collect(list, 1000);

    expect(first.length).toBe(25);
    expect(first.every((chunk) => chunk.length <= 1000)).toBe(true);
    const seeds = first.flat();
    expect(seeds).toHaveLength(25_000);
    expect(seeds[0]).toBe('https://x.example/in/person-0');
    expect(seeds.every((seed, i) => seed === `https://x.example/in/person-${i}`)).toBe(true);
    expect(second).toEqual(first);
  });

  it('given blank values and repeats, when read in chunks, then blanks are dropped and repeats kept (partitions drop them by key), and toArray drops them', async () => {
    const list = SeedList.of(['a', ' ', 'b', 'a', '', ' c ']);
    expect((await collect(list, 2)).flat()).toEqual(['a', 'b', 'a', 'c']);
    expect(await list.toArray()).toEqual(['a', 'b', 'c']);
  });

  it('given a CSV file that does not exist, when opened, then it fails before anything is read, naming the key', async () => {
    const error = await SeedList.open(
      'seeds.profiles',
      { file: 'missing.csv', column: 'url' },
      tmpdir(),
      noQuery,
    ).catch((e: Error) => e);
    expect((error as Error).message).toMatch(/^seeds\.profiles\.file: cannot read .*missing\.csv/);
  });
});

describe('CSV parsed piece by piece', () => {
  const cell = fc.stringMatching(/^[a-z", \r\n]{0,6}$/);
  const quote = (value: string) => (/[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value);

  it('given any CSV cut into pieces anywhere (inside quotes, between CR and LF), when parsed piece by piece, then the rows equal parsing it whole', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(cell, { minLength: 1, maxLength: 4 }), { maxLength: 8 }),
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1 }),
        fc.constantFrom('\n', '\r\n'),
        (rows, cuts, eol) => {
          const text = rows.map((row) => row.map(quote).join(',')).join(eol);
          const parser = new CsvRows();
          const parsed: string[][] = [];
          let at = 0;
          for (let i = 0; at < text.length; i++) {
            const size = cuts[i % cuts.length]!;
            parsed.push(...parser.push(text.slice(at, at + size)));
            at += size;
          }
          parsed.push(...parser.end());
          expect(parsed).toEqual(parseCsv(text));
        },
      ),
    );
  });
});

describe('repeats of a key list read in passes', () => {
  it('given 50,000 keys with every tenth repeated later, when surveyed and passed over twice, then each pass keeps exactly the first occurrence of each key', () => {
    const keys = Array.from({ length: 50_000 }, (_, i) => `key-${i}`);
    for (let i = 0; i < 50_000; i += 10) keys.push(`key-${i}`);
    const repeats = new RepeatFinder();
    for (const key of keys) repeats.survey(key);
    repeats.surveyed();
    for (let pass = 0; pass < 2; pass++) {
      repeats.startPass();
      const kept = keys.filter((key) => repeats.isFirst(key));
      expect(kept).toEqual(keys.slice(0, 50_000));
    }
  });
});

import { describe, expect, it } from 'vitest';
import type { Destination, SeedRow } from '../../src/destinations/destination.js';
import { LoadWriter } from '../../src/load/load-writer.js';
import { TableShaper } from '../../src/normalize/table-shaper.js';
import { manifestsSync } from '../../src/manifest/load-manifests.js';
import { Mutex } from '../../src/util/mutex.js';
import { destinationKinds, profileRecord, useBackend } from '../helpers/destinations.js';

const shaper = TableShaper.of(manifestsSync().get('profiles')!.table, {
  options: { write_mode: 'merge' },
  run: { id: 'run_1', started_at: '2026-11-26T00:00:00.000Z' },
});

/** The shaped profiles of page `page` (`size` records), as a batch stream's page gives them to its writer. */
function page(page: number, size: number) {
  const records = Array.from({ length: size }, (_, i) => ({
    ...profileRecord(page * 1000 + i),
    url: `https://network.example/in/p${page}-${i}`,
  }));
  return shaper.shape({ seed: `page-${page}` }, records);
}

function seedOf(page: number): SeedRow {
  return {
    stream: 'profiles',
    seedKey: `page-${page}`,
    seed: `page-${page}`,
    status: 'fetched',
    canonicalUrl: null,
    jobId: `job-${page}`,
    credits: 1,
    fetchedAt: null,
    error: null,
  };
}

/** Counts the units begun on `dest` (the real ones: it only counts). */
function countUnits(dest: Destination): { begun: number } {
  const counter = { begun: 0 };
  const begin = dest.beginUnit.bind(dest);
  dest.beginUnit = (runId: string) => {
    counter.begun++;
    return begin(runId);
  };
  return counter;
}

/** Takes the write lock and holds it until the function it resolves to is called, as a unit of another stream would. */
function holdLock(lock: Mutex): Promise<() => void> {
  return new Promise((held) => void lock.run(() => new Promise<void>((release) => held(release))));
}

async function rowsOf(dest: Destination, table: string): Promise<number> {
  const [row] = await dest.query<{ n: number | bigint }>(`select count(*) as n from ${dest.schema}.${table}`);
  return Number(row!.n);
}

/**
 * A stream's writer on `dest`, its table made by a first page of `first` records (so later pages
 * are shaped before their turn, as in a sync), and the count of units begun after that.
 */
async function writerOn(dest: Destination, first = 1) {
  const lock = new Mutex();
  const writer = new LoadWriter(dest, 'run_1', 'profiles', lock);
  await writer.inUnit([page(0, first)], (unit) => unit.saveSeeds([seedOf(0)]));
  return { lock, writer, units: countUnits(dest) };
}

for (const kind of destinationKinds) {
  describe(`${kind}: units waiting for the destination commit together (issue 20: fewer fixed costs a page)`, () => {
    const backend = useBackend(kind);

    it('given four pages waiting while another unit holds the destination, when it is free, then they commit in one unit and each caller gets its own counts', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await backend.open();
      const { lock, writer, units } = await writerOn(dest, 5);

      const release = await holdLock(lock);
      const sizes = [3, 7, 2, 4];
      const pending = sizes.map((size, i) =>
        writer.inUnit([page(i + 1, size)], (unit) => unit.saveSeeds([seedOf(i + 1)])),
      );
      release();
      const counts = await Promise.all(pending);

      expect(units.begun).toBe(1);
      expect(counts.map((c) => c.records)).toEqual(sizes);
      expect(await rowsOf(dest, 'profiles')).toBe(5 + 3 + 7 + 2 + 4);
      expect([...(await dest.readSeeds('profiles')).keys()].sort()).toEqual([
        'page-0',
        'page-1',
        'page-2',
        'page-3',
        'page-4',
      ]);
    });

    it('given more pages waiting than a unit takes, when the destination is free, then they commit in units of at most 5,000 records', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await backend.open();
      const { lock, writer, units } = await writerOn(dest);

      const release = await holdLock(lock);
      const pending = Array.from({ length: 6 }, (_, i) =>
        writer.inUnit([page(i + 1, 2_000)], (unit) => unit.saveSeeds([seedOf(i + 1)])),
      );
      release();
      await Promise.all(pending);

      // 2,000 + 2,000 fit in 5,000 records, a third page does not: three units of two pages.
      expect(units.begun).toBe(3);
      expect(await rowsOf(dest, 'profiles')).toBe(1 + 6 * 2_000);
    });

    it('given three pages committing together and the second failing, when they run, then only its caller sees the error and the others load', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await backend.open();
      const { lock, writer, units } = await writerOn(dest);

      const release = await holdLock(lock);
      const first = writer.inUnit([page(1, 3)], (unit) => unit.saveSeeds([seedOf(1)]));
      const second = writer.inUnit([page(2, 3)], async (unit) => {
        await unit.saveSeeds([seedOf(2)]);
        throw new Error('the ledger of page 2 cannot be written');
      });
      const third = writer.inUnit([page(3, 3)], (unit) => unit.saveSeeds([seedOf(3)]));
      release();

      await expect(second).rejects.toThrow('the ledger of page 2 cannot be written');
      expect((await first).records).toBe(3);
      expect((await third).records).toBe(3);
      // The shared unit rolled back, then each ran alone.
      expect(units.begun).toBe(4);
      expect(await rowsOf(dest, 'profiles')).toBe(1 + 3 + 3);
      expect(await dest.query(`select url from ${dest.schema}.profiles where url like $1`, ['%/p2-%'])).toEqual([]);
      expect([...(await dest.readSeeds('profiles')).keys()].sort()).toEqual(['page-0', 'page-1', 'page-3']);
    });

    it('given three pages committing together and a ledger row of the second that the database refuses, when they run, then only its caller sees the error and the others load', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await backend.open();
      const { lock, writer } = await writerOn(dest);

      const release = await holdLock(lock);
      const first = writer.inUnit([page(1, 2)], (unit) => unit.saveSeeds([seedOf(1)]));
      // Refused by the key's NOT NULL when the held upserts go out, just before COMMIT.
      const second = writer.inUnit([page(2, 2)], (unit) =>
        unit.saveSeeds([{ ...seedOf(2), seedKey: null as unknown as string }]),
      );
      const third = writer.inUnit([page(3, 2)], (unit) => unit.saveSeeds([seedOf(3)]));
      release();

      await expect(second).rejects.toMatchObject({ code: 'SEEDLINE_DESTINATION_WRITE_FAILED' });
      expect((await first).records).toBe(2);
      expect((await third).records).toBe(2);
      expect(await rowsOf(dest, 'profiles')).toBe(1 + 2 + 2);
      expect([...(await dest.readSeeds('profiles')).keys()].sort()).toEqual(['page-0', 'page-1', 'page-3']);
    });

    it('given journal units waiting between pages, when the destination is free, then the journal units commit together and the pages together, never one with the other', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await backend.open();
      const { lock, writer, units } = await writerOn(dest);

      const release = await holdLock(lock);
      const pending = [
        writer.inUnit([page(1, 2)], (unit) => unit.saveSeeds([seedOf(1)])),
        writer.inUnit([], (unit) => unit.saveSeeds([seedOf(8)]), { journal: true }),
        writer.inUnit([page(2, 2)], (unit) => unit.saveSeeds([seedOf(2)])),
        writer.inUnit([], (unit) => unit.saveSeeds([seedOf(9)]), { journal: true }),
        writer.inUnit([page(3, 2)], (unit) => unit.saveSeeds([seedOf(3)])),
      ];
      release();
      await Promise.all(pending);

      // Pages 1, 2 and 3 in one unit, the two journal units in another.
      expect(units.begun).toBe(2);
      expect([...(await dest.readSeeds('profiles')).keys()].sort()).toEqual([
        'page-0',
        'page-1',
        'page-2',
        'page-3',
        'page-8',
        'page-9',
      ]);
    });

    it('given a page waiting before a journal unit, when the destination is free, then the journal unit commits first (it holds a call in flight; the page loads behind)', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await backend.open();
      const { lock, writer } = await writerOn(dest);

      const release = await holdLock(lock);
      const committed: string[] = [];
      const pending = [
        writer.inUnit([page(1, 2)], (unit) => unit.saveSeeds([seedOf(1)])).then(() => committed.push('page')),
        writer
          .inUnit([], (unit) => unit.saveSeeds([seedOf(8)]), { journal: true })
          .then(() => committed.push('journal')),
      ];
      release();
      await Promise.all(pending);

      expect(committed).toEqual(['journal', 'page']);
    });
  });
}

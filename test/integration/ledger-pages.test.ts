import { describe, expect, it } from 'vitest';
import type { BatchRow, Destination, SeedRow } from '../../src/destinations/destination.js';
import { openBatchPages, readSeedRows, readStateRows, seedLedgerPages } from '../../src/engine/books/ledger-pages.js';
import { destinationKinds, useBackend } from '../helpers/destinations.js';

const at = new Date('2026-11-01T10:00:00.000Z');

function seed(stream: string, n: number): SeedRow {
  return {
    stream,
    seedKey: `person-${String(n).padStart(5, '0')}`,
    seed: `https://x.example/in/person-${n}`,
    status: n % 3 === 0 ? 'fetched' : 'pending',
    fetchedAt: n % 3 === 0 ? at : null,
    credits: 1,
  };
}

function batch(n: number, status: BatchRow['status'], createdAt: Date): BatchRow {
  return {
    idempotencyKey: `key-${String(n).padStart(3, '0')}`,
    stream: 'profiles',
    bodyHash: 'h',
    body: '{"items":[]}',
    status,
    itemCount: 0,
    jobId: null,
    resultsCursor: null,
    createdAt,
  };
}

for (const kind of destinationKinds) {
  describe(`${kind}: ledger read in keyset pages`, () => {
    const backend = useBackend(kind);
    const open = () => backend.open();

    async function saveSeeds(dest: Destination, rows: SeedRow[]): Promise<void> {
      const unit = await dest.beginUnit('run_1');
      // Saved out of key order, in several statements, so the order read back is the reader's own.
      for (let i = 0; i < rows.length; i += 500) await unit.saveSeeds(rows.slice(i, i + 500));
      await unit.commit();
    }

    it('given 2,537 ledger rows of a stream beside another stream, when read in pages of 100, then every row comes once, keys in order, none skipped or repeated', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      const numbers = Array.from({ length: 2537 }, (_, i) => (i * 7919) % 2537);
      await saveSeeds(dest, [
        ...numbers.map((n) => seed('profiles', n)),
        ...numbers.slice(0, 300).map((n) => seed('companies', n)),
      ]);

      const pages: SeedRow[][] = [];
      for await (const page of seedLedgerPages(dest, 'profiles', 100)) pages.push(page);

      expect(pages).toHaveLength(26);
      expect(pages.every((page) => page.length <= 100)).toBe(true);
      const keys = pages.flat().map((row) => row.seedKey);
      expect(keys).toEqual(Array.from({ length: 2537 }, (_, n) => `person-${String(n).padStart(5, '0')}`));
      expect(pages.flat().every((row) => row.stream === 'profiles')).toBe(true);
      expect(pages.flat()[3]).toMatchObject({ seedKey: 'person-00003', status: 'fetched', fetchedAt: at, credits: 1 });
    });

    it("given a stream's ledger beside another stream's, when read in chunks in one read, then each of its rows comes once with its fields and times", async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      await saveSeeds(dest, [
        ...Array.from({ length: 1200 }, (_, n) => seed('profiles', n)),
        ...Array.from({ length: 50 }, (_, n) => seed("it's", n)),
      ]);
      const chunks: SeedRow[][] = [];
      for await (const chunk of dest.readSeedChunks('profiles', 500)) chunks.push(chunk);
      expect(chunks.flat()).toHaveLength(1200);
      expect(new Set(chunks.flat().map((row) => row.seedKey)).size).toBe(1200);
      expect(chunks.flat().find((row) => row.seedKey === 'person-00003')).toMatchObject({
        stream: 'profiles',
        seed: 'https://x.example/in/person-3',
        status: 'fetched',
        fetchedAt: at,
        credits: 1,
      });
      // A stream's name is a literal in the read: a quote in it neither breaks nor widens it.
      let quoted = 0;
      for await (const chunk of dest.readSeedChunks("it's", 500)) quoted += chunk.length;
      expect(quoted).toBe(50);
    });

    it('given a page size that divides the rows exactly, when read, then the last page is followed by no empty page and nothing repeats', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      await saveSeeds(
        dest,
        Array.from({ length: 300 }, (_, n) => seed('profiles', n)),
      );
      const pages: SeedRow[][] = [];
      for await (const page of seedLedgerPages(dest, 'profiles', 100)) pages.push(page);
      expect(pages.map((page) => page.length)).toEqual([100, 100, 100]);
      expect(new Set(pages.flat().map((row) => row.seedKey)).size).toBe(300);
    });

    it('given 2,500 seed keys, some without a row, when their rows are read by key a page at a time, then exactly the recorded ones come back', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      await saveSeeds(
        dest,
        Array.from({ length: 2000 }, (_, n) => seed('profiles', n)),
      );
      const keys = Array.from({ length: 2500 }, (_, n) => `person-${String(n).padStart(5, '0')}`);
      const rows = await readSeedRows(dest, 'profiles', keys, 700);
      expect(rows.size).toBe(2000);
      expect(rows.get('person-01999')?.seed).toBe('https://x.example/in/person-1999');
      expect(rows.has('person-02000')).toBe(false);
    });

    it('given the state rows of 1,500 partitions of a stream beside another stream, when 2,000 keys are read by key a page at a time, then exactly the recorded ones of that stream come back', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      const unit = await dest.beginUnit('run_1');
      const key = (n: number) => `https://x.example/company/c-${n}`;
      await unit.saveState(
        Array.from({ length: 1500 }, (_, n) => ({
          stream: 'jobs',
          partition: key(n),
          cursor: JSON.stringify({ completed_at: at.toISOString(), n }),
        })),
      );
      await unit.saveState([{ stream: 'company_posts', partition: key(1600), cursor: '{}' }]);
      await unit.commit();

      const rows = await readStateRows(
        dest,
        'jobs',
        Array.from({ length: 2000 }, (_, n) => key(n)),
        600,
      );

      expect(rows.size).toBe(1500);
      expect(JSON.parse(rows.get(key(1499))!.cursor)).toEqual({ completed_at: at.toISOString(), n: 1499 });
      expect(rows.has(key(1600))).toBe(false);
      expect((await dest.readStateByKey('jobs', [])).size).toBe(0);
    });

    it('given open and finished batches, several created at the same instant, when open batches are read in pages of 3, then each open one comes once, oldest first, ties by key', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      const later = new Date(at.getTime() + 1000);
      const rows = Array.from({ length: 12 }, (_, n) =>
        batch(n, n % 4 === 3 ? 'completed' : n % 2 === 0 ? 'intent' : 'submitted', n < 7 ? later : at),
      );
      const unit = await dest.beginUnit('run_1');
      await unit.saveBatches(rows);
      await unit.commit();

      const pages: BatchRow[][] = [];
      for await (const page of openBatchPages(dest, 'profiles', 3)) pages.push(page);

      const keys = pages.flat().map((b) => b.idempotencyKey);
      expect(keys).toEqual([
        'key-008',
        'key-009',
        'key-010',
        'key-000',
        'key-001',
        'key-002',
        'key-004',
        'key-005',
        'key-006',
      ]);
      expect(pages.every((page) => page.length <= 3)).toBe(true);
    });
  });
}

import { describe, expect, it, vi } from 'vitest';
import type { AnswerRow, BatchRow } from '../../src/destinations/destination.js';
import { SqlSystemStore } from '../../src/destinations/sql/sql-system-store.js';
import { destinationKinds, seedRow, useBackend } from '../helpers/destinations.js';

const fetchedAt = new Date('2026-11-20T08:30:15.123Z');

const seed = seedRow;

for (const kind of destinationKinds) {
  describe(`${kind}: ledger upserts`, () => {
    const backend = useBackend(kind);

    it('given 1,200 seed rows with repeated keys, then rows that change 300 of them and fail one, when saved in two units, then each key holds its last row, values and timestamps exact', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await backend.open();
      const first = Array.from({ length: 1200 }, (_, n) => seed(n % 1000, { jobId: `job-${n}` }));
      let unit = await dest.beginUnit('run_1');
      await unit.saveSeeds(first);
      await unit.commit();
      const changed = Array.from({ length: 300 }, (_, i) => i + 100).map((n) =>
        seed(n, {
          status: 'fetched',
          credits: 1.5,
          fetchedAt,
          canonicalUrl: `https://www.network.example/in/p-${n}`,
          jobId: 'job-x',
        }),
      );
      unit = await dest.beginUnit('run_2');
      await unit.saveSeeds([...changed, seed(999, { status: 'failed', error: 'not_found: gone' })]);
      await unit.commit();

      const rows = await dest.readSeedsByKey(
        'profiles',
        Array.from({ length: 1001 }, (_, n) => `person-${n}`),
      );
      expect(rows.size).toBe(1000);
      expect(rows.get('person-105')).toMatchObject({
        status: 'fetched',
        credits: 1.5,
        fetchedAt,
        canonicalUrl: 'https://www.network.example/in/p-105',
        jobId: 'job-x',
        error: null,
      });
      // Keys 0-199 were given twice in the first unit: the later row won (jobs 1000-1199); the second unit changed 100-399.
      expect(rows.get('person-50')!.jobId).toBe('job-1050');
      expect(rows.get('person-150')!.jobId).toBe('job-x');
      expect(rows.get('person-450')).toMatchObject({
        status: 'pending',
        jobId: 'job-450',
        fetchedAt: null,
        canonicalUrl: null,
      });
      expect(rows.get('person-999')).toMatchObject({ status: 'failed', error: 'not_found: gone', jobId: null });
    });

    it('given ledger rows saved in several calls of one unit (pages committed together), and an answer saved then dropped, when committed, then each key holds its last row, a batch its first created_at, and the answer is gone', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await backend.open();
      const batch = (status: BatchRow['status'], createdAt: Date): BatchRow => ({
        idempotencyKey: 'key-1',
        stream: 'profiles',
        bodyHash: 'h',
        body: '{}',
        status,
        itemCount: 2,
        jobId: status === 'intent' ? null : 'job-1',
        resultsCursor: null,
        createdAt,
      });
      const answer = (callKey: string): AnswerRow => ({
        stream: 'profiles',
        callKey,
        partition: 'p',
        call: 'profiles.enrich',
        args: '{}',
        answer: '{}',
        credits: 1,
        runId: 'run_1',
        receivedAt: fetchedAt,
      });
      const unit = await dest.beginUnit('run_1');
      await unit.saveBatches([batch('intent', new Date('2026-11-20T08:00:00.000Z'))]);
      await unit.saveSeeds([seed(1), seed(2)]);
      await unit.saveAnswers([answer('a1'), answer('a2')]);
      await unit.saveBatches([batch('submitted', new Date('2026-11-20T09:00:00.000Z'))]);
      await unit.saveSeeds([
        seed(1, { status: 'submitted', jobId: 'job-1' }),
        seed(2, { status: 'submitted', jobId: 'job-1' }),
      ]);
      await unit.dropAnswers('profiles', ['a1']);
      await unit.saveSeeds([seed(2, { status: 'fetched', jobId: 'job-1', credits: 1, fetchedAt })]);
      await unit.commit();

      const seeds = await dest.readSeedsByKey('profiles', ['person-1', 'person-2']);
      expect(seeds.get('person-1')).toMatchObject({ status: 'submitted', jobId: 'job-1' });
      expect(seeds.get('person-2')).toMatchObject({ status: 'fetched', jobId: 'job-1', credits: 1, fetchedAt });
      expect(await dest.readBatches('profiles')).toEqual([
        expect.objectContaining({
          status: 'submitted',
          jobId: 'job-1',
          createdAt: new Date('2026-11-20T08:00:00.000Z'),
        }),
      ]);
      expect([...(await dest.readAnswers('profiles')).keys()]).toEqual(['a2']);
    });

    it("given a batch's intent, when its key is saved again with another body and a new status, then the status changes and the body it was recorded with stays until the job completes", async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await backend.open();
      const intent: BatchRow = {
        idempotencyKey: 'key-1',
        stream: 'profiles',
        bodyHash: 'h1',
        body: '{"items":[1]}',
        status: 'intent',
        itemCount: 1,
        jobId: null,
        resultsCursor: null,
      };
      let unit = await dest.beginUnit('run_1');
      await unit.saveBatches([intent]);
      await unit.commit();
      unit = await dest.beginUnit('run_1');
      await unit.saveBatches([
        { ...intent, bodyHash: 'h2', body: '{"items":[2]}', itemCount: 2, status: 'submitted', jobId: 'job-1' },
      ]);
      await unit.commit();
      expect(await dest.readBatches('profiles')).toEqual([
        expect.objectContaining({
          status: 'submitted',
          jobId: 'job-1',
          bodyHash: 'h1',
          body: '{"items":[1]}',
          itemCount: 1,
        }),
      ]);

      unit = await dest.beginUnit('run_1');
      await unit.saveBatches([{ ...intent, status: 'completed', jobId: 'job-1', resultsCursor: 'c-9' }]);
      await unit.commit();
      // Never sent again: its body is emptied, its hash and item count stay.
      expect(await dest.readBatches('profiles')).toEqual([
        expect.objectContaining({ status: 'completed', bodyHash: 'h1', body: '', itemCount: 1, resultsCursor: 'c-9' }),
      ]);
    });

    it('given one writer looked seeds up before another writer of the same warehouse recorded them, when it looks again, then it finds them', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await backend.open();
      const keys = [1, 2, 3].map((n) => `person-${n}`);
      expect((await dest.readSeedsByKey('profiles', keys)).size).toBe(0);
      const other = await backend.another();
      const unit = await other.beginUnit('run_2');
      await unit.saveSeeds([seed(1), seed(3, { status: 'fetched', fetchedAt })]);
      await unit.commit();
      const rows = await dest.readSeedsByKey('profiles', keys);
      expect([...rows.keys()].sort()).toEqual(['person-1', 'person-3']);
      expect(rows.get('person-3')).toMatchObject({ status: 'fetched', fetchedAt });
    });

    it('given a ledger of 2,000 seeds, when chunks of seeds never recorded are looked up, then the answer is empty and, where a lookup scans the ledger, no lookup reads it', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await backend.open();
      const unit = await dest.beginUnit('run_1');
      await unit.saveSeeds(Array.from({ length: 2000 }, (_, n) => seed(n)));
      await unit.commit();
      const reads = vi.spyOn(SqlSystemStore.prototype as unknown as { readSystem: () => unknown }, 'readSystem');
      try {
        for (let chunk = 1; chunk <= 3; chunk++) {
          const keys = Array.from({ length: 1000 }, (_, n) => `person-${chunk * 10_000 + n}`);
          expect((await dest.readSeedsByKey('profiles', keys)).size).toBe(0);
        }
        expect(reads).toHaveBeenCalledTimes(kind === 'duckdb' ? 0 : 3);
        const mixed = await dest.readSeedsByKey('profiles', ['person-5', 'person-50000', 'person-1999']);
        expect([...mixed.keys()].sort()).toEqual(['person-1999', 'person-5']);
      } finally {
        reads.mockRestore();
      }
    });

    it('given ledger rows saved in a unit that is rolled back, when read, then none of them is there', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await backend.open();
      const unit = await dest.beginUnit('run_1');
      await unit.saveSeeds([seed(7)]);
      await unit.rollback();
      expect((await dest.readSeedsByKey('profiles', ['person-7'])).size).toBe(0);
    });
  });
}

import { describe, expect, it } from 'vitest';
import type { SeedRow } from '../../src/destinations/destination.js';
import { destinationKinds, useBackend } from '../helpers/destinations.js';

const fetchedAt = new Date('2026-11-20T08:30:15.123Z');

function seed(n: number, over: Partial<SeedRow> = {}): SeedRow {
  return { stream: 'profiles', seedKey: `person-${n}`, seed: `https://www.network.example/in/person-${n}`, status: 'pending', canonicalUrl: null, jobId: null, credits: 0, fetchedAt: null, error: null, ...over };
}

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
      const changed = Array.from({ length: 300 }, (_, i) => i + 100).map((n) => seed(n, { status: 'fetched', credits: 1.5, fetchedAt, canonicalUrl: `https://www.network.example/in/p-${n}`, jobId: 'job-x' }));
      unit = await dest.beginUnit('run_2');
      await unit.saveSeeds([...changed, seed(999, { status: 'failed', error: 'not_found: gone' })]);
      await unit.commit();

      const rows = await dest.readSeedsByKey('profiles', Array.from({ length: 1001 }, (_, n) => `person-${n}`));
      expect(rows.size).toBe(1000);
      expect(rows.get('person-105')).toMatchObject({ status: 'fetched', credits: 1.5, fetchedAt, canonicalUrl: 'https://www.network.example/in/p-105', jobId: 'job-x', error: null });
      // Keys 0-199 were given twice in the first unit: the later row won (jobs 1000-1199); the second unit changed 100-399.
      expect(rows.get('person-50')!.jobId).toBe('job-1050');
      expect(rows.get('person-150')!.jobId).toBe('job-x');
      expect(rows.get('person-450')).toMatchObject({ status: 'pending', jobId: 'job-450', fetchedAt: null, canonicalUrl: null });
      expect(rows.get('person-999')).toMatchObject({ status: 'failed', error: 'not_found: gone', jobId: null });
    });
  });
}

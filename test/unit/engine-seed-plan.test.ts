import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { SeedRow } from '../../src/destinations/destination.js';
import { byPriority, cutToFit } from '../../src/engine/books/budget.js';
import { CHANGED_FIRST_MS, planSeeds, Ranker, takes, type SeedTriage } from '../../src/engine/batch/seed-plan.js';
import type { LedgerSeed, SeedScan } from '../../src/engine/batch/seed-scan.js';

/** A scan over seeds held in a list, in chunks of 3, as SeedScan hands them out. */
function scanOf(seeds: LedgerSeed[]): SeedScan {
  return {
    async *chunks() {
      for (let i = 0; i < seeds.length; i += 3) yield seeds.slice(i, i + 3);
    },
  } as unknown as SeedScan;
}

function seedOf(n: number, fetchedDay: number | null, worst: number): LedgerSeed {
  const row = fetchedDay === null ? undefined : ({ fetchedAt: new Date(Date.UTC(2026, 0, 1 + fetchedDay)) } as SeedRow);
  return { partition: { key: `k${n}`, values: { key: `k${n}`, seed: `s${n}`, worst } }, row };
}

const triage: SeedTriage = {
  classify: ({ partition }) => (Number(partition.key.slice(1)) % 5 === 4 ? 'fresh' : 'todo'),
  worst: (p) => Number(p.values.worst),
  expected: (p) => Number(p.values.worst) / 2,
  // Refresh on change: some seeds a Trigger made due, whatever their age.
  changed: ({ partition }) => Number(partition.key.slice(1)) % 7 === 3,
};

/** Priority as the plan sees it: never-fetched first, then those a Trigger made due, then the stalest. */
const priorityTime = (s: LedgerSeed): Date | null | undefined =>
  s.row?.fetchedAt && (triage.changed!(s) ? new Date(s.row.fetchedAt.getTime() - CHANGED_FIRST_MS) : s.row.fetchedAt);

/** The keys a plan's cut takes, by a second pass as the batch runner makes it. */
async function takenBy(
  seeds: LedgerSeed[],
  available: number,
): Promise<{ taken: string[]; plan: Awaited<ReturnType<typeof planSeeds>> }> {
  const plan = await planSeeds(scanOf(seeds), triage, available);
  const ranks = new Ranker(triage.changed);
  const taken = seeds
    .filter((s) => triage.classify(s) === 'todo' && takes(plan.cut, ranks.of(s)))
    .map((s) => s.partition.key);
  return { taken, plan };
}

describe('a batch stream planned in passes', () => {
  it('given any seeds, ledger rows and budget, when planned and cut in passes, then it takes exactly the seeds cutToFit takes of the whole list in priority order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            day: fc.option(fc.integer({ min: 0, max: 6 }), { nil: null }),
            worst: fc.integer({ min: 1, max: 4 }),
          }),
          { maxLength: 40 },
        ),
        fc.integer({ min: 0, max: 60 }),
        async (specs, available) => {
          const seeds = specs.map((s, n) => seedOf(n, s.day, s.worst));
          const todo = seeds.filter((s) => triage.classify(s) === 'todo');
          const whole = cutToFit(byPriority(todo, priorityTime), (s) => triage.worst(s.partition), available);

          const { taken, plan } = await takenBy(seeds, available);

          expect(new Set(taken)).toEqual(new Set(whole.take.map((s) => s.partition.key)));
          expect(plan.cut.taken).toBe(whole.take.length);
          expect(plan.cut.deferred).toBe(whole.defer.length);
          expect(plan.cut.firstDeferredWorst).toBe(whole.defer[0] ? triage.worst(whole.defer[0].partition) : 0);
          expect(plan.todo).toBe(todo.length);
          expect(plan.skipped).toBe(seeds.length - todo.length);
          expect(plan.next).toEqual(
            byPriority(todo, priorityTime)
              .slice(0, 3)
              .map((s) => s.partition.values.seed),
          );
        },
      ),
    );
  });

  it('given stale seeds fetched on different days and a budget for two, when planned, then the two fetched longest ago are taken', async () => {
    const seeds = [seedOf(0, 3, 1), seedOf(1, 1, 1), seedOf(2, 2, 1), seedOf(3, 1, 1)];
    const { taken, plan } = await takenBy(seeds, 2);
    expect(taken).toEqual(['k1', 'k3']);
    expect(plan.cut).toMatchObject({ taken: 2, deferred: 2, firstDeferredWorst: 1 });
  });
});

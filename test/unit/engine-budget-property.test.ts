import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Budget, bindingLimit, byPriority, cutToFit, type BudgetLimits } from '../../src/engine/books/budget.js';
import { BudgetExhaustedError } from '../../src/engine/engine-errors.js';

interface Seed {
  key: string;
  /** Worst case the cost model reserves for it. */
  worst: number;
  /** What the service really bills: at most the worst case (0 for a free failure). */
  actual: number;
  /** Last fetch (index of a day), or null when never fetched. */
  fetchedDay: number | null;
}

const seedArb = (i: number) =>
  fc
    .record({
      worst: fc.integer({ min: 0, max: 9 }),
      share: fc.double({ min: 0, max: 1, noNaN: true }),
      failure: fc.constantFrom('none', 'free', 'billed'),
      fetchedDay: fc.option(fc.integer({ min: 0, max: 30 })),
    })
    .map(({ worst, share, failure, fetchedDay }): Seed => ({
      key: `seed-${i}`,
      worst,
      // A failed scrape is free on single calls and billed at its worst case on batch items (the spec's errors table).
      actual: failure === 'free' ? 0 : failure === 'billed' ? worst : Math.floor(worst * share),
      fetchedDay,
    }));

const seedsArb = fc
  .integer({ min: 0, max: 40 })
  .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => seedArb(i))));

const scenarioArb = fc.record({
  seeds: seedsArb,
  perRun: fc.option(fc.integer({ min: 0, max: 120 }), { nil: undefined }),
  perMonth: fc.option(
    fc.record({ max: fc.integer({ min: 0, max: 200 }), spentThisMonth: fc.integer({ min: 0, max: 200 }) }),
    { nil: undefined },
  ),
  balance: fc.integer({ min: 0, max: 150 }),
  keepBalance: fc.option(fc.integer({ min: 0, max: 150 }), { nil: undefined }),
  chunkSize: fc.integer({ min: 1, max: 6 }),
  inFlight: fc.integer({ min: 1, max: 4 }),
  /** Chunks that fail as a whole after sending (network): they may have billed, so they settle at their worst case. */
  chunkFailures: fc.array(fc.boolean(), { maxLength: 12 }),
  settleOrder: fc.array(fc.nat(), { maxLength: 40 }),
  /** Batch streams cut their seeds to the budget first; request streams only reserve call by call. */
  precut: fc.boolean(),
});

type Scenario = typeof scenarioArb extends fc.Arbitrary<infer T> ? T : never;

/**
 * The batch runner's spending logic, without I/O: priority order, a cut to the budget, chunks that
 * reserve their worst case before being sent (several in flight, settling in any order), settle to
 * what was billed after, and seeds of chunks that could not reserve or were cut stay pending.
 */
function simulate(s: Scenario) {
  const limits: BudgetLimits = {
    perRun: s.perRun,
    monthLeft: s.perMonth === undefined ? undefined : s.perMonth.max - s.perMonth.spentThisMonth,
    balanceLeft: s.keepBalance === undefined ? undefined : s.balance - s.keepBalance,
  };
  const budget = new Budget(limits);
  const ordered = byPriority(s.seeds, (seed) =>
    seed.fetchedDay === null ? null : new Date(seed.fetchedDay * 86_400_000),
  );
  const { take, defer } = s.precut
    ? cutToFit(ordered, (seed) => seed.worst, budget.remaining)
    : { take: ordered, defer: [] };
  const pending = new Set(defer.map((seed) => seed.key));
  const done = new Set<string>();
  let billed = 0;
  const chunks: Seed[][] = [];
  for (let i = 0; i < take.length; i += s.chunkSize) chunks.push(take.slice(i, i + s.chunkSize));
  const open: { settle: () => void }[] = [];
  let turn = 0;
  const settleOne = () => {
    const index = (s.settleOrder[turn++ % Math.max(1, s.settleOrder.length)] ?? 0) % open.length;
    open.splice(index, 1)[0]!.settle();
  };
  chunks.forEach((chunk, i) => {
    if (open.length >= s.inFlight) settleOne();
    const worst = chunk.reduce((n, seed) => n + seed.worst, 0);
    let reservation;
    try {
      reservation = budget.reserve(worst);
    } catch (error) {
      expect(error).toBeInstanceOf(BudgetExhaustedError);
      chunk.forEach((seed) => pending.add(seed.key));
      return;
    }
    const failed = s.chunkFailures[i] === true;
    const actual = failed ? worst : chunk.reduce((n, seed) => n + seed.actual, 0);
    billed += actual;
    open.push({
      settle: () => {
        reservation.settle(actual);
        chunk.forEach((seed) => (failed ? pending : done).add(seed.key));
      },
    });
  });
  while (open.length > 0) settleOne();
  return { budget, limits, ordered, take, pending, done, billed };
}

describe('budget properties', () => {
  it('given random seeds, costs, failures and budgets, when the run spends, then it never passes max_credits_per_run, the month, nor keep_balance', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const { budget, billed } = simulate(s);
        expect(budget.spent).toBe(billed);
        if (s.perRun !== undefined) expect(billed).toBeLessThanOrEqual(s.perRun);
        if (s.perMonth !== undefined)
          expect(s.perMonth.spentThisMonth + billed).toBeLessThanOrEqual(
            Math.max(s.perMonth.max, s.perMonth.spentThisMonth),
          );
        if (s.keepBalance !== undefined)
          expect(s.balance - billed).toBeGreaterThanOrEqual(Math.min(s.keepBalance, s.balance));
      }),
      { numRuns: 500 },
    );
  });

  it('given random seeds and budgets, when the run ends, then every seed is either done or still pending, and nothing unspent is lost', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const { pending, done } = simulate(s);
        for (const seed of s.seeds) expect(pending.has(seed.key) !== done.has(seed.key)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('given a budget that cannot cover everything, when cut, then never-fetched seeds come first, then the stalest, and the cut keeps that order', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const { ordered, take, limits } = simulate(s);
        const rank = (seed: Seed) => (seed.fetchedDay === null ? -1 : seed.fetchedDay);
        for (let i = 1; i < ordered.length; i++) expect(rank(ordered[i - 1]!)).toBeLessThanOrEqual(rank(ordered[i]!));
        expect(ordered.slice(0, take.length)).toEqual(take);
        if (s.precut)
          expect(take.reduce((n, seed) => n + seed.worst, 0)).toBeLessThanOrEqual(
            bindingLimit(limits)?.limit ?? Infinity,
          );
      }),
      { numRuns: 300 },
    );
  });

  it('given any limits, when the binding one is chosen, then it is the smallest set limit, floored at 0', () => {
    fc.assert(
      fc.property(
        fc.option(fc.integer({ min: -50, max: 500 }), { nil: undefined }),
        fc.option(fc.integer({ min: -50, max: 500 }), { nil: undefined }),
        fc.option(fc.integer({ min: -50, max: 500 }), { nil: undefined }),
        (perRun, monthLeft, balanceLeft) => {
          const set = [perRun, monthLeft, balanceLeft].filter((v): v is number => v !== undefined);
          const binding = bindingLimit({ perRun, monthLeft, balanceLeft });
          if (set.length === 0) expect(binding).toBeUndefined();
          else expect(binding?.limit).toBe(Math.max(0, Math.min(...set)));
        },
      ),
    );
  });
});

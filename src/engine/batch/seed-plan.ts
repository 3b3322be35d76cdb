import type { Partition } from '../../manifest/components/partitions.js';
import type { LedgerSeed, SeedScan } from './seed-scan.js';

/** What a batch stream decides about one seed before it submits anything. */
export interface SeedTriage {
  /** `todo`: needs a fetch; `fresh`: skipped (fetched recently, or failed for good recently); `in_flight`: in a recorded job. */
  classify(seed: LedgerSeed): 'todo' | 'fresh' | 'in_flight';
  /** Worst-case credits of the seed's item. */
  worst(partition: Partition): number;
  /** Expected credits of the seed's item. */
  expected(partition: Partition): number;
  /** Whether a seed needing a fetch needs it because a Trigger reported a change (refresh on change). Default: never. */
  changed?(seed: LedgerSeed): boolean;
}

/**
 * Which seeds needing a fetch the budget takes, in the order `byPriority` gives them (never
 * fetched first, in the list's order; then the stalest), as a rule a later pass applies seed by
 * seed: a never-fetched seed is taken when its rank among those is below `neverFetched`; a stale
 * one when every never-fetched seed was taken and it sorts before `staleFrom` (by last fetch,
 * then rank among stale seeds), or `staleFrom` is undefined.
 */
export interface BudgetCut {
  /** Seeds taken. */
  taken: number;
  /** Seeds left for a later run. */
  deferred: number;
  /** Worst case of the first seed left out (0 when none is), for the budget's message. */
  firstDeferredWorst: number;
  /** Never-fetched seeds taken: the first `neverFetched` of them. */
  neverFetched: number;
  /** The first stale seed left out, by (last fetch in ms, rank); undefined when none is. */
  staleFrom?: { at: number; rank: number };
}

/** A batch stream's seeds before it submits anything. */
export interface SeedPlan {
  /** Seeds needing a fetch. */
  todo: number;
  /** Seeds skipped as fresh. */
  skipped: number;
  /** Seeds needing a fetch because a Trigger reported a change (the others are due by age, or new). */
  byChange: number;
  /** Expected credits of one seed's item (the list's first); 0 for an empty list. */
  perSeed: number;
  /** Seeds active Signals watch (refresh on change); undefined: by age only. */
  watched?: number;
  /** Worst-case credits of the seeds needing a fetch (without retries). */
  worst: number;
  /** Expected credits of the seeds needing a fetch. */
  expected: number;
  /** The largest worst case of one of those seeds. */
  maxWorst: number;
  /** The first three of them in priority order (their seeds), for `plan`. */
  next: string[];
  /** What the budget takes of them. */
  cut: BudgetCut;
}

/** Where a seed stands in priority order: its tier and rank within it. */
interface Rank {
  stale: boolean;
  rank: number;
  at: number;
}

/**
 * Plans a batch stream's seeds in one pass over the scan (two when the budget cuts into seeds
 * fetched before, whose order needs their last fetch times: 16 bytes a stale seed, only then).
 * @param available credits the budget can spend on them (Infinity without a limit)
 */
export async function planSeeds(scan: SeedScan, triage: SeedTriage, available: number): Promise<SeedPlan> {
  const plan: SeedPlan = {
    todo: 0,
    skipped: 0,
    byChange: 0,
    perSeed: 0,
    worst: 0,
    expected: 0,
    maxWorst: 0,
    next: [],
    cut: { taken: 0, deferred: 0, firstDeferredWorst: 0, neverFetched: Infinity },
  };
  const ranks = new Ranker(triage.changed);
  let freshWorst = 0;
  let staleWorst = 0;
  const staleNext: { seed: string; at: number; rank: number }[] = [];
  for await (const chunk of scan.chunks()) {
    for (const seed of chunk) {
      const kind = triage.classify(seed);
      if (plan.perSeed === 0) plan.perSeed = triage.expected(seed.partition);
      if (kind === 'fresh') plan.skipped++;
      if (kind !== 'todo') continue;
      const worst = triage.worst(seed.partition);
      plan.todo++;
      if (triage.changed?.(seed)) plan.byChange++;
      plan.worst += worst;
      plan.expected += triage.expected(seed.partition);
      plan.maxWorst = Math.max(plan.maxWorst, worst);
      const rank = ranks.of(seed);
      if (rank.stale) {
        staleWorst += worst;
        keepOldest(staleNext, {
          seed: String(seed.partition.values.seed ?? seed.partition.key),
          at: rank.at,
          rank: rank.rank,
        });
        continue;
      }
      if (plan.next.length < 3) plan.next.push(String(seed.partition.values.seed ?? seed.partition.key));
      freshWorst += worst;
      if (plan.cut.neverFetched === Infinity && freshWorst > available) {
        plan.cut.neverFetched = rank.rank;
        plan.cut.firstDeferredWorst = worst;
      }
    }
  }
  plan.next.push(...staleNext.slice(0, 3 - plan.next.length).map((s) => s.seed));
  if (plan.cut.neverFetched !== Infinity) plan.cut.taken = plan.cut.neverFetched;
  else if (staleWorst <= available - freshWorst) plan.cut.taken = plan.todo;
  else await cutStale(scan, triage, available - freshWorst, plan);
  plan.cut.deferred = plan.todo - plan.cut.taken;
  return plan;
}

/** Whether the cut takes a seed needing a fetch, given its rank. */
export function takes(cut: BudgetCut, rank: Rank): boolean {
  if (!rank.stale) return rank.rank < cut.neverFetched;
  if (cut.neverFetched !== Infinity) return false;
  const from = cut.staleFrom;
  return from === undefined || rank.at < from.at || (rank.at === from.at && rank.rank < from.rank);
}

/** How much earlier than its fetch a seed a Trigger made due ranks: before every seed stale by age (3,000 years). */
export const CHANGED_FIRST_MS = 1e14;

/**
 * Ranks seeds needing a fetch in the order a pass meets them: never-fetched and stale counted
 * apart. Under a budget, never-fetched seeds go first, then those a Trigger made due (`changed`,
 * refresh on change: the service said they changed), then those stale by age, stalest first.
 */
export class Ranker {
  private fresh = 0;
  private stale = 0;

  constructor(private readonly changed?: (seed: LedgerSeed) => boolean) {}

  /** The rank of the next seed needing a fetch (call once per seed, in the list's order). */
  of(seed: LedgerSeed): Rank {
    const at = seed.row?.fetchedAt?.getTime();
    if (at === undefined) return { stale: false, rank: this.fresh++, at: -Infinity };
    return { stale: true, rank: this.stale++, at: this.changed?.(seed) ? at - CHANGED_FIRST_MS : at };
  }
}

/** Finds the first stale seed the budget leaves out, stalest first (ties in the list's order). */
async function cutStale(scan: SeedScan, triage: SeedTriage, left: number, plan: SeedPlan): Promise<void> {
  const times: number[] = [];
  const worsts: number[] = [];
  const ranks = new Ranker(triage.changed);
  for await (const chunk of scan.chunks()) {
    for (const seed of chunk) {
      if (triage.classify(seed) !== 'todo') continue;
      const rank = ranks.of(seed);
      if (!rank.stale) continue;
      times.push(rank.at);
      worsts.push(triage.worst(seed.partition));
    }
  }
  const at = Float64Array.from(times);
  const order = Uint32Array.from(times.keys()).sort((a, b) => at[a]! - at[b]! || a - b);
  let taken = 0;
  for (const i of order) {
    const worst = worsts[i]!;
    if (worst > left) {
      plan.cut.staleFrom = { at: at[i]!, rank: i };
      plan.cut.firstDeferredWorst = worst;
      break;
    }
    left -= worst;
    taken++;
  }
  // Every never-fetched seed fits (else no stale seed is taken): the cut takes them and `taken` stale ones.
  plan.cut.taken = plan.todo - order.length + taken;
}

function keepOldest(
  oldest: { seed: string; at: number; rank: number }[],
  entry: { seed: string; at: number; rank: number },
): void {
  oldest.push(entry);
  oldest.sort((a, b) => a.at - b.at || a.rank - b.rank);
  if (oldest.length > 3) oldest.pop();
}

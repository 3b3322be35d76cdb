import type { SeedlineConfig } from '../../config/config-schema.js';
import type { Destination } from '../../destinations/destination.js';
import { DEFAULT_MAX_CREDITS_PER_RUN, type BudgetLimits } from './budget.js';

/**
 * The run's credit limits: `max_credits_per_run` (a default when the config sets none, so a run
 * never spends the whole balance unasked); `max_credits_per_month` less what the runs of
 * this calendar month (UTC) spent according to `_seedline_runs`; the balance at the start less
 * `keep_balance` (an unknown balance allows nothing: the floor cannot be proven).
 */
export async function budgetLimits(
  options: { config: SeedlineConfig; destination: Destination; now?: () => Date },
  balance: number | undefined,
): Promise<BudgetLimits> {
  const { max_credits_per_run: perRun, max_credits_per_month: perMonth, keep_balance: keep } = options.config.budget;
  const limits: BudgetLimits =
    perRun === undefined ? { perRun: DEFAULT_MAX_CREDITS_PER_RUN, perRunFrom: 'default' } : { perRun };
  if (perMonth !== undefined)
    limits.monthLeft = perMonth - (await creditsThisMonth(options.destination, (options.now ?? (() => new Date()))()));
  if (keep !== undefined) limits.balanceLeft = balance === undefined ? 0 : balance - keep;
  return limits;
}

/**
 * Credits the runs recorded in `_seedline_runs` spent in `now`'s calendar month (UTC): every run
 * that started or finished in it. A run spanning the turn of the month counts whole in both, as
 * its spending cannot be split: never less than what the month cost. Each run counts what it was
 * billed and what it may have been billed (at risk), less the at-risk items of earlier runs whose
 * bills it read (and counted as billed), so a job read by a later run counts once; never less than
 * 0 a run, so an earlier run of another month (or a refund below the worst case) never lowers
 * this month's count.
 */
export async function creditsThisMonth(destination: Destination, now: Date): Promise<number> {
  const monthStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
  const inMonth = (at: Date | null | undefined) => at !== null && at !== undefined && at.getTime() >= monthStart;
  let total = 0;
  for (const run of await destination.readRuns(100_000))
    if (inMonth(run.startedAt) || inMonth(run.finishedAt))
      total += Math.max(0, (run.creditsUsed ?? 0) + (run.creditsAtRisk ?? 0) - (run.creditsSettledEarlier ?? 0));
  return total;
}

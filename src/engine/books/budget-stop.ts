import { BudgetExhaustedError, InsufficientBalanceError } from '../engine-errors.js';
import { errorType } from '../service-calls.js';
import { noteError, type StreamContext, type StreamOutcome } from '../stream-context.js';

/** An error that stops a stream like a spent budget: a reservation that did not fit, or the service's 402. */
export type BudgetStop = BudgetExhaustedError | InsufficientBalanceError;

/**
 * The budget stop `error` amounts to, if any. A 402 `insufficient_credits` exhausts the run's
 * budget (no further call is sent) and is reported with the balance GET /v1/account (free) shows.
 */
export async function budgetStopOf(error: unknown, ctx: StreamContext): Promise<BudgetStop | undefined> {
  if (error instanceof BudgetExhaustedError || error instanceof InsufficientBalanceError) return error;
  if (errorType(error) !== 'insufficient_credits') return undefined;
  ctx.budget.exhaust((error as Error).message);
  const balance = await ctx.client
    .getAccount()
    .then((answer) => (answer.data as { credits_remaining?: number }).credits_remaining)
    .catch(() => undefined);
  ctx.budget.noteBalance(balance);
  return new InsufficientBalanceError(balance, (error as Error).message);
}

/** Marks a stream stopped by its budget: `partial`, `budget_exhausted`, the message noted and reported once. */
export function stopForBudget(ctx: StreamContext, outcome: StreamOutcome, stop: BudgetStop): void {
  outcome.status = outcome.status === 'failed' ? 'failed' : 'partial';
  if (outcome.stopped) return;
  outcome.stopped = 'budget_exhausted';
  noteError(outcome, stop.message);
  ctx.reporter.notice(outcome.stream, stop.message);
}

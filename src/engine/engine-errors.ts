/** The run's credit budget cannot cover the next call: the stream stops, nothing is spent past it. */
export class BudgetExhaustedError extends Error {
  readonly code = 'SEEDLINE_BUDGET_EXHAUSTED';
  /** Stop reason recorded in the run summary and `_seedline_runs`. */
  readonly reason = 'budget_exhausted';
  /**
   * @param needed worst case of the call that did not fit
   * @param remaining credits left under the binding limit
   * @param limit the config key of that limit
   * @param left seeds or partitions left pending because of it, when known
   */
  constructor(needed: number, remaining: number, limit: string = 'budget.max_credits_per_run', left?: number) {
    const remedy =
      limit === 'budget.keep_balance'
        ? 'Lower budget.keep_balance or top up the account'
        : `Raise ${limit} or run again later`;
    super(
      `the run's credit budget is exhausted: the next call needs up to ${needed} credits and ${remaining} remain under ${limit}; ${pendingText(left)}. ${remedy}; work already loaded is kept.`,
    );
    this.name = 'BudgetExhaustedError';
  }
}

export { StreamDefinitionError } from '../manifest/manifest-error.js';

/** `--streams` names a stream that does not exist or is not configured: a usage error (exit 2). */
export class UnknownStreamError extends Error {
  readonly code = 'SEEDLINE_UNKNOWN_STREAM';
}

/** The service answered 402 `insufficient_credits`: the stream (and every paid call after it in the run) stops like a spent budget. */
export class InsufficientBalanceError extends Error {
  readonly code = 'SEEDLINE_INSUFFICIENT_CREDITS';
  /** Stop reason recorded in the run summary and `_seedline_runs`. */
  readonly reason = 'budget_exhausted';
  /**
   * @param balance `credits_remaining` of GET /v1/account after the refusal, when it could be read
   * @param detail what the service said
   * @param left seeds or partitions left pending because of it, when known
   */
  constructor(balance: number | undefined, detail: string, left?: number) {
    super(
      `the service refused a call for lack of credits (402 insufficient_credits: ${detail}); ` +
        `the account balance is ${balance === undefined ? 'unknown' : `${balance} credits`} (GET /v1/account); ${pendingText(left)}. ` +
        'Top up the account: budget settings cannot make the service accept a call it refused.',
    );
    this.name = 'InsufficientBalanceError';
  }
}

/** The run was asked to stop (SIGTERM): the page under way committed, nothing further starts. */
export class RunStoppedError extends Error {
  readonly code = 'SEEDLINE_RUN_STOPPED';
  constructor() {
    super('stopped on request after committing the page under way; the next run resumes from there');
    this.name = 'RunStoppedError';
  }
}

function pendingText(left: number | undefined): string {
  return left === undefined
    ? 'the remaining seeds stay pending for a later run'
    : `${left} seeds stay pending for a later run`;
}

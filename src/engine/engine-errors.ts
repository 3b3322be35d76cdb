/** The run's credit budget cannot cover the next call: the stream stops, nothing is spent past it. */
export class BudgetExhaustedError extends Error {
  readonly code = 'SEEDLINE_BUDGET_EXHAUSTED';
  constructor(needed: number, remaining: number) {
    super(
      `the run's credit budget is exhausted: the next call needs up to ${needed} credits and ${remaining} remain. ` +
        'Raise budget.max_credits_per_run or run again later; work already loaded is kept.',
    );
    this.name = 'BudgetExhaustedError';
  }
}

/** A stream whose manifest or options cannot run as written. */
export class StreamDefinitionError extends Error {
  readonly code = 'SEEDLINE_STREAM_INVALID';
}

/** The run was asked to stop (SIGTERM): the page under way committed, nothing further starts. */
export class RunStoppedError extends Error {
  readonly code = 'SEEDLINE_RUN_STOPPED';
  constructor() {
    super('stopped on request after committing the page under way; the next run resumes from there');
    this.name = 'RunStoppedError';
  }
}

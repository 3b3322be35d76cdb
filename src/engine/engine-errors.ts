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

/** Connection-level failures: the server went away (Postgres SQLSTATE classes 08 and 57P, a socket closed or refused). */
const LOST_CODES = /^(08|57P0[123]$)|^(ECONNREFUSED|ECONNRESET|EPIPE|ENOTCONN|ETIMEDOUT)$/;

/**
 * Whether `error` (or what caused it) says the destination itself went away: the server was
 * stopped or crashed, its connections were dropped. A run that goes on then would buy answers it
 * cannot journal: it stops instead, and is never recorded `succeeded`.
 */
export function isDestinationLost(error: unknown): boolean {
  for (let at: unknown = error, depth = 0; at && depth < 6; at = (at as { cause?: unknown }).cause, depth++) {
    const { code, message } = at as { code?: unknown; message?: unknown };
    if (code === 'SEEDLINE_DESTINATION_UNAVAILABLE' || code === 'SEEDLINE_DESTINATION_LOST') return true;
    if (typeof code === 'string' && LOST_CODES.test(code)) return true;
    if (
      typeof message === 'string' &&
      /Connection terminated|terminating connection|server closed the connection/i.test(message)
    )
      return true;
  }
  return false;
}

/** The destination went away mid-run: the run stops (see {@link isDestinationLost}). */
export class DestinationLostError extends Error {
  readonly code = 'SEEDLINE_DESTINATION_LOST';
  constructor(cause: unknown) {
    super(
      `the destination went away mid-run (${(cause as Error).message}): the run stops so that no answer is bought that could not be saved. ` +
        'Bring the database back and run again: what was loaded is kept, and the rest is fetched then.',
      { cause },
    );
    this.name = 'DestinationLostError';
  }
}

/**
 * A paged stream has batch rounds open that another of the fleet's API keys asked (`seedline
 * worker` with several keys): paid for by that account, readable by that key only. The stream asks
 * no page until they are read, since one could be theirs, bought again.
 */
export class RoundsOfAnotherKeyError extends Error {
  readonly code = 'SEEDLINE_ROUNDS_OF_ANOTHER_KEY';
  constructor(stream: string, rounds: readonly { keyId?: string | null | undefined }[]) {
    const keys = [...new Set(rounds.map((r) => r.keyId ?? 'the primary key'))].join(', ');
    super(
      `stream "${stream}" has ${rounds.length} batch round(s) open under ${keys}, paid for by that account: ` +
        'its pages wait until a worker reads them with that key (restore the key, or add it back to api.keys); no other page is asked meanwhile',
    );
    this.name = 'RoundsOfAnotherKeyError';
  }
}

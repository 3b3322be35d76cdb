import { sleep } from '../util/sleep.js';
import {
  AnswerOverdueError,
  AnswerTooLargeError,
  NetworkError,
  RateLimitedError,
  SeedlineClientError,
  ServiceError,
  UnexpectedResponseError,
  waitsTooLong,
} from './errors.js';
import type { RateLimiter } from './rate-limiter.js';

/**
 * Our own retry loop (undici's retry interceptor treats `Retry-After` as a ceiling and skips POST).
 * Retried: 429, 500, 502/`upstream_error`, 504 and transient network errors, with exponential
 * backoff and full jitter; `Retry-After` is a floor. Every attempt passes through the rate limiter.
 *
 * @example
 * ```ts
 * const data = await withRetry((attempt) => send(attempt), { policy: { maxAttempts: 3 }, limiter });
 * ```
 */
export interface RetryPolicy {
  /** Attempts in all, the first included. Default 6. */
  maxAttempts: number;
  /** Backoff base: the cap of the first retry's jitter range, doubled per retry. Default 500 ms. */
  baseDelayMs: number;
  /** Cap of the exponential range (before the `Retry-After` floor). Default 30 000 ms. */
  maxDelayMs: number;
  /** Cap on the total time spent waiting between attempts of one call. Default 300 000 ms (5 min). */
  maxTotalWaitMs: number;
  /** Source of randomness in [0, 1) for the jitter; inject a fixed one in tests. Default `Math.random`. */
  random: () => number;
}

/** Defaults of {@link RetryPolicy}. */
export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 6,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  maxTotalWaitMs: 300_000,
  random: Math.random,
});

/** Fills a partial policy with the defaults. */
export function resolveRetryPolicy(policy: Partial<RetryPolicy> = {}): RetryPolicy {
  const merged = { ...DEFAULT_RETRY_POLICY };
  for (const [key, value] of Object.entries(policy) as [keyof RetryPolicy, never][]) {
    if (value !== undefined) merged[key] = value;
  }
  if (!(merged.maxAttempts >= 1)) throw new RangeError('retry.maxAttempts must be at least 1');
  return merged;
}

/**
 * Parses `Retry-After` (delta seconds, possibly fractional, or an HTTP date) into milliseconds from
 * `nowMs`. Undefined when absent or unparseable; a date in the past gives 0.
 */
export function parseRetryAfter(
  value: string | readonly string[] | undefined,
  nowMs: number = Date.now(),
): number | undefined {
  const raw = (Array.isArray(value) ? value[0] : value) as string | undefined;
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (text === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  // An HTTP date always names its day and month; bare signed numbers are not dates.
  if (!/[A-Za-z]/.test(text)) return undefined;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}

/** Whether an error may be retried: our classified errors say so themselves; anything else is not retried. */
export function isRetryable(error: unknown): boolean {
  if (error instanceof ServiceError && error.type === 'upstream_error') return true;
  return error instanceof SeedlineClientError && error.retryable;
}

/**
 * Whether a billed call sent without an Idempotency-Key may be repeated without risking a second
 * charge: only when the service answered with an error it never bills and calls safe to retry
 * (429, 500, 502 `upstream_error`, 504, in its own envelope), a 429 from anything in between (a
 * request refused, not processed), or when no connection was made. A
 * reset or timeout after the request went out, a proxy's error page, an answer cut off at the size
 * cap or the deadline ({@link AnswerTooLargeError}, {@link AnswerOverdueError}) or a call stopped on
 * request may follow a call the service processed and billed: it is thrown, and the caller counts
 * it at its worst case.
 */
export function isRetryableUnbilled(error: unknown): boolean {
  if (error instanceof NetworkError) return error.retryable && !error.maybeProcessed;
  if (error instanceof AnswerTooLargeError || error instanceof AnswerOverdueError) return false;
  return isRateLimit(error) || (error instanceof ServiceError && isRetryable(error));
}

/** Whether an error is a 429 answer (enveloped or not). */
export function isRateLimit(error: unknown): boolean {
  return (
    error instanceof RateLimitedError ||
    (error instanceof ServiceError && error.status === 429) ||
    (error instanceof UnexpectedResponseError && error.status === 429)
  );
}

/** `Retry-After` of an error, when the service sent one. */
export function retryAfterOf(error: unknown): number | undefined {
  return error instanceof ServiceError || error instanceof UnexpectedResponseError ? error.retryAfterMs : undefined;
}

/**
 * Full-jitter backoff before retry number `retry` (1 for the first retry): uniform in
 * [0, min(maxDelayMs, baseDelayMs × 2^(retry−1))], raised to `retryAfterMs` when that is larger.
 */
export function backoffDelay(retry: number, policy: RetryPolicy, retryAfterMs?: number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  const jitter = Math.floor(policy.random() * ceiling);
  return Math.max(jitter, retryAfterMs ?? 0);
}

/** Why the loop stopped retrying. */
export type GiveUpReason = 'not-retryable' | 'max-attempts' | 'max-wait';

/** The decision after a failed attempt. */
export type RetryDecision = { retry: true; delayMs: number } | { retry: false; reason: GiveUpReason };

/**
 * Pure decision after attempt number `attempt` (1-based) failed with `error`, having already waited
 * `waitedMs` between earlier attempts. The delay is clipped to what is left of `maxTotalWaitMs`,
 * but never below `Retry-After`: if the floor does not fit, the loop gives up.
 */
export function decideRetry(input: {
  error: unknown;
  attempt: number;
  waitedMs: number;
  policy: RetryPolicy;
  retryable?: (error: unknown) => boolean;
}): RetryDecision {
  const { error, attempt, waitedMs, policy } = input;
  if (!(input.retryable ?? isRetryable)(error)) return { retry: false, reason: 'not-retryable' };
  if (attempt >= policy.maxAttempts) return { retry: false, reason: 'max-attempts' };
  const remaining = policy.maxTotalWaitMs - waitedMs;
  const floor = retryAfterOf(error) ?? 0;
  if (floor > remaining || remaining <= 0) return { retry: false, reason: 'max-wait' };
  const delayMs = Math.min(backoffDelay(attempt, policy, floor), remaining);
  return { retry: true, delayMs };
}

/** Hooks of {@link withRetry}. */
export interface RetryOptions {
  /** The policy. Default {@link DEFAULT_RETRY_POLICY}. */
  policy?: Partial<RetryPolicy>;
  /** Each attempt runs inside `limiter.schedule`; a 429 also pauses it. Default: none. */
  limiter?: RateLimiter;
  /** Called before each wait. Default: none. */
  onRetry?: (info: { attempt: number; delayMs: number; error: unknown }) => void;
  /** Sleeps between attempts. Default: `util/sleep` (a `setTimeout` promise: fake timers apply). */
  sleep?: (ms: number) => Promise<void>;
  /** Which errors are retried. Default: {@link isRetryable}. */
  retryable?: (error: unknown) => boolean;
  /** Ends a wait (between attempts, or in the limiter's queue) at once; the loop then throws `signal.reason`. Default: none. */
  signal?: AbortSignal;
}

/**
 * Runs `attempt(n)` (n from 1) until it succeeds, fails with a non-retryable error, or a cap is
 * reached; then the last error is thrown unchanged.
 */
export async function withRetry<T>(attempt: (n: number) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const policy = resolveRetryPolicy(options.policy);
  const wait = options.sleep ?? ((ms: number) => sleep(ms, options.signal));
  let waitedMs = 0;
  for (let n = 1; ; n++) {
    try {
      return options.limiter ? await options.limiter.schedule(() => attempt(n), options.signal) : await attempt(n);
    } catch (error) {
      const decision = decideRetry({
        error,
        attempt: n,
        waitedMs,
        policy,
        ...(options.retryable ? { retryable: options.retryable } : {}),
      });
      const retryAfter = retryAfterOf(error);
      // The whole account is over its limit: hold every queued request, not only this one; a wait
      // past MAX_RETRY_AFTER_MS holds nothing: this call fails, and so will the others, at once.
      if (isRateLimit(error) && options.limiter && !waitsTooLong(retryAfter))
        options.limiter.recordRateLimited(retryAfter ?? policy.baseDelayMs);
      if (!decision.retry) throw error;
      options.onRetry?.({ attempt: n, delayMs: decision.delayMs, error });
      waitedMs += decision.delayMs;
      await wait(decision.delayMs);
      options.signal?.throwIfAborted();
    }
  }
}

import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  InsufficientCreditsError,
  InternalServiceError,
  InvalidRequestError,
  NetworkError,
  NotFoundError,
  RateLimitedError,
  UnexpectedResponseError,
  UnprocessableTargetError,
  UpstreamError,
  UpstreamTimeoutError,
  ServiceError,
} from '../../src/client/errors.js';
import {
  backoffDelay,
  decideRetry,
  DEFAULT_RETRY_POLICY,
  isRetryable,
  isRetryableUnbilled,
  parseRetryAfter,
  resolveRetryPolicy,
  withRetry,
} from '../../src/client/retry.js';
import { RateLimiter } from '../../src/client/rate-limiter.js';

const init = (status: number, type: string, retryAfterMs?: number) => ({
  status,
  type,
  serviceMessage: 'x',
  requestId: 'req_1',
  retryAfterMs,
});

describe('retry decisions', () => {
  it.each([
    ['429 rate_limited', new RateLimitedError(init(429, 'rate_limited'))],
    ['500 internal_error', new InternalServiceError(init(500, 'internal_error'))],
    ['502 upstream_error', new UpstreamError(init(502, 'upstream_error'))],
    ['504 upstream_timeout', new UpstreamTimeoutError(init(504, 'upstream_timeout'))],
    ['upstream_error with an unusual status', new ServiceError(init(503, 'upstream_error'))],
    ['ECONNRESET', new NetworkError({ origin: 'http://h', causeCode: 'ECONNRESET' })],
    ['a headers timeout', new NetworkError({ origin: 'http://h', causeCode: 'UND_ERR_HEADERS_TIMEOUT' })],
    ['a closed socket', new NetworkError({ origin: 'http://h', causeCode: 'UND_ERR_SOCKET' })],
    ['an HTML 502', new UnexpectedResponseError({ status: 502, bodySnippet: '<html>', reason: 'a non-JSON body' })],
  ])('given %s, when deciding, then the call is retried', (_name, error) => {
    expect(isRetryable(error)).toBe(true);
    const decision = decideRetry({ error, attempt: 1, waitedMs: 0, policy: resolveRetryPolicy({ random: () => 0.5 }) });
    expect(decision.retry).toBe(true);
  });

  it.each([
    ['400', new InvalidRequestError(init(400, 'invalid_request'))],
    ['402', new InsufficientCreditsError(init(402, 'insufficient_credits'))],
    ['404', new NotFoundError(init(404, 'not_found'))],
    ['422', new UnprocessableTargetError(init(422, 'unprocessable_target'))],
    ['an unknown 4xx type', new ServiceError(init(418, 'teapot'))],
    [
      'a 2xx body cut short',
      new UnexpectedResponseError({ status: 200, bodySnippet: '{"da', reason: 'a body cut short' }),
    ],
    ['a plain Error', new Error('boom')],
  ])('given %s, when deciding, then the call is not retried', (_name, error) => {
    const decision = decideRetry({ error, attempt: 1, waitedMs: 0, policy: resolveRetryPolicy() });
    expect(decision).toEqual({ retry: false, reason: 'not-retryable' });
  });

  it.each([
    ['429 rate_limited', new RateLimitedError(init(429, 'rate_limited')), true],
    ['500 internal_error', new InternalServiceError(init(500, 'internal_error')), true],
    ['502 upstream_error', new UpstreamError(init(502, 'upstream_error')), true],
    ['504 upstream_timeout', new UpstreamTimeoutError(init(504, 'upstream_timeout')), true],
    ['a refused connection', new NetworkError({ origin: 'http://h', causeCode: 'ECONNREFUSED' }), true],
    ['a connect timeout', new NetworkError({ origin: 'http://h', causeCode: 'UND_ERR_CONNECT_TIMEOUT' }), true],
    ['ECONNRESET', new NetworkError({ origin: 'http://h', causeCode: 'ECONNRESET' }), false],
    ['a headers timeout', new NetworkError({ origin: 'http://h', causeCode: 'UND_ERR_HEADERS_TIMEOUT' }), false],
    ['a closed socket', new NetworkError({ origin: 'http://h', causeCode: 'UND_ERR_SOCKET' }), false],
    [
      'an HTML 502',
      new UnexpectedResponseError({ status: 502, bodySnippet: '<html>', reason: 'a non-JSON body' }),
      false,
    ],
    [
      'an HTML 429 from a proxy',
      new UnexpectedResponseError({ status: 429, bodySnippet: '<html>', reason: 'a non-JSON body' }),
      true,
    ],
    ['422', new UnprocessableTargetError(init(422, 'unprocessable_target')), false],
  ])(
    'given %s on a billed call without an Idempotency-Key, when deciding, then it is repeated only if it cannot have been billed (%s)',
    (_name, error, repeated) => {
      expect(isRetryableUnbilled(error)).toBe(repeated);
      const decision = decideRetry({
        error,
        attempt: 1,
        waitedMs: 0,
        policy: resolveRetryPolicy(),
        retryable: isRetryableUnbilled,
      });
      expect(decision.retry).toBe(repeated);
    },
  );

  it('given the attempt cap is reached, when deciding, then the loop gives up with max-attempts', () => {
    const error = new InternalServiceError(init(500, 'internal_error'));
    const policy = resolveRetryPolicy();
    expect(policy.maxAttempts).toBe(6);
    expect(decideRetry({ error, attempt: 5, waitedMs: 0, policy }).retry).toBe(true);
    expect(decideRetry({ error, attempt: 6, waitedMs: 0, policy })).toEqual({ retry: false, reason: 'max-attempts' });
  });

  it('given the total wait budget is spent, when deciding, then the loop gives up with max-wait', () => {
    const error = new InternalServiceError(init(500, 'internal_error'));
    const policy = resolveRetryPolicy();
    expect(policy.maxTotalWaitMs).toBe(300_000);
    expect(decideRetry({ error, attempt: 2, waitedMs: 300_000, policy })).toEqual({ retry: false, reason: 'max-wait' });
  });

  it('given a Retry-After longer than the remaining budget, when deciding, then the loop gives up rather than retry early', () => {
    const error = new RateLimitedError(init(429, 'rate_limited', 120_000));
    const policy = resolveRetryPolicy({ maxTotalWaitMs: 100_000 });
    expect(decideRetry({ error, attempt: 1, waitedMs: 0, policy })).toEqual({ retry: false, reason: 'max-wait' });
  });

  it('given some budget is left, when the jittered delay would overrun it, then the delay is clipped to the budget', () => {
    const error = new InternalServiceError(init(500, 'internal_error'));
    const policy = resolveRetryPolicy({
      random: () => 0.999,
      baseDelayMs: 10_000,
      maxDelayMs: 60_000,
      maxTotalWaitMs: 12_000,
    });
    expect(decideRetry({ error, attempt: 3, waitedMs: 10_000, policy })).toEqual({ retry: true, delayMs: 2_000 });
  });
});

describe('backoff bounds', () => {
  it('given random 0 and random just below 1, when computing each retry, then the delay spans [0, min(cap, base·2^(n−1))]', () => {
    const low = resolveRetryPolicy({ random: () => 0 });
    const high = resolveRetryPolicy({ random: () => 0.999_999 });
    for (let retry = 1; retry <= 12; retry++) {
      const ceiling = Math.min(DEFAULT_RETRY_POLICY.maxDelayMs, DEFAULT_RETRY_POLICY.baseDelayMs * 2 ** (retry - 1));
      expect(backoffDelay(retry, low)).toBe(0);
      expect(backoffDelay(retry, high)).toBeLessThanOrEqual(ceiling);
      expect(backoffDelay(retry, high)).toBeGreaterThanOrEqual(ceiling - 1);
    }
  });

  it('given many random draws, when computing delays, then none leaves its bound (full jitter)', () => {
    let seed = 42;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const policy = resolveRetryPolicy({ random, baseDelayMs: 100, maxDelayMs: 5_000 });
    for (let i = 0; i < 1_000; i++) {
      const retry = (i % 10) + 1;
      const delay = backoffDelay(retry, policy);
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThanOrEqual(Math.min(5_000, 100 * 2 ** (retry - 1)));
    }
  });

  it('given a Retry-After above the jitter, when computing the delay, then Retry-After is the floor', () => {
    const policy = resolveRetryPolicy({ random: () => 0.5, baseDelayMs: 100 });
    expect(backoffDelay(1, policy, 7_000)).toBe(7_000);
    expect(backoffDelay(1, policy, 10)).toBe(50);
    const error = new RateLimitedError(init(429, 'rate_limited', 7_000));
    expect(decideRetry({ error, attempt: 1, waitedMs: 0, policy })).toEqual({ retry: true, delayMs: 7_000 });
  });
});

describe('Retry-After parsing', () => {
  const now = Date.parse('2026-03-01T12:00:00Z');
  it('given delta seconds, when parsed, then milliseconds are returned', () => {
    expect(parseRetryAfter('3', now)).toBe(3_000);
    expect(parseRetryAfter('1.5', now)).toBe(1_500);
    expect(parseRetryAfter(['2'], now)).toBe(2_000);
  });
  it('given an HTTP date, when parsed, then the distance from now is returned (0 when past)', () => {
    expect(parseRetryAfter('Sun, 01 Mar 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sun, 01 Mar 2026 11:00:00 GMT', now)).toBe(0);
  });
  it('given nothing usable, when parsed, then undefined is returned', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-3', now)).toBeUndefined();
  });
});

describe('withRetry with fake timers', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('given a 429 with Retry-After 5 s then success, when run, then the second attempt starts no earlier than 5 s later', async () => {
    vi.useFakeTimers();
    const starts: number[] = [];
    const limiter = new RateLimiter();
    const promise = withRetry(
      async (n) => {
        starts.push(Date.now());
        if (n === 1) throw new RateLimitedError(init(429, 'rate_limited', 5_000));
        return 'ok';
      },
      { policy: { random: () => 0 }, limiter },
    );
    await vi.advanceTimersByTimeAsync(4_999);
    expect(starts).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    await expect(promise).resolves.toBe('ok');
    expect(starts).toHaveLength(2);
    expect((starts[1] ?? 0) - (starts[0] ?? 0)).toBeGreaterThanOrEqual(5_000);
    expect(limiter.stats.rateLimited).toBe(1);
    expect(limiter.stats.requests).toBe(2);
  });

  it('given a call that always fails with 500, when run, then it stops after maxAttempts and throws the last error', async () => {
    vi.useFakeTimers();
    let attempts = 0;
    const promise = withRetry(
      async () => {
        attempts++;
        throw new InternalServiceError(init(500, 'internal_error'));
      },
      { policy: { random: () => 1 - Number.EPSILON } },
    );
    const settled = expect(promise).rejects.toBeInstanceOf(InternalServiceError);
    await vi.runAllTimersAsync();
    await settled;
    expect(attempts).toBe(6);
  });

  it('given a 400, when run, then it is tried exactly once', async () => {
    let attempts = 0;
    await expect(
      withRetry(async () => {
        attempts++;
        throw new InvalidRequestError(init(400, 'invalid_request'));
      }),
    ).rejects.toBeInstanceOf(InvalidRequestError);
    expect(attempts).toBe(1);
  });

  it('given an injected sleep, when retrying, then the waits it receives are the decided delays', async () => {
    const waits: number[] = [];
    let n = 0;
    const result = await withRetry(
      async () => {
        if (++n < 3) throw new UpstreamTimeoutError(init(504, 'upstream_timeout'));
        return n;
      },
      { policy: { random: () => 0.5, baseDelayMs: 1_000 }, sleep: async (ms) => void waits.push(ms) },
    );
    expect(result).toBe(3);
    expect(waits).toEqual([500, 1_000]);
  });
});

import { afterEach, describe, expect, it, vi } from 'vitest';
import { InternalServiceError } from '../../src/client/errors.js';
import { RateLimiter } from '../../src/client/rate-limiter.js';
import { withRetry } from '../../src/client/retry.js';

/** Largest number of starts inside any half-open window [t, t + interval). */
function maxInAnyWindow(starts: readonly number[], interval: number): number {
  const sorted = [...starts].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while ((sorted[i] ?? 0) - (sorted[j] ?? 0) >= interval) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

describe('RateLimiter sliding window', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('given 5 per minute and 23 calls, when all run, then no 60 s window holds more than 5 starts', async () => {
    vi.useFakeTimers();
    const limiter = new RateLimiter({ requestsPerMinute: 5 });
    const starts: number[] = [];
    const all = Promise.all(
      Array.from({ length: 23 }, () => limiter.schedule(async () => void starts.push(Date.now()))),
    );
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    await all;
    expect(starts).toHaveLength(23);
    expect(maxInAnyWindow(starts, 60_000)).toBe(5);
    expect(limiter.stats.requests).toBe(23);
  });

  it('given retries of failing calls, when they run through the limiter, then retries count against the same window', async () => {
    vi.useFakeTimers();
    const limiter = new RateLimiter({ requestsPerMinute: 4 });
    const starts: number[] = [];
    const calls = Array.from({ length: 6 }, () => {
      let attempts = 0;
      return withRetry(
        async () => {
          starts.push(Date.now());
          if (++attempts < 3) throw new InternalServiceError({ status: 500, type: 'internal_error' });
          return attempts;
        },
        { limiter, policy: { random: () => 0, maxTotalWaitMs: 3_600_000 } },
      );
    });
    const all = Promise.all(calls);
    await vi.advanceTimersByTimeAsync(30 * 60_000);
    await expect(all).resolves.toEqual([3, 3, 3, 3, 3, 3]);
    expect(starts).toHaveLength(18);
    expect(maxInAnyWindow(starts, 60_000)).toBeLessThanOrEqual(4);
    expect(limiter.stats.requests).toBe(18);
  });

  it('given a scaled interval, when calls burst, then the window is enforced at that scale', async () => {
    vi.useFakeTimers();
    const limiter = new RateLimiter({ requestsPerMinute: 3, intervalMs: 100 });
    const starts: number[] = [];
    const all = Promise.all(
      Array.from({ length: 10 }, () => limiter.schedule(async () => void starts.push(Date.now()))),
    );
    await vi.advanceTimersByTimeAsync(1_000);
    await all;
    expect(maxInAnyWindow(starts, 100)).toBe(3);
  });

  it('given calls already made, when the limit is lowered, then the new limit still counts them', async () => {
    vi.useFakeTimers();
    const limiter = new RateLimiter();
    const starts: number[] = [];
    await Promise.all(Array.from({ length: 3 }, () => limiter.schedule(async () => void starts.push(Date.now()))));
    limiter.configure({ requestsPerMinute: 4, concurrentBatchJobs: 2 });
    expect(limiter.requestsPerMinute).toBe(4);
    expect(limiter.concurrentBatchJobs).toBe(2);
    const later = Promise.all(
      Array.from({ length: 5 }, () => limiter.schedule(async () => void starts.push(Date.now()))),
    );
    await vi.advanceTimersByTimeAsync(5 * 60_000);
    await later;
    expect(starts).toHaveLength(8);
    expect(maxInAnyWindow(starts, 60_000)).toBeLessThanOrEqual(4);
  });

  it('given tasks queued under the old limit, when reconfigured, then they still run, under the new limit', async () => {
    vi.useFakeTimers();
    const limiter = new RateLimiter({ requestsPerMinute: 1 });
    const starts: number[] = [];
    const all = Promise.all(
      Array.from({ length: 4 }, () => limiter.schedule(async () => void starts.push(Date.now()))),
    );
    await vi.advanceTimersByTimeAsync(0);
    limiter.configure({ requestsPerMinute: 2 });
    await vi.advanceTimersByTimeAsync(5 * 60_000);
    await all;
    expect(starts).toHaveLength(4);
    expect(maxInAnyWindow(starts, 60_000)).toBeLessThanOrEqual(2);
  });
});

describe('RateLimiter pause and batch limit', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('given a 429 with Retry-After 10 s, when recorded, then nothing starts until 10 s have passed', async () => {
    vi.useFakeTimers();
    const limiter = new RateLimiter();
    limiter.recordRateLimited(10_000);
    expect(limiter.isPaused).toBe(true);
    let started = false;
    const task = limiter.schedule(async () => {
      started = true;
    });
    await vi.advanceTimersByTimeAsync(9_999);
    expect(started).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await task;
    expect(started).toBe(true);
    expect(limiter.stats).toMatchObject({ rateLimited: 1, pauses: 1, requests: 1 });
  });

  it('given overlapping pauses, when a shorter one arrives, then the longer pause is kept', async () => {
    vi.useFakeTimers();
    const limiter = new RateLimiter();
    limiter.pauseFor(10_000);
    limiter.pauseFor(2_000);
    let started = false;
    const task = limiter.schedule(async () => {
      started = true;
    });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(started).toBe(false);
    await vi.advanceTimersByTimeAsync(5_000);
    await task;
    expect(started).toBe(true);
  });

  it('given concurrentBatchJobs 2, when 5 submissions run, then at most 2 are in flight at once', async () => {
    const limiter = new RateLimiter({ concurrentBatchJobs: 2 });
    let inFlight = 0;
    let peak = 0;
    const release: Array<() => void> = [];
    const submissions = Array.from({ length: 5 }, () =>
      limiter.scheduleBatchSubmission(async () => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        await new Promise<void>((resolve) => release.push(resolve));
        inFlight--;
      }),
    );
    for (let i = 0; i < 5; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      release.shift()?.();
    }
    await Promise.all(submissions);
    expect(peak).toBe(2);
    expect(limiter.stats.batchSubmissions).toBe(5);
  });

  it('given a limit below 1, when configured, then it is refused', () => {
    expect(() => new RateLimiter({ requestsPerMinute: 0 })).toThrow(RangeError);
    expect(() => new RateLimiter().configure({ concurrentBatchJobs: 0 })).toThrow(RangeError);
  });
});

import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import {
  AnswerOverdueError,
  AnswerTooLargeError,
  CallAbortedError,
  decideRetry,
  DEFAULT_RETRY_POLICY,
  isRateLimit,
  isRetryable,
  isRetryableUnbilled,
} from '../../src/client/index.js';
import { creditsOf, errorType } from '../../src/engine/service-calls.js';

const tooLarge = () =>
  new AnswerTooLargeError({
    operation: 'searchPeople',
    status: 200,
    maxBytes: 64 * 1024 * 1024,
    receivedBytes: 67_174_400,
    declared: false,
  });
const overdue = () => new AnswerOverdueError({ operation: 'profileActivity', deadlineMs: 120_000, receivedBytes: 17 });
const aborted = (maybeProcessed: boolean) => new CallAbortedError({ operation: 'enrichProfile', maybeProcessed });

describe('bounded-answer errors', () => {
  it('given an over-size and an overdue answer, when their messages are read, then they say what happened and which setting to raise', () => {
    expect(tooLarge().message).toMatch(
      /^The answer to searchPeople passed 67174400 bytes, more than api\.max_answer_bytes \(64 MiB\), so it was cut off\. Raise api\.max_answer_bytes/,
    );
    expect(overdue().message).toMatch(
      /^The answer to profileActivity did not arrive within api\.call_deadline \(120s\): 17 bytes of the body had arrived\. Raise api\.call_deadline/,
    );
    expect(aborted(false).message).toContain('its request was never sent');
    expect([tooLarge().code, overdue().code, aborted(true).code]).toEqual([
      'SEEDLINE_ANSWER_TOO_LARGE',
      'SEEDLINE_ANSWER_OVERDUE',
      'SEEDLINE_CALL_ABORTED',
    ]);
  });

  it('given over-size and overdue answers, when the retry rules judge them, then calls safe to repeat retry them and a billed call without a key does not', () => {
    for (const error of [tooLarge(), overdue()]) {
      expect(isRetryable(error)).toBe(true);
      expect(isRetryableUnbilled(error)).toBe(false);
      expect(isRateLimit(error)).toBe(false);
      expect(
        decideRetry({ error, attempt: 1, waitedMs: 0, policy: DEFAULT_RETRY_POLICY, retryable: isRetryableUnbilled }),
      ).toEqual({ retry: false, reason: 'not-retryable' });
      expect(
        decideRetry({ error, attempt: 1, waitedMs: 0, policy: { ...DEFAULT_RETRY_POLICY, random: () => 0 } }),
      ).toEqual({ retry: true, delayMs: 0 });
    }
  });

  it('given an aborted call, when the retry rules judge it, then nothing retries it', () => {
    for (const error of [aborted(true), aborted(false)]) {
      expect(isRetryable(error)).toBe(false);
      expect(isRetryableUnbilled(error)).toBe(false);
    }
  });

  it('given a billed call that failed over-size, overdue or aborted, when the engine counts its credits, then it counts at its worst case', () => {
    for (const error of [tooLarge(), overdue(), aborted(true)]) {
      expect(errorType(error)).toBeUndefined();
      expect(creditsOf(8, { error })).toBe(8);
    }
  });

  it('given a cap or deadline that is not positive, when a client is made, then it is refused', () => {
    const make = (options: { maxAnswerBytes?: number; callDeadlineMs?: number }) => () =>
      new ApiClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'k', ...options });
    expect(make({ maxAnswerBytes: 0 })).toThrow(/maxAnswerBytes must be above 0/);
    expect(make({ callDeadlineMs: -1 })).toThrow(/callDeadlineMs must be above 0/);
    expect(make({ callDeadlineMs: 2 ** 31 })).toThrow(/callDeadlineMs must be above 0 and at most 2147483647/);
  });
});

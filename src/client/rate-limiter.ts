import PQueue from 'p-queue';

/** Options of {@link RateLimiter}. */
export interface RateLimiterOptions {
  /** Requests allowed in any sliding window of `intervalMs`. Default `Infinity` (unlimited until {@link RateLimiter.configure}; `ApiClient.connect` configures it from GET /v1/account). */
  requestsPerMinute?: number;
  /** Batch submissions allowed at once. Default 1. */
  concurrentBatchJobs?: number;
  /** Length of the sliding window. Default 60 000 ms (tests may scale it down). */
  intervalMs?: number;
  /** Requests in flight at once. Default `Infinity`. */
  concurrency?: number;
  /** A window shared with other processes on the same key (workers); each attempt also takes a start in it. Default: none. */
  shared?: SharedWindow;
}

/**
 * A sliding window of request starts that several processes calling with one API key share
 * (`seedline worker`: kept in Postgres), so together they never exceed the key's rate.
 */
export interface SharedWindow {
  /** Resolves once a start is taken in the window of `limit` starts per `windowMs`; rejects with `signal.reason` when it aborts first. */
  take(limit: number, windowMs: number, signal?: AbortSignal): Promise<void>;
}

/** Counters for benchmarks and run summaries. */
export interface RateLimiterStats {
  /** Attempts that passed the limiter (retries included). */
  requests: number;
  /** 429 answers seen. */
  rateLimited: number;
  /** Times the queue was paused (429 or {@link RateLimiter.pauseFor}). */
  pauses: number;
  /** Batch submissions that passed the batch limit. */
  batchSubmissions: number;
}

/**
 * Client-side rate limiter on p-queue: a true sliding window (`strict: true`, no window of
 * `intervalMs` ever starts more than `requestsPerMinute` attempts), a separate concurrency limit
 * for batch submissions, and a pause of the whole queue on 429 until `Retry-After` passes.
 *
 * @example
 * ```ts
 * const limiter = new RateLimiter();
 * limiter.configure({ requestsPerMinute: 120, concurrentBatchJobs: 2 });
 * const answer = await limiter.schedule(() => fetchSomething());
 * ```
 */
export class RateLimiter {
  #queue: PQueue;
  readonly #batchQueue: PQueue;
  readonly #intervalMs: number;
  readonly #concurrency: number;
  #requestsPerMinute: number;
  readonly #shared: SharedWindow | undefined;
  #pausedUntil = 0;
  #pauseTimer: ReturnType<typeof setTimeout> | undefined;
  // Start times of recent attempts, so a reconfigured queue can inherit the current window.
  #recentStarts: number[] = [];
  readonly #stats: RateLimiterStats = { requests: 0, rateLimited: 0, pauses: 0, batchSubmissions: 0 };

  constructor(options: RateLimiterOptions = {}) {
    this.#intervalMs = options.intervalMs ?? 60_000;
    this.#concurrency = options.concurrency ?? Number.POSITIVE_INFINITY;
    this.#shared = options.shared;
    this.#requestsPerMinute = validLimit(options.requestsPerMinute ?? Number.POSITIVE_INFINITY, 'requestsPerMinute');
    this.#queue = this.#makeQueue(this.#requestsPerMinute, true);
    this.#batchQueue = new PQueue({ concurrency: validLimit(options.concurrentBatchJobs ?? 1, 'concurrentBatchJobs') });
  }

  /** Requests allowed per window (`Infinity` when unlimited). */
  get requestsPerMinute(): number {
    return this.#requestsPerMinute;
  }

  /** Batch submissions allowed at once. */
  get concurrentBatchJobs(): number {
    return this.#batchQueue.concurrency;
  }

  /** Length of the sliding window in milliseconds. */
  get intervalMs(): number {
    return this.#intervalMs;
  }

  /** A copy of the counters. */
  get stats(): RateLimiterStats {
    return { ...this.#stats };
  }

  /** Whether the queue is paused after a 429. */
  get isPaused(): boolean {
    return this.#pausedUntil > Date.now();
  }

  /** Attempts waiting for the window or a pause. */
  get waiting(): number {
    return this.#queue.size;
  }

  /**
   * Applies new limits (typically from GET /v1/account `rate_limit`). Attempts already started
   * in the current window still count against the new limit; queued ones move to the new queue.
   */
  configure(limits: { requestsPerMinute?: number; concurrentBatchJobs?: number }): void {
    if (limits.concurrentBatchJobs !== undefined) {
      this.#batchQueue.concurrency = validLimit(limits.concurrentBatchJobs, 'concurrentBatchJobs');
    }
    if (limits.requestsPerMinute === undefined || limits.requestsPerMinute === this.#requestsPerMinute) return;
    this.#requestsPerMinute = validLimit(limits.requestsPerMinute, 'requestsPerMinute');
    const old = this.#queue;
    const next = this.#makeQueue(this.#requestsPerMinute, !this.isPaused);
    if (Number.isFinite(this.#requestsPerMinute)) {
      // p-queue cannot change intervalCap in place. The new queue learns of the attempts of the
      // current window through placeholders that start now, which over-counts (they really
      // started earlier) and so never lets a window exceed the limit.
      const recent = this.#pruneRecent(Date.now());
      for (let i = 0; i < Math.min(recent, this.#requestsPerMinute); i++) void next.add(async () => undefined);
    }
    this.#queue = next;
    // Tasks still waiting in the old queue forward themselves to the new one when they start.
    old.start();
  }

  /**
   * Runs one attempt when the window (and any pause) allows it. Every HTTP attempt goes through here.
   * `signal` drops an attempt still waiting (the promise rejects with `signal.reason`); one already
   * started handles the signal itself. Default: none.
   */
  schedule<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const queue = this.#queue;
    const wait = whileQueued(signal);
    return queue.add(async () => {
      wait.started();
      if (queue !== this.#queue) return this.schedule(fn, signal);
      if (this.#shared && Number.isFinite(this.#requestsPerMinute))
        await this.#shared.take(this.#requestsPerMinute, this.#intervalMs, signal);
      const now = Date.now();
      this.#stats.requests++;
      this.#recentStarts.push(now);
      if (this.#recentStarts.length > 1024) this.#pruneRecent(now);
      return fn();
    }, wait.options) as Promise<T>;
  }

  /**
   * Runs a batch submission (its whole retry loop) under the `concurrentBatchJobs` limit; each of
   * its attempts must still go through {@link schedule}. `signal` drops a submission still waiting
   * for a slot, as in {@link schedule}. Default: none.
   */
  scheduleBatchSubmission<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const wait = whileQueued(signal);
    return this.#batchQueue.add(async () => {
      wait.started();
      this.#stats.batchSubmissions++;
      return fn();
    }, wait.options) as Promise<T>;
  }

  /** Pauses the whole queue for `ms` (extended, never shortened, by overlapping pauses). */
  pauseFor(ms: number): void {
    if (!(ms > 0)) return;
    const until = Date.now() + ms;
    if (until <= this.#pausedUntil) return;
    this.#pausedUntil = until;
    this.#stats.pauses++;
    this.#queue.pause();
    if (this.#pauseTimer) clearTimeout(this.#pauseTimer);
    this.#pauseTimer = setTimeout(() => {
      this.#pauseTimer = undefined;
      this.#pausedUntil = 0;
      this.#queue.start();
    }, ms);
  }

  /** Counts a 429 and pauses the queue for its `Retry-After` (or the given fallback). */
  recordRateLimited(retryAfterMs?: number): void {
    this.#stats.rateLimited++;
    if (retryAfterMs !== undefined) this.pauseFor(retryAfterMs);
  }

  /** Resolves when no attempt is queued or running. */
  async onIdle(): Promise<void> {
    await Promise.all([this.#queue.onIdle(), this.#batchQueue.onIdle()]);
  }

  /** Cancels the pause timer so a process can exit; queued attempts stay queued. */
  close(): void {
    if (this.#pauseTimer) clearTimeout(this.#pauseTimer);
    this.#pauseTimer = undefined;
  }

  #makeQueue(cap: number, autoStart: boolean): PQueue {
    if (!Number.isFinite(cap)) return new PQueue({ concurrency: this.#concurrency, autoStart });
    return new PQueue({
      concurrency: this.#concurrency,
      interval: this.#intervalMs,
      intervalCap: cap,
      strict: true,
      autoStart,
    });
  }

  #pruneRecent(now: number): number {
    const cutoff = now - this.#intervalMs;
    let first = 0;
    while (first < this.#recentStarts.length && (this.#recentStarts[first] ?? 0) <= cutoff) first++;
    if (first > 0) this.#recentStarts = this.#recentStarts.slice(first);
    return this.#recentStarts.length;
  }
}

/**
 * p-queue options that drop a task from its queue when `signal` aborts before the task starts.
 * p-queue would also reject a started task at once, leaving its request to finish unseen; the
 * task's own handling of the signal says more (whether the request went out).
 */
function whileQueued(signal: AbortSignal | undefined): { options: { signal?: AbortSignal }; started: () => void } {
  if (!signal) return { options: {}, started: () => undefined };
  const queued = new AbortController();
  const drop = () => queued.abort(signal.reason);
  if (signal.aborted) drop();
  else signal.addEventListener('abort', drop, { once: true });
  return { options: { signal: queued.signal }, started: () => signal.removeEventListener('abort', drop) };
}

function validLimit(value: number, name: string): number {
  if (!(value >= 1)) throw new RangeError(`${name} must be at least 1, got ${value}`);
  return value === Number.POSITIVE_INFINITY ? value : Math.floor(value);
}

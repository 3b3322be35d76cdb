/** Outcome of counting one request. */
export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds when the oldest counted request leaves the window. */
  resetAt: number;
  /** Seconds to wait when refused. */
  retryAfter: number;
}

const BUCKETS = 60;

interface Window {
  counts: Int32Array;
  seconds: Float64Array;
}

/** Per-key sliding 60-second window of real time, in one-second buckets so each check is O(60) and allocation-free. */
export class RateLimiter {
  private readonly windows = new Map<string, Window>();

  constructor(private readonly limit: number) {}

  /** Counts one request of `key` (refused requests are not counted); `count` false only reports the window. */
  hit(key: string, nowMs = Date.now(), count = true): RateDecision {
    const second = Math.floor(nowMs / 1000);
    let window = this.windows.get(key);
    if (!window) {
      window = { counts: new Int32Array(BUCKETS), seconds: new Float64Array(BUCKETS).fill(-1) };
      this.windows.set(key, window);
    }
    let used = 0;
    let oldest = second;
    for (let i = 0; i < BUCKETS; i++) {
      const at = window.seconds[i] as number;
      if (at > second - BUCKETS && (window.counts[i] as number) > 0) {
        used += window.counts[i] as number;
        if (at < oldest) oldest = at;
      }
    }
    const resetAt = oldest + BUCKETS;
    if (!count)
      return { allowed: true, limit: this.limit, remaining: Math.max(0, this.limit - used), resetAt, retryAfter: 0 };
    if (used >= this.limit)
      return { allowed: false, limit: this.limit, remaining: 0, resetAt, retryAfter: Math.max(1, resetAt - second) };
    const slot = second % BUCKETS;
    if (window.seconds[slot] !== second) {
      window.seconds[slot] = second;
      window.counts[slot] = 0;
    }
    window.counts[slot] = (window.counts[slot] as number) + 1;
    return { allowed: true, limit: this.limit, remaining: this.limit - used - 1, resetAt, retryAfter: 0 };
  }
}

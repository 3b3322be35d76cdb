import { SandboxError } from './errors.js';
import { mulberry32 } from './fixtures/random.js';
import { resolveFaults } from './options.js';
import type { FaultRates } from './options.js';

/** Which faults a draw may produce: every kind, or server-side ones only (batch items cannot be rate limited). */
export type FaultScope = 'request' | 'item';

/** Seeded fault injection: the same seed and request order give the same faults. */
export class FaultInjector {
  private rates: Required<FaultRates>;
  private readonly random: () => number;

  constructor(seed: number, rates: FaultRates) {
    this.rates = resolveFaults(rates);
    this.random = mulberry32(seed ^ 0x5eed);
  }

  /** Replaces the rates. */
  set(rates: FaultRates): void {
    this.rates = resolveFaults(rates);
  }

  /** The current rates. */
  get(): Required<FaultRates> {
    return { ...this.rates };
  }

  /** A fault to answer with, or null. Draws nothing when every rate is 0, so enabling faults later stays replayable. */
  draw(scope: FaultScope): SandboxError | null {
    const r = this.rates;
    if (r['429'] + r['500'] + r['504'] + r.upstream_error === 0) return null;
    let x = this.random();
    if (scope === 'request') {
      if (x < r['429']) return new SandboxError('rate_limited', 'injected fault: rate limited', 1);
      x -= r['429'];
    }
    if (x < r['500']) return new SandboxError('internal_error', 'injected fault: internal error');
    x -= r['500'];
    if (x < r['504'])
      return new SandboxError('upstream_timeout', 'injected fault: the live scrape did not finish in time');
    x -= r['504'];
    if (x < r.upstream_error) return new SandboxError('upstream_error', 'injected fault: upstream scrape failure');
    return null;
  }
}

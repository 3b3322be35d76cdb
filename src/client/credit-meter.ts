import type { Meta } from '../../schemas/index.js';

/** Credits seen for one operation. */
export interface OperationCredits {
  /** Successful calls recorded. */
  calls: number;
  /** Calls whose `meta.billed` was true. */
  billedCalls: number;
  /** Sum of `meta.creditsUsed` over billed calls. */
  creditsUsed: number;
  /** Sum of `meta.creditsUsed` over unbilled calls (what `svc_test_` keys would have cost). */
  unbilledCredits: number;
}

/**
 * Sums what the service says it charged: `meta.creditsUsed` of every answer whose `meta.billed`
 * is true, keeps the last `meta.creditsRemaining`, and counts per operation.
 *
 * @example
 * ```ts
 * const meter = new CreditMeter();
 * meter.record('enrichProfile', { creditsUsed: 1, billed: true, creditsRemaining: 99 });
 * meter.creditsUsed; // 1
 * ```
 */
export class CreditMeter {
  #creditsUsed = 0;
  #unbilledCredits = 0;
  #creditsRemaining: number | undefined;
  #byOperation = new Map<string, OperationCredits>();

  /** Credits billed so far (sum of `creditsUsed` where `billed` is true). Starts at 0. */
  get creditsUsed(): number {
    return this.#creditsUsed;
  }

  /** Credits reported but not billed (test keys, free calls). Starts at 0. */
  get unbilledCredits(): number {
    return this.#unbilledCredits;
  }

  /** The last `creditsRemaining` the service reported; undefined until one arrives. */
  get creditsRemaining(): number | undefined {
    return this.#creditsRemaining;
  }

  /** Records the `meta` of one successful answer to `operation` (e.g. `enrichProfile`). */
  record(operation: string, meta: Meta): void {
    const entry = this.#byOperation.get(operation) ?? { calls: 0, billedCalls: 0, creditsUsed: 0, unbilledCredits: 0 };
    entry.calls++;
    const used = meta.creditsUsed ?? 0;
    if (meta.billed === true) {
      entry.billedCalls++;
      entry.creditsUsed += used;
      this.#creditsUsed += used;
    } else {
      entry.unbilledCredits += used;
      this.#unbilledCredits += used;
    }
    if (meta.creditsRemaining !== undefined) this.#creditsRemaining = meta.creditsRemaining;
    this.#byOperation.set(operation, entry);
  }

  /** Notes a balance read elsewhere (e.g. GET /v1/account `credits_remaining`). */
  observeBalance(creditsRemaining: number): void {
    this.#creditsRemaining = creditsRemaining;
  }

  /** A copy of the per-operation counters. */
  byOperation(): Record<string, OperationCredits> {
    return Object.fromEntries([...this.#byOperation].map(([key, value]) => [key, { ...value }]));
  }

  /** Clears every counter (the balance included). */
  reset(): void {
    this.#creditsUsed = 0;
    this.#unbilledCredits = 0;
    this.#creditsRemaining = undefined;
    this.#byOperation.clear();
  }
}

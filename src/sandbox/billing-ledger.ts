/** One billing event of the sandbox. */
export interface LedgerEntry {
  /** Account id (`acct_…`, derived from the key; never the key itself). */
  account: string;
  /** Operation name, e.g. `profiles.enrich`, `search.people`, `signal.check`. */
  operation: string;
  /** Canonical target URL, resolved search URL, or Signal id. */
  target: string;
  /** Credits (negative for a refund of an unused reservation). */
  credits: number;
  /** True when the balance was charged (live keys); false for `svc_test_*` keys. */
  billed: boolean;
  /** Batch job id when the charge belongs to a batch item. */
  jobId?: string;
  /** Batch item ref when the charge belongs to a batch item. */
  ref?: string;
  /** Request id of the call that caused the charge (a batch item carries its submission's). */
  requestId: string;
  /** Virtual time of the charge, ISO 8601. */
  at: string;
}

/** Every credit charged (or, for test keys, that would have been charged), in order. */
export class BillingLedger {
  private readonly list: LedgerEntry[] = [];

  /** The entries, oldest first. */
  get entries(): readonly LedgerEntry[] {
    return this.list;
  }

  /** Appends an entry. */
  record(entry: LedgerEntry): void {
    this.list.push(entry);
  }

  /** Sum of credits actually billed (refunds included). */
  totalBilled(): number {
    let total = 0;
    for (const entry of this.list) if (entry.billed) total += entry.credits;
    return total;
  }

  /** How many charges (positive entries, billed or not) were made for `operation` on `target`. */
  countFor(operation: string, target: string): number {
    let count = 0;
    for (const entry of this.list)
      if (entry.operation === operation && entry.target === target && entry.credits > 0) count++;
    return count;
  }
}

import type { SandboxAccount } from './accounts.js';
import type { BillingLedger } from './billing-ledger.js';
import type { VirtualClock } from './virtual-clock.js';

/** What a charge is for. */
export interface ChargeContext {
  operation: string;
  target: string;
  requestId: string;
  jobId?: string;
  ref?: string;
}

/** Charges, reservations and refunds against an account, each written to the ledger. */
export class Billing {
  constructor(
    private readonly ledger: BillingLedger,
    private readonly clock: VirtualClock,
  ) {}

  /** Whether the account can pay `credits` now (test accounts always can). */
  canAfford(account: SandboxAccount, credits: number): boolean {
    return !account.live || account.balance >= credits;
  }

  /** Charges `credits` (negative refunds) and records it; a zero charge records nothing. */
  charge(account: SandboxAccount, credits: number, context: ChargeContext): void {
    if (credits === 0) return;
    if (account.live) {
      account.balance -= credits;
      account.usedThisMonth += credits;
    }
    this.ledger.record({
      account: account.id,
      ...context,
      credits,
      billed: account.live,
      at: this.clock.now().toISOString(),
    });
  }

  /** Holds `credits` of the balance for a reservation (not a charge). */
  hold(account: SandboxAccount, credits: number): void {
    if (account.live) account.balance -= credits;
  }

  /** Releases a held reservation. */
  release(account: SandboxAccount, credits: number): void {
    if (account.live) account.balance += credits;
  }

  /** The billing fields of `meta` for a call that cost `credits`. */
  meta(account: SandboxAccount, credits: number): { creditsUsed: number; creditsRemaining: number; billed: boolean } {
    return { creditsUsed: credits, creditsRemaining: account.balance, billed: account.live && credits > 0 };
  }
}

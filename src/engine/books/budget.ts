import { BudgetExhaustedError, InsufficientBalanceError } from '../engine-errors.js';

/**
 * Credits a run may spend when the config sets no `budget.max_credits_per_run`: small enough that
 * a config written in haste cannot spend a balance, large enough for the demo as shipped.
 */
export const DEFAULT_MAX_CREDITS_PER_RUN = 1000;

/** The budget settings of a run (the config's `budget` block, resolved against the account and past runs). */
export interface BudgetLimits {
  /** `budget.max_credits_per_run`, or {@link DEFAULT_MAX_CREDITS_PER_RUN} when the config sets none. */
  perRun?: number;
  /** Where `perRun` came from: the config's key, or the default. Default: `config`. */
  perRunFrom?: 'config' | 'default';
  /** `budget.max_credits_per_month` less what runs of this calendar month (UTC) already spent. Default: no limit. */
  monthLeft?: number;
  /** `credits_remaining` (GET /v1/account) less `budget.keep_balance`. Default: no limit. */
  balanceLeft?: number;
}

/** Which limit binds, named as the config key a user would change. */
export type LimitName = 'budget.max_credits_per_run' | 'budget.max_credits_per_month' | 'budget.keep_balance';

/** The tightest of the limits (never negative), and the config key that sets it; `undefined` when none is set. */
export function bindingLimit(limits: BudgetLimits): { limit: number; name: LimitName } | undefined {
  const named: [number | undefined, LimitName][] = [
    [limits.perRun, 'budget.max_credits_per_run'],
    [limits.monthLeft, 'budget.max_credits_per_month'],
    [limits.balanceLeft, 'budget.keep_balance'],
  ];
  let best: { limit: number; name: LimitName } | undefined;
  for (const [value, name] of named) {
    if (value === undefined) continue;
    const limit = Math.max(0, Math.floor(value));
    if (!best || limit < best.limit) best = { limit, name };
  }
  return best;
}

/**
 * The run's credit budget. Every call reserves its worst-case cost before it is made and settles
 * the actual cost after, so concurrent calls can never together spend past the limit.
 */
export class Budget {
  private reserved = 0;
  private billedCredits = 0;
  private atRiskCredits = 0;
  /** Credits billed for jobs earlier runs submitted, read by this run (not this run's spending). */
  private earlierBilled = 0;
  /** Worst case of those items, which the earlier runs counted at risk. */
  private earlierSettled = 0;
  private ceiling: number | undefined;
  /** Set by a 402: the service refused a call, so no paid call is sent again this run, whatever settles later. */
  private refusal: { detail: string; balance?: number } | undefined;
  /** The config key of the limit that binds (for messages). */
  readonly limitName: LimitName;

  /**
   * @param limits a number (credits the run may spend), the run's {@link BudgetLimits}, or `undefined` for no limit.
   * @param onChange told the run's {@link books} after every reservation and settlement (to keep the run's record current). Default: none.
   */
  constructor(
    limits: number | BudgetLimits | undefined,
    private readonly onChange: (books: Books) => void = () => {},
  ) {
    const binding = bindingLimit(typeof limits === 'number' ? { perRun: limits } : (limits ?? {}));
    this.ceiling = binding?.limit;
    this.limitName = binding?.name ?? 'budget.max_credits_per_run';
  }

  /** Credits the run may spend in all; `undefined` means no limit. */
  get limit(): number | undefined {
    return this.ceiling;
  }

  /** Credits spent so far (settled): billed, and at risk. */
  get spent(): number {
    return this.billedCredits + this.atRiskCredits;
  }

  /** Credits spent plus those reserved by calls in flight (which may have billed already): what a run killed now may have cost. */
  get committed(): number {
    return this.spent + this.reserved;
  }

  /** The run's books now: what the service said it billed, and what it may have billed besides (calls in flight included). */
  get books(): Books {
    return {
      billed: this.billedCredits + this.earlierBilled,
      earlierBilled: this.earlierBilled,
      atRisk: this.atRiskCredits + this.reserved,
      settledForEarlier: this.earlierSettled,
    };
  }

  /**
   * Books results of a job an earlier run submitted: `billed` as the service reports it, and the
   * `worst` case that run counted at risk for those items, now settled. Spends nothing of this
   * run's limits: the earlier run paid for them.
   */
  bookEarlier(billed: number, worst: number): void {
    this.earlierBilled += billed;
    this.earlierSettled += worst;
    this.onChange(this.books);
  }

  /** Credits still available for new reservations (`Infinity` without a limit; 0 once the service answered 402). */
  get remaining(): number {
    if (this.refusal) return 0;
    return this.ceiling === undefined ? Infinity : this.ceiling - this.spent - this.reserved;
  }

  /** Whether a stop was forced by the service (402) rather than by a configured limit. */
  get refusedByService(): boolean {
    return this.refusal !== undefined;
  }

  /**
   * The error a stop for lack of `needed` credits is reported with (`left`: units left pending,
   * when known; `held`: credits already promised elsewhere, not available either).
   */
  stopError(needed: number, left?: number, held = 0): BudgetExhaustedError | InsufficientBalanceError {
    if (this.refusal) return new InsufficientBalanceError(this.refusal.balance, this.refusal.detail, left);
    return new BudgetExhaustedError(needed, Math.max(0, this.remaining - held), this.limitName, left);
  }

  /**
   * Reserves `credits`, or throws `BudgetExhaustedError` when they would pass the limit. After a
   * 402 every paid reservation is refused; free calls (0 credits) still go.
   */
  reserve(credits: number): Reservation {
    if (credits > this.remaining) throw this.stopError(credits);
    this.reserved += credits;
    this.onChange(this.books);
    let held = credits;
    return {
      part: (worst: number, billed: number) => {
        if (held < 0) return;
        const released = Math.min(held, worst);
        held -= released;
        this.reserved -= released;
        this.billedCredits += billed;
        this.onChange(this.books);
      },
      settle: (billed: number, atRisk = 0) => {
        if (held < 0) return;
        this.reserved -= held;
        held = -1;
        this.billedCredits += billed;
        this.atRiskCredits += atRisk;
        this.onChange(this.books);
      },
      get held() {
        return Math.max(0, held);
      },
    };
  }

  /**
   * Stops every further paid reservation for the rest of the run (the service answered 402: the
   * balance cannot cover more). Sticky: a reservation settling below its worst case later frees
   * nothing. `detail` is what the service said; the balance is noted by {@link noteBalance} once read.
   */
  exhaust(detail: string): void {
    this.refusal ??= { detail };
  }

  /** The balance GET /v1/account showed after the 402, for later stop messages. */
  noteBalance(balance: number | undefined): void {
    if (this.refusal && balance !== undefined) this.refusal.balance = balance;
  }
}

/** A reservation of the budget; settle it once with the credits actually used. */
export interface Reservation {
  /**
   * Releases the reservation and counts as spent the credits the service said it `billed`, and
   * those it may have billed without saying so (`atRisk`, default 0); later calls do nothing.
   */
  settle(billed: number, atRisk?: number): void;
  /** Settles part of it: releases `worst` credits of the reservation and counts `billed` as spent (a batch job's results, as they are read). */
  part(worst: number, billed: number): void;
  /** Credits still reserved (0 once settled). */
  readonly held: number;
}

/** A run's credits as the books show them. */
export interface Books {
  /** Credits the service said it billed (`meta.creditsUsed`, batch `credits_used`). */
  billed: number;
  /** The part of `billed` read from jobs earlier runs submitted (billed then, not during this run). */
  earlierBilled: number;
  /** Credits it may have billed without saying so (lost answers, calls in flight), at their worst case. */
  atRisk: number;
  /** Worst case of items of earlier runs' jobs this run read, which those runs counted at risk (and this run in `billed`). */
  settledForEarlier: number;
}

/**
 * The longest prefix of `items` (already in priority order) whose worst cases together fit in
 * `available` credits: the first item that does not fit ends the cut, so a cheap low-priority
 * item never jumps ahead of a dear high-priority one.
 */
export function cutToFit<T>(
  items: readonly T[],
  worstOf: (item: T) => number,
  available: number,
): { take: T[]; defer: T[] } {
  let left = available;
  let i = 0;
  for (; i < items.length; i++) {
    const worst = worstOf(items[i]!);
    if (worst > left) break;
    left -= worst;
  }
  return { take: items.slice(0, i), defer: items.slice(i) };
}

/**
 * Orders work for a budget that may not cover it all: never-fetched first (in their given order),
 * then the stalest (oldest `fetchedAt` first). Stable, so equal items keep the seed list's order.
 */
export function byPriority<T>(items: readonly T[], fetchedAt: (item: T) => Date | null | undefined): T[] {
  const time = (item: T) => fetchedAt(item)?.getTime() ?? -Infinity;
  return items
    .map((item, index) => ({ item, index, at: time(item) }))
    .sort((a, b) => (a.at === b.at ? a.index - b.index : a.at < b.at ? -1 : 1))
    .map((entry) => entry.item);
}

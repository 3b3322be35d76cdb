import { BudgetExhaustedError, InsufficientBalanceError } from './engine-errors.js';

/** The budget settings of a run (the config's `budget` block, resolved against the account and past runs). */
export interface BudgetLimits {
  /** `budget.max_credits_per_run`. Default: no limit. */
  perRun?: number;
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
  private spentCredits = 0;
  private ceiling: number | undefined;
  /** Set by a 402: the service refused a call, so no paid call is sent again this run, whatever settles later. */
  private refusal: { detail: string; balance?: number } | undefined;
  /** The config key of the limit that binds (for messages). */
  readonly limitName: LimitName;

  /**
   * @param limits a number (credits the run may spend), the run's {@link BudgetLimits}, or `undefined` for no limit.
   * @param onChange told the credits {@link committed} after every reservation and settlement (to keep the run's record current). Default: none.
   */
  constructor(
    limits: number | BudgetLimits | undefined,
    private readonly onChange: (committed: number) => void = () => {},
  ) {
    const binding = bindingLimit(typeof limits === 'number' ? { perRun: limits } : (limits ?? {}));
    this.ceiling = binding?.limit;
    this.limitName = binding?.name ?? 'budget.max_credits_per_run';
  }

  /** Credits the run may spend in all; `undefined` means no limit. */
  get limit(): number | undefined {
    return this.ceiling;
  }

  /** Credits spent so far (settled). */
  get spent(): number {
    return this.spentCredits;
  }

  /** Credits spent plus those reserved by calls in flight (which may have billed already): what a run killed now may have cost. */
  get committed(): number {
    return this.spentCredits + this.reserved;
  }

  /** Credits still available for new reservations (`Infinity` without a limit; 0 once the service answered 402). */
  get remaining(): number {
    if (this.refusal) return 0;
    return this.ceiling === undefined ? Infinity : this.ceiling - this.spentCredits - this.reserved;
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
    this.onChange(this.committed);
    let open = true;
    return {
      settle: (actual: number) => {
        if (!open) return;
        open = false;
        this.reserved -= credits;
        this.spentCredits += actual;
        this.onChange(this.committed);
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
  /** Releases the reservation and counts `actual` credits as spent; later calls do nothing. */
  settle(actual: number): void;
}

/**
 * The longest prefix of `items` (already in priority order) whose worst cases together fit in
 * `available` credits: the first item that does not fit ends the cut, so a cheap low-priority
 * item never jumps ahead of a dear high-priority one.
 */
export function cutToFit<T>(items: readonly T[], worstOf: (item: T) => number, available: number): { take: T[]; defer: T[] } {
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

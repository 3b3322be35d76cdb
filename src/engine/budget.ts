import { BudgetExhaustedError } from './engine-errors.js';

/**
 * The run's credit budget. Every call reserves its worst-case cost before it is made and settles
 * the actual cost after, so concurrent calls can never together spend past the limit.
 */
export class Budget {
  private reserved = 0;
  private spentCredits = 0;

  /** @param limit credits the run may spend; `undefined` means no limit. */
  constructor(readonly limit: number | undefined) {}

  /** Credits spent so far (settled). */
  get spent(): number {
    return this.spentCredits;
  }

  /** Credits still available for new reservations (`Infinity` without a limit). */
  get remaining(): number {
    return this.limit === undefined ? Infinity : this.limit - this.spentCredits - this.reserved;
  }

  /** Reserves `credits`, or throws `BudgetExhaustedError` when they would pass the limit. */
  reserve(credits: number): Reservation {
    if (credits > this.remaining) throw new BudgetExhaustedError(credits, Math.max(0, this.remaining));
    this.reserved += credits;
    let open = true;
    return {
      settle: (actual: number) => {
        if (!open) return;
        open = false;
        this.reserved -= credits;
        this.spentCredits += actual;
      },
    };
  }

  /** Counts credits spent without a reservation (batch items settle as they resolve). */
  record(credits: number): void {
    this.spentCredits += credits;
  }

  /** How many items costing `each` still fit. */
  itemsThatFit(each: number): number {
    return each <= 0 || this.remaining === Infinity ? Number.MAX_SAFE_INTEGER : Math.floor(this.remaining / each);
  }
}

/** A reservation of the budget; settle it once with the credits actually used. */
export interface Reservation {
  /** Releases the reservation and counts `actual` credits as spent; later calls do nothing. */
  settle(actual: number): void;
}

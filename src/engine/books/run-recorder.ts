import type { Destination, RunRow } from '../../destinations/destination.js';
import type { Mutex } from '../../util/mutex.js';
import type { Books } from './budget.js';
import type { RunRowCarrier } from '../../load/load-writer.js';

/**
 * Keeps a run's row in `_seedline_runs` current while it runs. Every change of the credits the
 * run has committed (spent, plus reserved by calls in flight, which may have billed already) is
 * saved in the background, coalesced, through the run's write lock: a batch reservation is on
 * record before its intent is committed (and so before it is submitted), and a process killed
 * mid-stream still counts what it spent towards `max_credits_per_month`.
 */
export class RunRecorder implements RunRowCarrier {
  private readonly row: RunRow;
  private queued = false;
  /** The row changed since it was last saved (or taken by a unit to carry). */
  private changed = false;

  constructor(
    private readonly destination: Destination,
    private readonly lock: Mutex,
    row: RunRow,
  ) {
    this.row = { ...row };
  }

  /** Records the run's books so far (calls in flight at risk); saved soon, without waiting. */
  committed(books: Books): void {
    Object.assign(this.row, booksFields(books));
    this.changed = true;
    this.queueSave();
  }

  /**
   * The row, when it changed since last saved, for a load unit under way to save with its rows
   * (see `LoadWriter`): the save queued for it then finds nothing to do. A save that would have
   * cost a COMMIT of its own (~20 ms on DuckDB) rides on one that happens anyway.
   */
  takeChanged(): RunRow | undefined {
    if (!this.changed) return undefined;
    this.changed = false;
    return { ...this.row };
  }

  /** The unit that took the row did not commit: the row is saved again. */
  carryFailed(): void {
    this.changed = true;
    this.queueSave();
  }

  /**
   * Queues a save through the run's lock (at most one waits), after the units already waiting
   * and before any asked for later: a batch reservation is on record before its intent commits.
   */
  private queueSave(): void {
    if (this.queued) return;
    this.queued = true;
    // A failed background save is not fatal: the next one (or the run's final save) writes the figure again.
    void this.lock
      .run(async () => {
        this.queued = false;
        const row = this.takeChanged();
        if (row)
          await this.destination.saveRun(row).catch((error: unknown) => (this.carryFailed(), Promise.reject(error)));
      })
      .catch(() => undefined);
  }

  /** Merges `fields` into the run's row and saves it, after any background save. */
  async save(fields: Partial<RunRow>): Promise<void> {
    Object.assign(this.row, fields);
    await this.lock.run(() => {
      this.changed = false;
      return this.destination.saveRun({ ...this.row });
    });
  }
}

/** The `_seedline_runs` fields of a run's books. */
export function booksFields(books: Books): Pick<RunRow, 'creditsUsed' | 'creditsAtRisk' | 'creditsSettledEarlier'> {
  return { creditsUsed: books.billed, creditsAtRisk: books.atRisk, creditsSettledEarlier: books.settledForEarlier };
}

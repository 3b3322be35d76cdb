import type { Destination, RunRow } from '../destinations/destination.js';
import type { Mutex } from '../util/mutex.js';

/**
 * Keeps a run's row in `_seedline_runs` current while it runs. Every change of the credits the
 * run has committed (spent, plus reserved by calls in flight, which may have billed already) is
 * saved in the background, coalesced, through the run's write lock: a batch reservation is on
 * record before its intent is committed (and so before it is submitted), and a process killed
 * mid-stream still counts what it spent towards `max_credits_per_month`.
 */
export class RunRecorder {
  private readonly row: RunRow;
  private queued = false;

  constructor(
    private readonly destination: Destination,
    private readonly lock: Mutex,
    row: RunRow,
  ) {
    this.row = { ...row };
  }

  /** Records that the run has committed `credits` so far; saved soon, without waiting. */
  committed(credits: number): void {
    this.row.creditsUsed = credits;
    if (this.queued) return;
    this.queued = true;
    // A failed background save is not fatal: the next one (or the run's final save) writes the figure again.
    void this.lock
      .run(async () => {
        this.queued = false;
        await this.destination.saveRun({ ...this.row });
      })
      .catch(() => undefined);
  }

  /** Merges `fields` into the run's row and saves it, after any background save. */
  async save(fields: Partial<RunRow>): Promise<void> {
    Object.assign(this.row, fields);
    await this.lock.run(() => this.destination.saveRun({ ...this.row }));
  }
}

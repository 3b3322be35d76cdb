import { createTask, validate, type ScheduledTask } from 'node-cron';

/** Options of a {@link CronRunner}. */
export interface CronRunnerOptions {
  /** Cron expression, e.g. `0 *\/6 * * *` (five fields, or six with seconds). */
  cron: string;
  /** IANA time zone the expression is read in. Default: `UTC`. */
  timezone?: string;
  /** The job; a tick that comes while it still runs is skipped, never queued. */
  job: () => Promise<void>;
  /** Where lines about ticks go. Default: stderr. */
  log?: (line: string) => void;
}

/** A cron expression that node-cron cannot read. */
export class InvalidCronError extends Error {
  readonly code = 'SEEDLINE_CRON_INVALID';
}

/**
 * Runs a job on a cron schedule, one run at a time: a tick that finds the previous run still going
 * is skipped with a log line (a sync longer than its interval must not pile up runs, or spend twice).
 */
export class CronRunner {
  private readonly task: ScheduledTask;
  private readonly log: (line: string) => void;
  private running: Promise<void> | undefined;

  constructor(private readonly options: CronRunnerOptions) {
    if (!validate(options.cron)) {
      throw new InvalidCronError(`"${options.cron}" is not a cron expression: use five fields, e.g. "0 */6 * * *" for every six hours`);
    }
    this.log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
    this.task = createTask(options.cron, () => this.tick(), { timezone: options.timezone ?? 'UTC', noOverlap: false });
  }

  /** Starts ticking. */
  start(): void {
    void this.task.start();
    this.log(`scheduled "${this.options.cron}" (${this.options.timezone ?? 'UTC'}); next run ${this.nextRun()?.toISOString() ?? 'never'}`);
  }

  /** When the next tick is due. */
  nextRun(): Date | null {
    return this.task.getNextRun();
  }

  /** Runs the job now, unless a run is under way (then the tick is skipped). */
  async tick(): Promise<void> {
    if (this.running) {
      this.log('skipped a tick: the previous run is still going');
      return;
    }
    this.running = this.options.job().catch((error: Error) => this.log(`run failed: ${error.message}`));
    try {
      await this.running;
    } finally {
      this.running = undefined;
      const next = this.nextRun();
      if (next) this.log(`next run ${next.toISOString()}`);
    }
  }

  /** Stops ticking and waits for a run under way to end. */
  async stop(): Promise<void> {
    await this.task.destroy();
    await this.running;
  }
}

import { createTask, parse, validate, type ScheduledTask } from 'node-cron';

/** Options of a {@link CronRunner}. */
export interface CronRunnerOptions {
  /** Cron expression, e.g. `0 *\/6 * * *` (five fields, or six with seconds). */
  cron: string;
  /** IANA time zone the expression is read in. Default: `UTC`. */
  timezone?: string;
  /**
   * The job, given the time the tick was scheduled for (whole second); a tick that comes while it
   * still runs is skipped, never queued.
   */
  job: (scheduledAt: Date) => Promise<void>;
  /** Where lines about ticks go. Default: stderr. */
  log?: (line: string) => void;
  /** Name put before each log line, e.g. the schedule group. Default: none. */
  name?: string;
}

/** A cron expression that node-cron cannot read. */
export class InvalidCronError extends Error {
  readonly code = 'SEEDLINE_CRON_INVALID';
}

const MINUTE_MS = 60_000;
/** How far back {@link CronRunner.lastTickSince} looks at most: a year of minutes (≈0.5 M matches). */
const MAX_LOOKBACK_MS = 366 * 24 * 60 * MINUTE_MS;

/**
 * Runs a job on a cron schedule, one run at a time: a tick that finds the previous run still going
 * is skipped with a log line (a sync longer than its interval must not pile up runs, or spend twice).
 */
export class CronRunner {
  private readonly task: ScheduledTask;
  private readonly log: (line: string) => void;
  private readonly lastSecond: number;
  private running: Promise<void> | undefined;

  constructor(private readonly options: CronRunnerOptions) {
    if (!validate(options.cron)) {
      throw new InvalidCronError(`"${options.cron}" is not a cron expression: use five fields, e.g. "0 */6 * * *" for every six hours`);
    }
    const write = options.log ?? ((line) => process.stderr.write(`${line}\n`));
    this.log = options.name === undefined ? write : (line) => write(`[${options.name}] ${line}`);
    this.lastSecond = Math.max(...parse(options.cron).second);
    this.task = createTask(options.cron, (context) => this.tick(context.date), { timezone: options.timezone ?? 'UTC', noOverlap: false });
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

  /**
   * The latest time the expression matched in `(since, now]`, or null when it did not (or not
   * within a year). Walks back a minute at a time: a matching minute matches at every allowed
   * second, so only its last allowed second up to `now` is tried.
   */
  lastTickSince(since: Date | null, now: Date = new Date()): Date | null {
    const floor = Math.max(since?.getTime() ?? -Infinity, now.getTime() - MAX_LOOKBACK_MS);
    const seconds = parse(this.options.cron).second;
    for (let minute = now.getTime() - (now.getTime() % MINUTE_MS); minute > floor - MINUTE_MS; minute -= MINUTE_MS) {
      const limit = minute === now.getTime() - (now.getTime() % MINUTE_MS) ? Math.floor((now.getTime() - minute) / 1000) : this.lastSecond;
      const second = seconds.filter((s) => s <= limit).at(-1);
      if (second === undefined) continue;
      const candidate = new Date(minute + second * 1000);
      if (!this.task.match(candidate)) continue;
      return candidate.getTime() > floor ? candidate : null;
    }
    return null;
  }

  /** Runs the job now for the tick of `scheduledAt`, unless a run is under way (then the tick is skipped). */
  async tick(scheduledAt: Date = new Date()): Promise<void> {
    if (this.running) {
      this.log('skipped a tick: the previous run is still going');
      return;
    }
    const tickAt = new Date(scheduledAt.getTime() - (scheduledAt.getTime() % 1000));
    this.running = this.options.job(tickAt).catch((error: Error) => this.log(`run failed: ${error.message}`));
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

import { createTask, parse, validate, type ScheduledTask } from 'node-cron';
import { logLine } from '../util/log.js';

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
  /** Where lines about ticks go. Default: the log (stderr). */
  log?: (line: string) => void;
  /** Name put before each log line, e.g. the schedule group. Default: none. */
  name?: string;
  /** Aborted when the scheduler is stopping (SIGTERM): a run that ends then announces no next run. Default: none. */
  signal?: AbortSignal;
}

/** A cron expression that node-cron cannot read. */
export class InvalidCronError extends Error {
  readonly code = 'SEEDLINE_CRON_INVALID';
}

const MINUTE_MS = 60_000;
/** How far back {@link CronRunner.lastTickSince} looks at most: a year of minutes (≈0.5 M matches). */
const MAX_LOOKBACK_MS = 366 * 24 * 60 * MINUTE_MS;

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

/** A wall-clock minute in the runner's time zone. */
interface LocalParts {
  month: number;
  day: number;
  weekday: number;
  hour: number;
  minute: number;
}

/**
 * How many minutes back from this local minute can be skipped because no minute among them can
 * match; 0 when this one might. Conservative around DST: a skipped day lands at most an hour short
 * of the previous day (the next step skips the rest), never past one of its minutes. Day of month
 * and weekday both have to miss, whether cron reads them with AND or OR.
 */
function minutesToSkip(fields: ReturnType<typeof parse>, local: LocalParts): number {
  const dayMisses =
    !fields.month.includes(local.month) ||
    (!fields.dayOfMonth.includes(local.day) && !fields.dayOfWeek.includes(local.weekday));
  if (dayMisses) return Math.max(local.minute + 1, local.hour * 60 + local.minute + 1 - 60);
  if (!fields.hour.includes(local.hour)) return local.minute + 1;
  if (fields.minute.includes(local.minute)) return 0;
  const earlier = fields.minute.filter((m) => m < local.minute).at(-1);
  return earlier === undefined ? local.minute + 1 : local.minute - earlier;
}

/**
 * Runs a job on a cron schedule, one run at a time: a tick that finds the previous run still going
 * is skipped with a log line (a sync longer than its interval must not pile up runs, or spend twice).
 * A tick that comes late (the process was suspended, or its event loop busy past node-cron's 1 s
 * tolerance) still runs, once, with a log line saying how late.
 */
export class CronRunner {
  private readonly task: ScheduledTask;
  private readonly log: (line: string) => void;
  private readonly lastSecond: number;
  private running: Promise<void> | undefined;
  private localFormat: Intl.DateTimeFormat | undefined;
  /** The latest scheduled time a tick was given, run or skipped (ms). */
  private latestTick = -Infinity;
  /** The latest overdue slot node-cron reported, waiting for {@link runOverdue}. */
  private overdue: Date | undefined;
  private overdueTimer: NodeJS.Immediate | undefined;

  constructor(private readonly options: CronRunnerOptions) {
    if (!validate(options.cron)) {
      throw new InvalidCronError(
        `"${options.cron}" is not a cron expression: use five fields, e.g. "0 */6 * * *" for every six hours`,
      );
    }
    const write = options.log ?? logLine;
    this.log = options.name === undefined ? write : (line) => write(`[${options.name}] ${line}`);
    this.lastSecond = Math.max(...parse(options.cron).second);
    this.task = createTask(options.cron, (context) => this.tick(context.date), {
      timezone: options.timezone ?? 'UTC',
      noOverlap: false,
    });
    // Without a listener node-cron only warns and drops the tick until the next matching time (for a nightly group, a day).
    this.task.on('execution:missed', (context) => this.missed(context.date));
  }

  /** Starts ticking. */
  start(): void {
    void this.task.start();
    this.log(
      `scheduled "${this.options.cron}" (${this.options.timezone ?? 'UTC'}); next run ${this.nextRun()?.toISOString() ?? 'never'}`,
    );
  }

  /** Set by `stop`: no tick starts and no next run is announced after it. */
  private stopping = false;

  /** When the next tick is due. */
  nextRun(): Date | null {
    return this.task.getNextRun();
  }

  /**
   * The latest time the expression matched in `(since, now]`, or null when it did not (or not
   * within a year). Walks back from `now`, skipping whole local days, hours and minutes whose
   * fields cannot match (a year of `0 0 29 2 *` takes about a thousand steps, not half a million
   * minutes); a candidate minute is then tried at its last allowed second up to `now`, and
   * node-cron's own `match` has the last word.
   */
  lastTickSince(since: Date | null, now: Date = new Date()): Date | null {
    const floor = Math.max(since?.getTime() ?? -Infinity, now.getTime() - MAX_LOOKBACK_MS);
    const fields = parse(this.options.cron);
    const nowMinute = now.getTime() - (now.getTime() % MINUTE_MS);
    for (let minute = nowMinute; minute > floor - MINUTE_MS;) {
      const local = this.localParts(minute);
      const skip = minutesToSkip(fields, local);
      if (skip > 0) {
        minute -= skip * MINUTE_MS;
        continue;
      }
      const limit = minute === nowMinute ? Math.floor((now.getTime() - minute) / 1000) : this.lastSecond;
      const second = fields.second.filter((s) => s <= limit).at(-1);
      const candidate = second === undefined ? undefined : new Date(minute + second * 1000);
      if (candidate !== undefined && this.task.match(candidate)) return candidate.getTime() > floor ? candidate : null;
      minute -= MINUTE_MS;
    }
    return null;
  }

  /** Month, day, weekday, hour and minute of an instant in the runner's time zone. */
  private localParts(instant: number): LocalParts {
    this.localFormat ??= new Intl.DateTimeFormat('en-US', {
      timeZone: this.options.timezone ?? 'UTC',
      hourCycle: 'h23',
      month: 'numeric',
      day: 'numeric',
      weekday: 'short',
      hour: 'numeric',
      minute: 'numeric',
    });
    const parts = Object.fromEntries(this.localFormat.formatToParts(instant).map((p) => [p.type, p.value]));
    return {
      month: Number(parts.month),
      day: Number(parts.day),
      weekday: WEEKDAYS.indexOf(parts.weekday ?? ''),
      hour: Number(parts.hour),
      minute: Number(parts.minute),
    };
  }

  /** Runs the job now for the tick of `scheduledAt`, unless a run is under way (then the tick is skipped). */
  async tick(scheduledAt: Date = new Date()): Promise<void> {
    this.latestTick = Math.max(this.latestTick, scheduledAt.getTime());
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
      // A run that ended because the scheduler is stopping has no next run to announce.
      const next = this.stopping || this.options.signal?.aborted ? null : this.nextRun();
      if (next) this.log(`next run ${next.toISOString()}`);
    }
  }

  /** A slot node-cron found overdue. One late heartbeat reports every slot it passed, one event each: only the latest runs. */
  private missed(scheduledAt: Date): void {
    if (this.overdue === undefined || scheduledAt > this.overdue) this.overdue = scheduledAt;
    // After node-cron's on-time tick of the same heartbeat (if any) has started, so that one wins.
    this.overdueTimer ??= setImmediate(() => void this.runOverdue());
  }

  /** Runs the latest overdue tick, unless a tick scheduled at or after it came meanwhile. */
  private async runOverdue(): Promise<void> {
    const scheduledAt = this.overdue!;
    this.overdue = undefined;
    this.overdueTimer = undefined;
    const late = `the tick of ${scheduledAt.toISOString()} came ${Math.round((Date.now() - scheduledAt.getTime()) / 1000)} s late (process suspended or busy)`;
    if (this.latestTick >= scheduledAt.getTime()) {
      this.log(`${late}: a later tick came on time instead`);
      return;
    }
    this.log(`${late}: running it now`);
    await this.tick(scheduledAt);
  }

  /** Stops ticking and waits for a run under way to end. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.overdueTimer !== undefined) clearImmediate(this.overdueTimer);
    this.overdue = undefined;
    this.overdueTimer = undefined;
    await this.task.destroy();
    await this.running;
  }
}

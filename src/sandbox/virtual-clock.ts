interface ScheduledTask {
  at: number;
  order: number;
  run: () => void | Promise<void>;
  cancelled: boolean;
}

/** Handle of a scheduled task. */
export interface TaskHandle {
  cancel(): void;
}

/**
 * The sandbox's notion of time. It stands still until advanced, so tests are deterministic; advancing
 * runs every task that falls due (Signal checks, webhook retries) in time order, at its own instant.
 */
export class VirtualClock {
  private current: number;
  private tasks: ScheduledTask[] = [];
  private counter = 0;
  private advancing: Promise<void> = Promise.resolve();

  constructor(start: Date) {
    this.current = start.getTime();
  }

  /** The current virtual instant. */
  now(): Date {
    return new Date(this.current);
  }

  /** The current virtual instant in epoch milliseconds. */
  nowMs(): number {
    return this.current;
  }

  /** Runs `run` when the clock reaches `atMs` (immediately on the next advance if already due). */
  schedule(atMs: number, run: () => void | Promise<void>): TaskHandle {
    const task: ScheduledTask = { at: atMs, order: this.counter++, run, cancelled: false };
    this.tasks.push(task);
    return { cancel: () => void (task.cancelled = true) };
  }

  /** Moves time forward by `ms`, running due tasks in order; resolves once they have all finished. */
  advance(ms: number): Promise<void> {
    const step = this.advancing.then(() => this.runUntil(this.current + Math.max(0, ms)));
    this.advancing = step.catch(() => undefined);
    return step;
  }

  /** Jumps to `date`: forward runs due tasks like {@link advance}; backward just moves the clock. */
  async set(date: Date): Promise<void> {
    const target = date.getTime();
    if (target >= this.current) return this.advance(target - this.current);
    await this.advancing;
    this.current = target;
  }

  /** Drops every pending task (used on close). */
  clear(): void {
    this.tasks = [];
  }

  private async runUntil(target: number): Promise<void> {
    for (;;) {
      this.tasks = this.tasks.filter((task) => !task.cancelled);
      let next: ScheduledTask | undefined;
      for (const task of this.tasks)
        if (task.at <= target && (!next || task.at < next.at || (task.at === next.at && task.order < next.order)))
          next = task;
      if (!next) break;
      this.tasks.splice(this.tasks.indexOf(next), 1);
      if (next.at > this.current) this.current = next.at;
      await next.run();
    }
    this.current = target;
  }
}

import { createTask, parse } from 'node-cron';
import { describe, expect, it, vi } from 'vitest';
import { cliGroupName } from '../../src/cli/schedule-action.js';
import { CronRunner, InvalidCronError } from '../../src/scheduler/cron-runner.js';
import { timeLimit } from '../helpers/time-limits.js';

describe('cron runner', () => {
  it('given a run under way, when another tick comes, then it is skipped, not queued', async () => {
    const lines: string[] = [];
    let release!: () => void;
    let runs = 0;
    const runner = new CronRunner({
      cron: '0 0 1 1 *',
      log: (line) => lines.push(line),
      job: () => {
        runs++;
        return new Promise<void>((resolve) => (release = resolve));
      },
    });
    const first = runner.tick();
    await runner.tick();
    expect(lines).toContain('skipped a tick: the previous run is still going');
    release();
    await first;
    expect(runs).toBe(1);
    const second = runner.tick();
    expect(runs).toBe(2);
    release();
    await second;
    await runner.stop();
  });

  it('given a failing job, when it ticks, then the failure is logged and the runner goes on', async () => {
    const lines: string[] = [];
    const runner = new CronRunner({
      cron: '0 0 1 1 *',
      log: (l) => lines.push(l),
      job: () => Promise.reject(new Error('destination locked')),
    });
    runner.start();
    await runner.tick();
    expect(lines.some((l) => l === 'run failed: destination locked')).toBe(true);
    expect(runner.nextRun()).toBeInstanceOf(Date);
    await runner.stop();
  });

  it('given a bad expression, when constructed, then it says what a good one looks like', () => {
    expect(() => new CronRunner({ cron: 'every hour', job: async () => {} })).toThrow(InvalidCronError);
    expect(() => new CronRunner({ cron: 'every hour', job: async () => {} })).toThrow(/0 \*\/6 \* \* \*/);
  });
});

/** Keeps the event loop busy, as a CPU-heavy page, a long GC pause or a suspended VM would. */
function blockEventLoop(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    // busy
  }
}

/** A whole second at least `aheadMs` from now whose next second is in the same minute (UTC). */
function comingSecond(aheadMs: number): Date {
  const at = new Date(Math.ceil((Date.now() + aheadMs) / 1000) * 1000);
  return at.getUTCSeconds() === 59 ? new Date(at.getTime() + 1000) : at;
}

describe('cron runner: ticks that come late', () => {
  it('given a daily expression due in a second, when the event loop is busy across it, then the tick still runs once for its scheduled time, logged as late', async () => {
    const at = comingSecond(1000);
    const ran: Date[] = [];
    const lines: string[] = [];
    const runner = new CronRunner({
      cron: `${at.getUTCSeconds()} ${at.getUTCMinutes()} ${at.getUTCHours()} * * *`,
      job: async (d) => void ran.push(d),
      log: (l) => lines.push(l),
    });
    runner.start();
    try {
      // Blocked from the start, so the tick cannot come on time however slow the machine.
      blockEventLoop(at.getTime() + 2500 - Date.now());
      // The late tick runs once node-cron's timer sees it missed: wait for it, however loaded the machine.
      await vi.waitFor(() => expect(ran).toEqual([at]), { timeout: timeLimit(30_000), interval: 50 });
      expect(lines).toContainEqual(
        expect.stringMatching(new RegExp(`^the tick of ${at.toISOString()} came \\d+ s late .*: running it now$`)),
      );
    } finally {
      await runner.stop();
    }
  });

  it('given two ticks a second apart, when the event loop is busy across both, then the job runs once, for the later one, and no tick is reported skipped', async () => {
    const at = comingSecond(1000);
    const later = new Date(at.getTime() + 1000);
    const ran: Date[] = [];
    const lines: string[] = [];
    const cron = `${at.getUTCSeconds()},${later.getUTCSeconds()} ${at.getUTCMinutes()} ${at.getUTCHours()} * * *`;
    const runner = new CronRunner({ cron, job: async (d) => void ran.push(d), log: (l) => lines.push(l) });
    runner.start();
    try {
      // Blocked from the start, so the tick cannot come on time however slow the machine.
      blockEventLoop(later.getTime() + 2500 - Date.now());
      await vi.waitFor(() => expect(ran).toEqual([later]), { timeout: timeLimit(30_000), interval: 50 });
      expect(lines.filter((l) => l.includes('late') || l.startsWith('skipped'))).toEqual([
        expect.stringMatching(new RegExp(`^the tick of ${later.toISOString()} came \\d+ s late .*: running it now$`)),
      ]);
    } finally {
      await runner.stop();
    }
  });
});

describe('cron runner: the last tick since a time', () => {
  const runner = (cron: string, timezone?: string) =>
    new CronRunner({ cron, ...(timezone ? { timezone } : {}), job: async () => {} });

  it('given a nightly expression, when asked at 10:30 after a run yesterday, then it names today at midnight', () => {
    const nightly = runner('0 0 * * *');
    expect(nightly.lastTickSince(new Date('2026-03-09T00:00:02Z'), new Date('2026-03-10T10:30:00Z'))).toEqual(
      new Date('2026-03-10T00:00:00Z'),
    );
  });

  it('given a run after the latest tick, when asked, then no tick was missed', () => {
    expect(
      runner('0 0 * * *').lastTickSince(new Date('2026-03-10T00:00:01Z'), new Date('2026-03-10T10:30:00Z')),
    ).toBeNull();
  });

  it('given seconds in the expression and a time zone, when asked, then the tick is exact to the second in that zone', () => {
    expect(runner('*/20 * * * * *').lastTickSince(null, new Date('2026-03-10T10:30:47.500Z'))).toEqual(
      new Date('2026-03-10T10:30:40Z'),
    );
    expect(runner('0 2 * * *', 'Europe/Berlin').lastTickSince(null, new Date('2026-07-10T10:00:00Z'))).toEqual(
      new Date('2026-07-10T00:00:00Z'),
    );
  });

  it('given an expression that never matched in the last year, when asked, then it says none', () => {
    expect(runner('0 0 29 2 *').lastTickSince(null, new Date('2026-03-10T10:30:00Z'))).toBeNull();
  });
});

describe('schedule: the group name of a --cron schedule', () => {
  it('given two different --cron schedules, when named, then their groups differ, and the same one keeps its name', () => {
    const hourly = cliGroupName('0 * * * *', 'UTC', ['profiles', 'companies']);
    expect(hourly).toMatch(/^cli-[0-9a-f]{10}$/);
    expect(cliGroupName('0  *  * * *', 'UTC', ['companies', 'profiles'])).toBe(hourly);
    expect(cliGroupName('0 */6 * * *', 'UTC', ['profiles', 'companies'])).not.toBe(hourly);
    expect(cliGroupName('0 * * * *', 'UTC', ['profiles'])).not.toBe(hourly);
    expect(cliGroupName('0 * * * *', 'Europe/Berlin', ['profiles', 'companies'])).not.toBe(hourly);
  });
});

describe('cron runner: the last tick since a time, skipping what cannot match', () => {
  const runner = (cron: string, timezone = 'UTC') => new CronRunner({ cron, timezone, job: async () => {} });
  /** The reference: every minute back from `now`, tried at its last allowed second, by node-cron's own match. */
  function bruteForce(cron: string, timezone: string, since: Date, now: Date): Date | null {
    const task = createTask(cron, () => undefined, { timezone });
    const seconds = parse(cron).second;
    try {
      for (let minute = now.getTime() - (now.getTime() % 60_000); minute > since.getTime() - 60_000; minute -= 60_000) {
        const limit =
          minute === now.getTime() - (now.getTime() % 60_000) ? Math.floor((now.getTime() - minute) / 1000) : 59;
        const second = seconds.filter((s) => s <= limit).at(-1);
        if (second === undefined) continue;
        const candidate = new Date(minute + second * 1000);
        if (task.match(candidate)) return candidate.getTime() > since.getTime() ? candidate : null;
      }
      return null;
    } finally {
      void task.destroy();
    }
  }

  it('given a leap-day expression, when asked in the March after a leap day, then it names that day after only a few thousand matches', () => {
    const leap = runner('0 0 29 2 *');
    const task = (leap as unknown as { task: { match: (d: Date) => boolean } }).task;
    let matches = 0;
    const match = task.match.bind(task);
    task.match = (date) => (matches++, match(date));
    expect(leap.lastTickSince(null, new Date('2028-03-10T10:30:00Z'))).toEqual(new Date('2028-02-29T00:00:00Z'));
    expect(leap.lastTickSince(null, new Date('2027-03-10T10:30:00Z'))).toBeNull();
    expect(matches).toBeLessThan(5000);
  });

  it.each([
    ['30 2 * * *', 'America/New_York', '2026-03-01T00:00:00Z', '2026-03-09T12:00:00Z'],
    ['30 1 * * *', 'America/New_York', '2026-10-28T00:00:00Z', '2026-11-02T12:00:00Z'],
    ['15,45 */5 * * 1-5', 'Asia/Kathmandu', '2026-03-01T00:00:00Z', '2026-03-09T03:00:00Z'],
    ['0 9 13 * 5', 'Europe/Berlin', '2026-01-01T00:00:00Z', '2026-03-20T00:00:00Z'],
    ['*/20 * * * * *', 'UTC', '2026-03-10T10:00:00Z', '2026-03-10T10:30:47.500Z'],
  ])('given "%s" in %s, when asked, then it agrees with a minute-by-minute walk', (cron, zone, since, now) => {
    for (const at of [now, new Date(new Date(now).getTime() - 37 * 3_600_000).toISOString()]) {
      expect(runner(cron, zone).lastTickSince(new Date(since), new Date(at))).toEqual(
        bruteForce(cron, zone, new Date(since), new Date(at)),
      );
    }
  });
});

import { describe, expect, it } from 'vitest';
import { CronRunner, InvalidCronError } from '../../src/scheduler/cron-runner.js';

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
    const runner = new CronRunner({ cron: '0 0 1 1 *', log: (l) => lines.push(l), job: () => Promise.reject(new Error('destination locked')) });
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

describe('cron runner: the last tick since a time', () => {
  const runner = (cron: string, timezone?: string) => new CronRunner({ cron, ...(timezone ? { timezone } : {}), job: async () => {} });

  it('given a nightly expression, when asked at 10:30 after a run yesterday, then it names today at midnight', () => {
    const nightly = runner('0 0 * * *');
    expect(nightly.lastTickSince(new Date('2026-03-09T00:00:02Z'), new Date('2026-03-10T10:30:00Z'))).toEqual(new Date('2026-03-10T00:00:00Z'));
  });

  it('given a run after the latest tick, when asked, then no tick was missed', () => {
    expect(runner('0 0 * * *').lastTickSince(new Date('2026-03-10T00:00:01Z'), new Date('2026-03-10T10:30:00Z'))).toBeNull();
  });

  it('given seconds in the expression and a time zone, when asked, then the tick is exact to the second in that zone', () => {
    expect(runner('*/20 * * * * *').lastTickSince(null, new Date('2026-03-10T10:30:47.500Z'))).toEqual(new Date('2026-03-10T10:30:40Z'));
    expect(runner('0 2 * * *', 'Europe/Berlin').lastTickSince(null, new Date('2026-07-10T10:00:00Z'))).toEqual(new Date('2026-07-10T00:00:00Z'));
  });

  it('given an expression that never matched in the last year, when asked, then it says none', () => {
    expect(runner('0 0 29 2 *').lastTickSince(null, new Date('2026-03-10T10:30:00Z'))).toBeNull();
  });
});

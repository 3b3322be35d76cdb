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

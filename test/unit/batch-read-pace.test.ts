import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ReadPace } from '../../src/engine/batch/batch-results.js';

// When a job's results are read next: pure arithmetic over the clock, so the clock is faked.
describe('the pace of reads of a batch job results', () => {
  beforeEach(() => vi.useFakeTimers({ now: 0 }));
  afterEach(() => vi.useRealTimers());

  it('given reads that found nothing yet, when the next is due, then it waits the poll interval, doubling while nothing comes, up to 5 s', () => {
    const pace = new ReadPace(1_000, 1_000);
    pace.read(0);
    expect(pace.wait()).toBe(1_000);
    pace.read(0);
    expect(pace.wait()).toBe(2_000);
    pace.read(0);
    pace.read(0);
    pace.read(0);
    expect(pace.wait()).toBe(5_000);
  });

  it('given entries coming at 10 ms each, when few are left, then the next read comes when the last is due, never sooner than 100 ms apart nor later than the poll interval', () => {
    const pace = new ReadPace(2_000, 150);
    pace.read(100);
    // 100 entries in 1 s: the 50 left take 500 ms.
    expect(pace.wait(1_000)).toBe(500);
    pace.read(50);
    expect(pace.wait(1_500)).toBe(100);

    const unknown = new ReadPace(2_000);
    unknown.read(100);
    // How many are left is not known: a full page (500) at that pace is 5 s, so the poll interval.
    expect(unknown.wait(1_000)).toBe(2_000);
  });
});

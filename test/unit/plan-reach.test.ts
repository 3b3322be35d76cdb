import { describe, expect, it } from 'vitest';
import { reachUnder } from '../../src/engine/books/plan-reach.js';
import type { StreamPlan } from '../../src/engine/stream-context.js';

const plan = (stream: string, worstCaseCredits: number, estimatedCredits: number): StreamPlan => ({
  stream,
  units: 10,
  resumed: 0,
  skipped: 0,
  calls: 10,
  worstCaseCredits,
  estimatedCredits,
  next: [],
});

describe('reach under a budget', () => {
  it('given streams in run order, then worst cases say what is sure and expected costs where the run stops', () => {
    const reach = reachUnder(
      [
        plan('profiles', 100, 50),
        plan('activity', 400, 200),
        plan('account', 0, 0),
        plan('post_comments', 5500, 1500),
        plan('post_reactions', 5500, 1500),
      ],
      1500,
    );
    expect(reach.map((r) => [r.stream, r.reach, r.creditsLeft])).toEqual([
      ['profiles', 'covered', 1500],
      ['activity', 'covered', 1450],
      ['account', 'covered', 1250],
      ['post_comments', 'stops', 1250],
      ['post_reactions', 'not_reached', 0],
    ]);
  });

  it('given a worst case past the limit and an expected cost within it, then the stream may stop', () => {
    expect(reachUnder([plan('jobs', 1100, 230)], 500)).toEqual([
      { stream: 'jobs', reach: 'may_stop', creditsLeft: 500, expectedCredits: 230 },
    ]);
  });
});

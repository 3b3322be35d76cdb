import { describe, expect, it } from 'vitest';
import { planReport, renderPlan } from '../../src/cli/plan-action.js';
import { CostModel } from '../../src/engine/books/cost-model.js';
import type { StreamPlan } from '../../src/engine/stream-context.js';

const profiles: StreamPlan = {
  stream: 'profiles',
  units: 40,
  resumed: 0,
  skipped: 0,
  calls: 1,
  worstCaseCredits: 40,
  estimatedCredits: 40,
  next: [],
};
const account = (balance: number | null) => ({
  balance,
  requestsPerMinute: 60,
  costs: CostModel.builtIn(),
  ...(balance === null ? { balanceError: 'connection refused' } : {}),
});

describe('plan verdict', () => {
  it('given no keep_balance and a balance below the worst case, when planned, then the balance binds and the run does not fit', () => {
    const report = planReport([profiles], {}, account(5));
    expect(report.limits.binding).toEqual({ limit: 5, name: 'credits_remaining' });
    expect(report.verdict).toBe('will_stop');
    expect(renderPlan(report)).toMatch(
      /budget: 5 credits \(the account balance: the service refuses calls past it\): does not fit/,
    );
  });

  it('given a per-run limit below the balance, when planned, then the configured limit binds', () => {
    const report = planReport([profiles], { perRun: 30 }, account(100));
    expect(report.limits.binding).toEqual({ limit: 30, name: 'budget.max_credits_per_run' });
    expect(report.verdict).toBe('will_stop');
  });

  it('given an unknown balance and keep_balance, when planned, then it says why nothing fits above keep_balance', () => {
    const report = planReport([profiles], { balanceLeft: 0 }, account(null));
    expect(report.verdict).toBe('will_stop');
    expect(renderPlan(report)).toMatch(
      /above keep_balance 0 \(balance unknown: nothing can be proven above keep_balance\)/,
    );
  });

  it('given an unknown balance and no keep_balance, when the configured limits fit, then it warns the service may still refuse calls', () => {
    const report = planReport([profiles], { perRun: 100 }, account(null));
    expect(report.verdict).toBe('fits');
    expect(renderPlan(report)).toMatch(
      /fits the budget; balance unknown, so the service may still refuse calls it cannot cover \(402\)/,
    );
  });
});

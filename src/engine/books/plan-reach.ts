import type { StreamPlan } from '../stream-context.js';

/**
 * How far a run gets into a stream under a credit limit, streams taken in run order:
 * - `covered`: its worst case fits after the worst cases of the streams before it (or it bills nothing);
 * - `may_stop`: its expected cost fits, its worst case may not;
 * - `stops`: the expected cost of the streams before it leaves some credits, not its expected cost;
 * - `not_reached`: the expected cost of the streams before it uses up the limit.
 */
export type Reach = 'covered' | 'may_stop' | 'stops' | 'not_reached';

/** A stream's reach under the limit. */
export interface StreamReach {
  stream: string;
  reach: Reach;
  /** Credits the expected cost of the streams before it leaves for it (its units go in the order `next` shows). */
  creditsLeft: number;
  /** Its expected cost. */
  expectedCredits: number;
}

/**
 * Which streams a run reaches, and how far, before `limit` credits are spent,
 * from the plans of the streams in run order: worst cases for what is sure, expected costs for
 * where the run is expected to stop.
 */
export function reachUnder(plans: readonly StreamPlan[], limit: number): StreamReach[] {
  let worstBefore = 0;
  let expectedBefore = 0;
  return plans.map((plan) => {
    const reach = reachOf(plan, limit, worstBefore, expectedBefore);
    const creditsLeft = Math.max(0, limit - expectedBefore);
    worstBefore += plan.worstCaseCredits;
    expectedBefore += plan.estimatedCredits;
    return { stream: plan.stream, reach, creditsLeft, expectedCredits: plan.estimatedCredits };
  });
}

function reachOf(plan: StreamPlan, limit: number, worstBefore: number, expectedBefore: number): Reach {
  // A stream that bills nothing runs whatever was spent before it.
  if (plan.worstCaseCredits === 0 || worstBefore + plan.worstCaseCredits <= limit) return 'covered';
  if (expectedBefore + plan.estimatedCredits <= limit) return 'may_stop';
  return expectedBefore >= limit ? 'not_reached' : 'stops';
}

import { describe, expect, it } from 'vitest';
import { summary } from '../../src/cli/sync-action.js';
import type { RunResult } from '../../src/engine/pipeline.js';
import { emptyOutcome } from '../../src/engine/stream-context.js';

const PRIVATE = 'https://www.network.example/in/private-dennis-ritchie';

function runWith(errors: string[]): RunResult {
  const profiles = { ...emptyOutcome('profiles'), status: 'partial' as const, failed: errors.length, errors };
  return {
    runId: 'run_1',
    status: 'partial',
    streams: [profiles],
    credits: 50,
    books: { billed: 50, earlierBilled: 0, atRisk: 0, settledForEarlier: 0 },
    balanceChange: null,
    estimatedCredits: 50,
    limits: { perRun: 5000 },
  };
}

describe('the sync summary explains itself', () => {
  it('given any run, then it says what est_credits and credits are', () => {
    expect(summary(runWith([]))).toContain(
      'est_credits: what the plan expected (each unit reading what such a unit typically holds',
    );
  });

  it('given a private profile failed, then the legend says what unprocessable_target means; the demo also says it is staged', () => {
    const failed = runWith([`${PRIVATE}: unprocessable_target: target is private: ${PRIVATE}`]);
    const text = summary(failed);
    expect(text).toContain('(unprocessable_target: the network shows that target to nobody');
    expect(text).not.toContain('The demo seeds');
    expect(summary(failed, { demo: true })).toContain(
      '(The demo seeds one private profile on purpose, to show how a failure is reported.)',
    );
  });
});

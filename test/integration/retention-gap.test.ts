import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { queryDestination } from '../helpers/destinations.js';
import { useSandboxWorkspace } from '../helpers/sandbox-workspace.js';
import { createDestination } from '../../src/destinations/create-destination.js';

// Issue 39, item 8: the service keeps Triggers 90 days. A triggers sync whose last pass completed
// longer ago than that warns which stretch may be lost for good; a recent one says nothing.

describe('a stream read after its records may have expired', () => {
  const workspace = useSandboxWorkspace('svc_test_retention', { streams: { triggers: {} } });

  it('given triggers last synced 100 days ago, when synced, then a warning names the gap; synced again at once, it says nothing', async () => {
    const { destination, configPath } = workspace;
    const first = await runCliInProcess(['sync', '--config', configPath]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).not.toMatch(/gone for good/);

    const longAgo = new Date(Date.now() - 100 * 86_400_000).toISOString();
    const dest = await createDestination(destination!);
    try {
      await dest.query(
        `update seedline._seedline_state set cursor = '{"completed_at":"${longAgo}"}' where stream = 'triggers'`,
      );
    } finally {
      await dest.close();
    }
    const late = await runCliInProcess(['sync', '--config', configPath]);
    expect(late.code, late.stderr).toBe(0);
    expect(late.stderr).toContain(`the last pass completed 100 days ago (${longAgo})`);
    expect(late.stderr).toMatch(
      /keeps these records 90 days: any from .* may be gone for good\. Sync triggers more often/,
    );

    const again = await runCliInProcess(['sync', '--config', configPath]);
    expect(again.stderr).not.toMatch(/gone for good/);
    expect(
      await queryDestination(
        destination!,
        "select count(*) as n from seedline._seedline_state where stream = 'triggers'",
      ),
    ).toEqual([{ n: 1 }]);
  });
});

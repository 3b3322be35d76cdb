import type { DestinationConfig } from '../../src/destinations/destination.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli, writeConfig } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { queryDestination as query } from '../helpers/destinations.js';
import {
  countRows as count,
  inSyncWorkspace as inWorkspace,
  PRIVATE,
  PROFILES,
  syncConfig as configFor,
} from '../helpers/sync-workspace.js';

// What `seedline sync` does is tested in-process (test/integration/sync-command.test.ts); a kill -9
// needs a process of its own.
async function sync(configPath: string, env: NodeJS.ProcessEnv = {}) {
  return runCli(['sync', '--config', configPath], { env });
}

describe('crash safety', () => {
  // mid-page is a page of single calls; batch rounds are killed by test/e2e/crash-harness-*.test.ts.
  const streams = { profiles: {}, activity: { kinds: ['posts'], max_pages: 2, via: 'calls' } };
  const snapshot = async (dest: DestinationConfig) => ({
    profiles: await query(dest, `select url, full_name, headline from "${dest.schema}".profiles order by url`),
    positions: await count(dest, 'profiles__positions'),
    posts: await query(dest, `select record_key from "${dest.schema}".activity_posts order by record_key`),
  });

  let baseline: Awaited<ReturnType<typeof snapshot>>;
  beforeAll(async () => {
    await inWorkspace({ rpm: 100_000 }, async ({ sandbox, dir, dest }) => {
      // The uninterrupted reference runs in-process: only the killed runs and their reruns need a process.
      const configPath = await writeConfig(dir, configFor({ sandbox, destination: dest, streams }));
      expect((await runCliInProcess(['sync', '--config', configPath])).code).toBe(0);
      baseline = await snapshot(dest);
    });
  });

  it.each(['after-intent', 'after-submit', 'mid-results:2', 'mid-page:3'])(
    'given a kill -9 at %s, when the sync is rerun, then the tables equal an uninterrupted run and each item is billed once',
    async (point) => {
      await inWorkspace({ rpm: 100_000 }, async ({ sandbox, dir, dest }) => {
        const configPath = await writeConfig(dir, configFor({ sandbox, destination: dest, streams }));
        const crashed = await sync(configPath, { SEEDLINE_TEST_CRASH_AT: point });
        expect(crashed.signal).toBe('SIGKILL');
        const rerun = await sync(configPath);
        expect(rerun.code, rerun.stderr).toBe(0);
        expect(await snapshot(dest)).toEqual(baseline);
        const enrichTargets = sandbox.ledger.entries
          .filter((e) => e.operation === 'profiles.enrich' && e.credits > 0)
          .map((e) => e.target);
        expect(enrichTargets.length).toBe(new Set(enrichTargets).size);
        expect(enrichTargets.length).toBe(PROFILES.length + PRIVATE.length);
      });
    },
  );
});

import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { DestinationConfig } from '../../src/destinations/destination.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { runCli, tempWorkspace, writeConfig } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { queryDestination as query } from '../helpers/destinations.js';

// Single billed calls (jobs searches, activity pages, a batch item retried alone) journal their
// answer the moment it arrives: a kill -9 after that costs nothing again.
const PROFILES = ['alice-one', 'bob-two', 'carol-three', 'flaky-fred'].map(
  (p) => `https://www.network.example/in/${p}`,
);
const COMPANIES = ['acme-analytics', 'globex'].map((c) => `https://www.network.example/company/${c}`);
const STREAMS = {
  profiles: {},
  companies: {},
  jobs: { keywords: ['data engineer'], max_results: 5, via: 'calls' },
  activity: { kinds: ['posts', 'comments'], max_pages: 2, via: 'calls' },
};

const snapshot = async (dest: DestinationConfig) => ({
  profiles: await query(dest, `select url, headline from "${dest.schema}".profiles order by url`),
  jobs: await query(dest, `select url, title from "${dest.schema}".jobs order by url`),
  posts: await query(dest, `select record_key from "${dest.schema}".activity_posts order by record_key`),
  comments: await query(dest, `select record_key from "${dest.schema}".activity_comments order by record_key`),
  journal: await query(dest, `select count(*) as n from "${dest.schema}"._seedline_answers`),
});

/** Credits billed per operation (positive charges of the live key). */
function billedByOperation(sandbox: Sandbox): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const entry of sandbox.ledger.entries)
    if (entry.billed && entry.credits > 0) totals[entry.operation] = (totals[entry.operation] ?? 0) + entry.credits;
  return totals;
}

async function inWorkspace<T>(
  body: (w: { sandbox: Sandbox; configPath: string; dest: DestinationConfig }) => Promise<T>,
): Promise<T> {
  const sandbox = await startSandbox({ rpm: 100_000 });
  try {
    const dir = await tempWorkspace();
    const dest: DestinationConfig = { type: 'duckdb', path: join(dir, 'w.duckdb'), schema: 'seedline' };
    const configPath = await writeConfig(dir, {
      api: { base_url: sandbox.url, api_key: 'svc_live_journal', max_concurrency: 1 },
      destination: dest,
      seeds: { profiles: PROFILES, companies: COMPANIES },
      streams: STREAMS,
      batch: { chunk_size: 10, poll_interval_ms: 20 },
    });
    return await body({ sandbox, configPath, dest });
  } finally {
    await sandbox.close();
  }
}

describe('answer journal', () => {
  let baseline: { tables: Awaited<ReturnType<typeof snapshot>>; billed: Record<string, number> };

  beforeAll(async () => {
    await inWorkspace(async ({ sandbox, configPath, dest }) => {
      // The uninterrupted reference needs no process of its own: only the killed runs and their reruns do.
      const run = await runCliInProcess(['sync', '--config', configPath]);
      expect(run.code, run.stderr).toBe(0);
      baseline = { tables: await snapshot(dest), billed: billedByOperation(sandbox) };
    });
  });

  it('given an uninterrupted sync, then every billed answer was loaded and none is left in the journal', () => {
    expect(Number(baseline.tables.journal[0]!.n)).toBe(0);
    expect(baseline.billed['search.jobs']).toBeGreaterThan(0);
    expect(baseline.billed['profiles.activity']).toBeGreaterThan(0);
  });

  // after-answer visits: jobs searches and activity pages in run order, the flaky profile's single retry among them.
  it.each(['after-answer:1', 'after-answer:2', 'after-answer:5', 'after-answer:9'])(
    'given a kill -9 %s (an answer journaled, not loaded), when the sync is rerun, then nothing is billed twice and the tables equal an uninterrupted run',
    async (point) => {
      await inWorkspace(async ({ sandbox, configPath, dest }) => {
        const crashed = await runCli(['sync', '--config', configPath], { env: { SEEDLINE_TEST_CRASH_AT: point } });
        expect(crashed.signal).toBe('SIGKILL');
        const rerun = await runCli(['sync', '--config', configPath]);
        expect(rerun.code, rerun.stderr).toBe(0);
        expect(await snapshot(dest)).toEqual(baseline.tables);
        expect(billedByOperation(sandbox)).toEqual(baseline.billed);
      });
    },
  );
});

import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import type { DestinationConfig } from '../../src/destinations/destination.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { runCli, spawnCli, tempWorkspace, writeConfig } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import {
  billedEntries,
  crashSeedFromEnv,
  creditsByOperation,
  diffSnapshots,
  extraBilling,
  HARNESS_KEY,
  harnessSandboxOptions,
  killAtBilledEntry,
  readTables,
} from '../helpers/crash-harness.js';
import { e2eBackends } from '../helpers/destinations.js';
import { dropPostgresSchema } from '../helpers/postgres.js';

// Issue 21: the engagement and profile-section streams, YAML only, end to end on both backends:
// credits per stream equal the service's ledger, a second run spends 0, and a run killed in the
// middle of post_comments is finished by the next with no page billed twice.

const SEED = crashSeedFromEnv();
const NETWORK = 'https://www.network.example';
const NEW_STREAMS = {
  post_comments: 'posts.comments',
  post_reactions: 'posts.reactions',
  profile_recommendations: 'profiles.recommendations',
  profile_interests: 'profiles.interests',
} as const;

function configFor(sandbox: Sandbox, destination: DestinationConfig) {
  return {
    api: { base_url: sandbox.url, api_key: HARNESS_KEY, max_billed_in_flight: 1 },
    destination,
    seeds: {
      profiles: [`${NETWORK}/in/engaged-person-1`, `${NETWORK}/in/engaged-person-2`],
      companies: [`${NETWORK}/company/acme-analytics`],
    },
    streams: {
      profiles: {},
      companies: {},
      activity: { max_pages: 1 },
      company_posts: { max_pages: 1 },
      post_comments: { max_pages: 2 },
      post_reactions: { max_pages: 2 },
      profile_recommendations: { directions: ['received', 'given'] },
      profile_interests: { kinds: ['companies', 'schools'] },
    },
    batch: { chunk_size: 20, poll_interval_ms: 20, retry_billed_failures: 0 },
  };
}

interface SyncJson {
  credits: number;
  streams: { stream: string; status: string; credits: number; records: number }[];
}

async function withRun<T>(
  backend: (typeof e2eBackends)[number],
  id: string,
  body: (ctx: { sandbox: Sandbox; dest: DestinationConfig; configPath: string }) => Promise<T>,
): Promise<T | null> {
  const dir = await tempWorkspace();
  const sandbox = await startSandbox(harnessSandboxOptions(SEED));
  let dest: DestinationConfig | undefined;
  try {
    dest = await backend.make(dir, `engagement_${id}`);
    if (!dest) return null;
    return await body({ sandbox, dest, configPath: await writeConfig(dir, configFor(sandbox, dest)) });
  } finally {
    await sandbox.close();
    if (dest?.type === 'postgres') await dropPostgresSchema(dest.schema!);
    await rm(dir, { recursive: true, force: true });
  }
}

describe.each(e2eBackends)('engagement, recommendations and interests streams into $name', (backend) => {
  it('given the four streams after their parents, when synced, crashed mid post_comments and rerun, then credits match the ledger, a second run spends 0, and nothing is billed twice', async (ctx) => {
    const reference = await withRun(backend, `${backend.name}_ref`, async ({ sandbox, dest, configPath }) => {
      // The reference runs in-process: only the killed run and its rerun need a process of their own.
      const first = await runCliInProcess(['sync', '--config', configPath, '--json']);
      expect(first.code, first.stderr).toBe(0);
      await sandbox.idle();
      const result = JSON.parse(first.stdout) as SyncJson;
      const entries = billedEntries(sandbox);
      const byOperation = creditsByOperation(entries);
      for (const [stream, operation] of Object.entries(NEW_STREAMS)) {
        const outcome = result.streams.find((s) => s.stream === stream);
        expect(outcome, stream).toMatchObject({ status: 'succeeded' });
        expect([stream, outcome!.credits]).toEqual([stream, byOperation.get(operation)]);
        expect(outcome!.records, stream).toBeGreaterThan(0);
      }
      const second = JSON.parse((await runCliInProcess(['sync', '--config', configPath, '--json'])).stdout) as SyncJson;
      expect(second.credits).toBe(0);
      expect(billedEntries(sandbox)).toHaveLength(entries.length);
      const tables = await readTables(dest);
      expect(tables.duplicateKeys).toEqual([]);
      console.log(
        `[engagement e2e ${backend.name}] ${result.streams.map((s) => `${s.stream}: ${s.records} records, ${s.credits} credits`).join('; ')}`,
      );
      return { entries, snapshot: tables.snapshot };
    });
    if (!reference) return ctx.skip();

    // Killed at the third billed comments page: earlier pages are loaded, some in flight.
    const k = reference.entries.findIndex((e) => e.operation === 'posts.comments') + 3;
    const crashed = await withRun(backend, `${backend.name}_crash`, async ({ sandbox, dest, configPath }) => {
      const kill = killAtBilledEntry(sandbox, k);
      const run = spawnCli(['sync', '--config', configPath]);
      kill.attach(run.child);
      await run.exited;
      kill.disarm();
      expect(kill.fired?.entry.operation).toBe('posts.comments');
      const rerun = await runCli(['sync', '--config', configPath]);
      expect(rerun.code, rerun.stderr).toBe(0);
      await sandbox.idle();
      const extra = extraBilling(reference.entries, billedEntries(sandbox));
      expect(extra.credits, `billed again: ${extra.targets.join('; ')}`).toBe(0);
      const tables = await readTables(dest);
      expect(tables.duplicateKeys).toEqual([]);
      expect(diffSnapshots(reference.snapshot, tables.snapshot)).toEqual([]);
      return true;
    });
    expect(crashed).toBe(true);
  });
});

import { protocolMessages } from '../helpers/airbyte-messages.js';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { runCli, spawnCli, tempWorkspace } from '../helpers/cli.js';

const KEY = 'svc_live_airbyte_compact';
const SEEDS = 2_500;
const profile = (i: number) => `https://www.network.example/in/person-${i}`;

/** The last STATE of each stream: what a platform keeps between reads. */
const lastStates = (emitted: any[]) => [
  ...new Map(
    emitted.filter((m) => m.type === 'STATE').map((m) => [m.state.stream.stream_descriptor.name, m.state]),
  ).values(),
];

// Issue 36, item 3: a state that fits, whatever the seed list's length.
describe('airbyte read with a compact seed ledger', () => {
  let sandbox: Sandbox;
  let dir: string;
  /** While set, company items are held unresolved: `held` is told of the first, `opened` lets them go. */
  let companiesGate: { held: () => void; opened: Promise<void> } | undefined;

  /** A config over `profiles` (seed numbers) and two companies, its working store named `store`. */
  const config = async (store: string, profiles: number[], streams: Record<string, unknown> = {}) => {
    await writeFile(join(dir, `${store}.csv`), ['url', ...profiles.map(profile)].join('\n'));
    const path = join(dir, `${store}.json`);
    await writeFile(
      path,
      JSON.stringify({
        api: { base_url: sandbox.url, api_key: KEY },
        destination: { type: 'duckdb', path: `${store}.duckdb` },
        seeds: { profiles: { file: `${store}.csv`, column: 'url' }, companies: ['acme-analytics', 'globex'] },
        streams: { profiles: { refresh_after: '7d' }, ...streams },
        budget: { max_credits_per_run: 20_000 },
      }),
    );
    return path;
  };
  const catalog = async (names: string[]) => {
    const path = join(dir, `catalog-${names.join('-')}.json`);
    const stream = (name: string) => ({ name, json_schema: {}, supported_sync_modes: ['incremental'] });
    await writeFile(
      path,
      JSON.stringify({
        streams: names.map((name) => ({
          stream: stream(name),
          sync_mode: 'incremental',
          destination_sync_mode: 'append_dedup',
        })),
      }),
    );
    return path;
  };
  const read = async (configPath: string, catalogPath: string, state?: unknown[]) => {
    const args = ['airbyte', 'read', '--config', configPath, '--catalog', catalogPath];
    if (state) {
      await writeFile(join(dir, 'state.json'), JSON.stringify(state));
      args.push('--state', join(dir, 'state.json'));
    }
    const result = await runCli(args);
    expect(result.code, result.stderr).toBe(0);
    return protocolMessages(result.stdout);
  };
  const enrichedTargets = (since: number) =>
    sandbox.ledger.entries
      .slice(since)
      .filter((e) => e.operation === 'profiles.enrich' && e.credits > 0)
      .map((e) => e.target);

  beforeAll(async () => {
    sandbox = await startSandbox({
      rpm: 1_000_000,
      beforeBatchItem: (item) => {
        if (item.operation !== 'companies.enrich' || !companiesGate) return Promise.resolve();
        companiesGate.held();
        return companiesGate.opened;
      },
    });
    dir = await tempWorkspace();
  });
  afterAll(() => sandbox?.close());

  it('given 2,500 seeds, when read runs, then the STATE carries a compact ledger; fed to a fresh store it spends 0, and with the list changed it buys only the seeds added', async () => {
    const all = Array.from({ length: SEEDS }, (_, i) => i);
    const profilesOnly = await catalog(['profiles']);
    const first = await read(await config('first', all), profilesOnly);
    const [state] = lastStates(first);
    const blob = state.stream.stream_state;
    expect(blob.seeds).toBeUndefined();
    expect(blob.seed_ledger.seeds).toBe(SEEDS);
    expect(JSON.stringify(state).length).toBeLessThan(100_000);
    expect(new Set(enrichedTargets(0)).size).toBe(SEEDS);

    const before = sandbox.ledger.entries.length;
    const again = await read(await config('fresh', all), profilesOnly, [state]);
    expect(enrichedTargets(before)).toEqual([]);
    expect(again.filter((m) => m.type === 'RECORD')).toEqual([]);

    // 100 seeds dropped, 60 added: only the 60 are bought.
    const changed = [...all.slice(100), ...Array.from({ length: 60 }, (_, i) => SEEDS + i)];
    const since = sandbox.ledger.entries.length;
    const third = await read(await config('changed', changed), profilesOnly, [state]);
    expect(enrichedTargets(since).sort()).toEqual(Array.from({ length: 60 }, (_, i) => profile(SEEDS + i)).sort());
    expect(third.filter((m) => m.type === 'RECORD' && m.record.stream === 'profiles')).toHaveLength(60);
    expect(third.some((m) => m.type === 'LOG' && /seeds are due again/.test(m.log.message))).toBe(false);
  });

  it('given a read stopped by SIGTERM while a batch job is open, when resumed in a fresh store from its STATE, then the stopped streams end INCOMPLETE and the job is read, not bought again', async () => {
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    let heldNow!: () => void;
    const held = new Promise<void>((resolve) => (heldNow = resolve));
    companiesGate = { held: heldNow, opened };
    const configPath = await config('stopped', [1, 2, 3], { companies: {}, account: {} });
    const catalogPath = await catalog(['profiles', 'companies', 'account']);
    const since = sandbox.ledger.entries.length;
    const running = spawnCli(['airbyte', 'read', '--config', configPath, '--catalog', catalogPath]);
    await held;
    running.child.kill('SIGTERM');
    const code = await running.exited;
    companiesGate = undefined;
    open();
    expect(code, running.stderr).toBe(0);
    const stopped = protocolMessages(running.stdout);
    const finalStatus = (name: string) =>
      stopped.findLast(
        (m) =>
          m.type === 'TRACE' &&
          m.trace.type === 'STREAM_STATUS' &&
          m.trace.stream_status.stream_descriptor.name === name,
      )?.trace.stream_status.status;
    expect([finalStatus('profiles'), finalStatus('companies'), finalStatus('account')]).toEqual([
      'COMPLETE',
      'INCOMPLETE',
      'INCOMPLETE',
    ]);
    expect(stopped.filter((m) => m.type === 'TRACE' && m.trace.type === 'ERROR')).toHaveLength(2);
    const companiesState = lastStates(stopped).find((s) => s.stream.stream_descriptor.name === 'companies');
    // Its open jobs (submitted, or an intent the stop caught before its answer) travel in the STATE, Idempotency-Keys and all.
    const openJobs = companiesState.stream.stream_state.batches as { status: string; itemCount: number }[];
    expect(openJobs.every((b) => b.status === 'submitted' || b.status === 'intent')).toBe(true);
    expect(openJobs.reduce((n, b) => n + b.itemCount, 0)).toBeGreaterThanOrEqual(1);

    const resumed = await read(
      await config('resumed', [1, 2, 3], { companies: {}, account: {} }),
      catalogPath,
      lastStates(stopped),
    );
    expect(resumed.filter((m) => m.type === 'RECORD' && m.record.stream === 'companies')).toHaveLength(2);
    const billedCompanies = sandbox.ledger.entries
      .slice(since)
      .filter((e) => e.operation === 'companies.enrich' && e.credits > 0)
      .map((e) => e.target);
    expect(billedCompanies.sort()).toEqual([...new Set(billedCompanies)].sort());
    expect(billedCompanies).toHaveLength(2);
    expect(enrichedTargets(since)).toHaveLength(3);
  });

  it('given a stream over a parent table, when a read in a fresh store is fed the STATE, then a WARN LOG says the parent table is not there to read', async () => {
    const streams = { activity: { kinds: ['posts'], max_pages: 1, via: 'calls' } };
    const catalogPath = await catalog(['profiles', 'activity_posts']);
    const first = await read(await config('parented', [7, 8], streams), catalogPath);
    const again = await read(await config('parented-fresh', [7, 8], streams), catalogPath, lastStates(first));
    const warnings = again.filter((m) => m.type === 'LOG' && m.log.level === 'WARN').map((m) => m.log.message);
    expect(warnings).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^stream activity reads its partitions from profiles, which this working store does not hold/,
        ),
      ]),
    );
  });
});

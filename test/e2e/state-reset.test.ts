import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DestinationConfig } from '../../src/destinations/destination.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { runCli, tempWorkspace, writeConfig } from '../helpers/cli.js';
import { e2eBackends, queryDestination as query } from '../helpers/destinations.js';

// Issue 18, item 4: `state show`, and `state reset` making a stream or one seed due, data tables untouched.
describe.each(e2eBackends)('seedline state into $name', ({ make }) => {
  let sandbox: Sandbox;
  let dest: DestinationConfig | undefined;
  let configPath: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ rpm: 100_000 });
    const dir = await tempWorkspace();
    dest = await make(dir, 'state_reset');
    if (!dest) return;
    configPath = await writeConfig(dir, {
      api: { base_url: sandbox.url, api_key: 'svc_test_state' },
      destination: dest,
      seeds: { profiles: ['ada-lovelace', 'grace-hopper'] },
      streams: { profiles: {}, activity: { kinds: ['posts'], max_pages: 1 } },
    });
  });
  afterAll(() => sandbox?.close());

  const profileCalls = () => sandbox.ledger.entries.filter((e) => e.operation === 'profiles.enrich').map((e) => e.target);

  it('given a synced config, when one seed is reset, then state show says so, only that seed is due, the next sync fetches exactly it, and its rows were never deleted', async (ctx) => {
    if (!dest) return ctx.skip();
    expect((await runCli(['sync', '--config', configPath])).code).toBe(0);
    const shown = JSON.parse((await runCli(['state', 'show', '--config', configPath, '--json'])).stdout) as { stream: string; seeds: Record<string, number>; partitions: number }[];
    expect(shown).toEqual([
      expect.objectContaining({ stream: 'profiles', seeds: { fetched: 2 }, partitions: 0 }),
      expect.objectContaining({ stream: 'activity', seeds: {}, partitions: 2 }),
    ]);

    const reset = await runCli(['state', 'reset', '--config', configPath, '--streams', 'profiles,activity', '--seed', 'https://www.network.example/in/Ada-Lovelace/?trk=x', '--json']);
    expect(reset.code, reset.stderr).toBe(0);
    expect(JSON.parse(reset.stdout)).toEqual([{ stream: 'profiles', seeds: 1, partitions: 0 }, { stream: 'activity', seeds: 0, partitions: 1 }]);
    const schema = dest.schema ?? 'seedline';
    expect(Number((await query(dest, `select count(*) as n from ${schema}.profiles`))[0]!.n)).toBe(2);

    const plan = JSON.parse((await runCli(['plan', '--config', configPath, '--json'])).stdout) as { streams: { stream: string; units: number }[] };
    expect(plan.streams.find((s) => s.stream === 'profiles')).toMatchObject({ units: 1 });
    const before = profileCalls().length;
    expect((await runCli(['sync', '--config', configPath])).code).toBe(0);
    expect(profileCalls().slice(before)).toEqual([expect.stringContaining('ada-lovelace')]);
  }, 180_000);

  it('given reset without --streams or with an unknown one, then it exits 2 and changes nothing', async (ctx) => {
    if (!dest) return ctx.skip();
    expect((await runCli(['state', 'reset', '--config', configPath])).code).toBe(2);
    const unknown = await runCli(['state', 'reset', '--config', configPath, '--streams', 'profilez']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown stream "profilez"/);
  }, 60_000);
});

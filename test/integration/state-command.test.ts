import { describe, expect, it } from 'vitest';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { e2eBackends, queryDestination as query } from '../helpers/destinations.js';
import { useSandboxWorkspace } from '../helpers/sandbox-workspace.js';

// Issue 18, item 4: `state show`, and `state reset` making a stream or one seed due, data tables untouched.
describe.each(e2eBackends)('seedline state into $name', ({ make }) => {
  const workspace = useSandboxWorkspace(
    'svc_test_state',
    {
      seeds: { profiles: ['ada-lovelace', 'grace-hopper'] },
      streams: { profiles: {}, activity: { kinds: ['posts'], max_pages: 1 } },
    },
    (dir) => make(dir, 'state_reset'),
  );

  const profileCalls = () =>
    workspace.sandbox.ledger.entries.filter((e) => e.operation === 'profiles.enrich').map((e) => e.target);

  it('given a synced config, when one seed is reset, then state show says so, only that seed is due, the next sync fetches exactly it, and its rows were never deleted', async (ctx) => {
    const { destination: dest, configPath } = workspace;
    if (!dest) return ctx.skip();
    expect((await runCliInProcess(['sync', '--config', configPath])).code).toBe(0);
    const shown = JSON.parse((await runCliInProcess(['state', 'show', '--config', configPath, '--json'])).stdout) as {
      stream: string;
      seeds: Record<string, number>;
      partitions: number;
    }[];
    expect(shown).toEqual([
      expect.objectContaining({ stream: 'profiles', seeds: { fetched: 2 }, partitions: 0 }),
      expect.objectContaining({ stream: 'activity', seeds: {}, partitions: 2 }),
    ]);
    // Each partition's cursor, as many as asked for, the latest changed first.
    const withCursors = await runCliInProcess([
      'state',
      'show',
      '--config',
      configPath,
      '--streams',
      'activity',
      '--cursors',
      '1',
    ]);
    expect(withCursors.stdout).toMatch(/activity: the 1 latest of 2 partition state\(s\)/);
    expect(withCursors.stdout).toMatch(/kind=posts .*\{"completed_at":"/);
    expect(withCursors.stdout).toContain('(1 more: --cursors N shows more, --json shows them whole)');
    const cursors = JSON.parse(
      (await runCliInProcess(['state', 'show', '--config', configPath, '--streams', 'activity', '--cursors', '--json']))
        .stdout,
    ) as { cursors: { partition: string; cursor: { completed_at?: string } }[] }[];
    expect(cursors[0]!.cursors).toHaveLength(2);
    expect(cursors[0]!.cursors.every((c) => typeof c.cursor.completed_at === 'string')).toBe(true);
    const refused = await runCliInProcess(['state', 'show', '--config', configPath, '--cursors', '0']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--cursors: expected a number of partitions from 1 to 1000, got "0"');

    const reset = await runCliInProcess([
      'state',
      'reset',
      '--config',
      configPath,
      '--streams',
      'profiles,activity',
      '--seed',
      'https://www.network.example/in/Ada-Lovelace/?trk=x',
      '--json',
    ]);
    expect(reset.code, reset.stderr).toBe(0);
    expect(JSON.parse(reset.stdout)).toEqual([
      { stream: 'profiles', seeds: 1, partitions: 0 },
      { stream: 'activity', seeds: 0, partitions: 1 },
    ]);
    const schema = dest.schema ?? 'seedline';
    expect(Number((await query(dest, `select count(*) as n from ${schema}.profiles`))[0]!.n)).toBe(2);

    const plan = JSON.parse((await runCliInProcess(['plan', '--config', configPath, '--json'])).stdout) as {
      streams: { stream: string; units: number }[];
    };
    expect(plan.streams.find((s) => s.stream === 'profiles')).toMatchObject({ units: 1 });
    const before = profileCalls().length;
    expect((await runCliInProcess(['sync', '--config', configPath])).code).toBe(0);
    expect(profileCalls().slice(before)).toEqual([expect.stringContaining('ada-lovelace')]);
  });

  it('given reset without --streams or with an unknown one, then it exits 2 and changes nothing', async (ctx) => {
    const { destination: dest, configPath } = workspace;
    if (!dest) return ctx.skip();
    expect((await runCliInProcess(['state', 'reset', '--config', configPath])).code).toBe(2);
    const unknown = await runCliInProcess(['state', 'reset', '--config', configPath, '--streams', 'profilez']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown stream "profilez"/);
  });
});

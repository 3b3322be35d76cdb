import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { watchProfiles } from '../helpers/watched-profiles.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { seedKey } from '../../src/util/seed-keys.js';
import { runCli, tempWorkspace, writeConfig } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';

const KEY = 'svc_live_refresh_kill';
const DAY = 86_400_000;
const WATCHED = Array.from({ length: 8 }, (_, i) => `https://www.network.example/in/kill-watched-${i}`);

/** The profiles whose Triggers name a field the profiles stream refreshes on (the service's view). */
async function changed(sandbox: Sandbox): Promise<string[]> {
  const get = async (path: string) =>
    ((await (await fetch(`${sandbox.url}${path}`, { headers: { 'x-api-key': KEY } })).json()) as { data: any[] }).data;
  const urlOf = new Map((await get('/v1/signals?limit=100')).map((s) => [s.id, s.target.site_url as string]));
  const fields = ['headline', 'position', 'company', 'location', 'skills', 'education'];
  return [
    ...new Set(
      (await get('/v1/triggers?limit=100'))
        .filter((t) => Object.keys(t.diff).some((f) => fields.includes(f)))
        .map((t) => seedKey('profile', urlOf.get(t.signal_id)!)),
    ),
  ].sort();
}

// Issue 37: a kill -9 between a Trigger's arrival and the refresh it causes loses neither.
describe('refresh on change across a kill -9', () => {
  let sandbox: Sandbox;
  let dir: string;
  beforeAll(async () => {
    sandbox = await startSandbox({ rpm: 100_000, startTime: new Date() });
    dir = await tempWorkspace();
    await watchProfiles(sandbox, KEY, WATCHED);
  });
  afterAll(() => sandbox?.close());

  it('given Triggers loaded for watched profiles, when the sync refreshing them is killed after submitting its job, then the rerun refreshes each changed profile once and no other', async () => {
    const configPath = await writeConfig(dir, {
      api: { base_url: sandbox.url, api_key: KEY },
      destination: { type: 'duckdb', path: 'kill.duckdb' },
      seeds: { profiles: WATCHED },
      streams: { profiles: { refresh_after: '1d', refresh_after_watched: '90d' }, signals: {}, triggers: {} },
    });
    // The first load is setup, run in-process: the killed sync and its rerun have processes of their own.
    const first = await runCliInProcess(['sync', '--config', configPath]);
    expect(first.code, first.stderr).toBe(0);

    // The Signals' checks of the next days run on the sandbox's clock: their Triggers come after the first fetch.
    await sandbox.clock.advance(10 * DAY);
    const due = await changed(sandbox);
    expect(due.length).toBeGreaterThan(0);
    const since = sandbox.ledger.entries.length;

    const killed = await runCli(['sync', '--config', configPath], { env: { SEEDLINE_TEST_CRASH_AT: 'after-submit' } });
    expect(killed.signal).toBe('SIGKILL');
    const rerun = await runCli(['sync', '--config', configPath]);
    expect(rerun.code, rerun.stderr).toBe(0);

    const enriched = sandbox.ledger.entries
      .slice(since)
      .filter((e) => e.operation === 'profiles.enrich' && e.credits > 0)
      .map((e) => seedKey('profile', e.target))
      .sort();
    expect(enriched).toEqual(due);
  });
});

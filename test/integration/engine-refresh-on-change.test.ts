import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { watchProfiles } from '../helpers/watched-profiles.js';
import { parseConfig } from '../../src/config/load-config.js';
import { planSync, prepareSync, runSync, type RunResult } from '../../src/engine/pipeline.js';
import type { Reporter, StreamPlan } from '../../src/engine/stream-context.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import { readReportData } from '../../src/report/report-data.js';
import { seedKey } from '../../src/util/seed-keys.js';
import { startEngineRig, type EngineRig } from '../helpers/engine.js';

const KEY = 'svc_live_refresh_on_change';
const DAY = 86_400_000;
const silent: Reporter = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };
const profile = (i: number) => `https://www.network.example/in/watched-person-${i}`;
const WATCHED = Array.from({ length: 10 }, (_, i) => profile(i));
const UNWATCHED = Array.from({ length: 4 }, (_, i) => profile(100 + i));
const STREAMS = { profiles: { refresh_after: '1d', refresh_after_watched: '90d' }, signals: {}, triggers: {} };

let rig: EngineRig;

async function prepared(only?: string[]) {
  const raw = {
    api: { base_url: rig.sandbox.url, api_key: KEY },
    destination: { type: 'duckdb', path: 'w.duckdb' },
    seeds: { profiles: [...WATCHED, ...UNWATCHED] },
    streams: STREAMS,
    batch: { poll_interval_ms: 10 },
  };
  return prepareSync({
    config: parseConfig(JSON.stringify(raw), 'test'),
    baseDir: rig.dir,
    manifests: await loadManifests(),
    destination: rig.destination,
    now: () => rig.sandbox.clock.now(),
    ...(only ? { only } : {}),
  });
}

/** One sync on the sandbox's virtual clock; answers the profiles it bought. */
async function sync(): Promise<{ result: RunResult; enriched: string[] }> {
  const before = rig.sandbox.ledger.entries.length;
  const result = await runSync(await prepared(), { client: rig.client, reporter: silent });
  const enriched = rig.sandbox.ledger.entries
    .slice(before)
    .filter((e) => e.operation === 'profiles.enrich' && e.credits > 0)
    .map((e) => seedKey('profile', e.target));
  return { result, enriched: enriched.sort() };
}

/** The watched profiles whose Triggers named a field the profiles stream refreshes on. */
async function changedProfiles(): Promise<string[]> {
  const answer = await fetch(`${rig.sandbox.url}/v1/triggers?limit=100`, { headers: { 'x-api-key': KEY } });
  const triggers = ((await answer.json()) as { data: { signal_id: string; diff: Record<string, unknown> }[] }).data;
  const signals = (
    (await (await fetch(`${rig.sandbox.url}/v1/signals?limit=100`, { headers: { 'x-api-key': KEY } })).json()) as {
      data: { id: string; target: { site_url: string } }[];
    }
  ).data;
  const urlOf = new Map(signals.map((s) => [s.id, s.target.site_url]));
  const declared = ['headline', 'position', 'company', 'location', 'skills', 'education'];
  return [
    ...new Set(
      triggers
        .filter((t) => Object.keys(t.diff).some((f) => declared.includes(f)))
        .map((t) => seedKey('profile', urlOf.get(t.signal_id)!)),
    ),
  ].sort();
}

// Issue 37, item 1: Signals drive refresh.
describe('refresh on change, against the sandbox and DuckDB', () => {
  beforeEach(async () => {
    rig = await startEngineRig(KEY, { rpm: 100_000, startTime: new Date() });
    await watchProfiles(rig.sandbox, KEY, WATCHED);
  });
  afterEach(() => rig.close());

  it('given profiles watched by Signals, when Triggers report changes to some, then the next sync refreshes the changed and the stale unwatched ones only, and the plan says how many are due by change', async () => {
    const first = await sync();
    expect(first.enriched).toHaveLength(WATCHED.length + UNWATCHED.length);

    await rig.sandbox.clock.advance(10 * DAY);
    const changed = await changedProfiles();
    console.info(`[refresh on change] ${changed.length} of ${WATCHED.length} watched profiles changed`);
    expect(changed.length).toBeGreaterThan(0);
    expect(changed.length).toBeLessThan(WATCHED.length);

    // The Triggers reach the warehouse (here by their stream alone): the plan reads them there.
    await runSync(await prepared(['signals', 'triggers']), { client: rig.client, reporter: silent });
    const plan = (await planSync(await prepared())).find((p) => p.stream === 'profiles') as StreamPlan;
    expect(plan).toMatchObject({ units: changed.length + UNWATCHED.length, dueByChange: changed.length });

    const second = await sync();
    expect(second.enriched).toEqual([...changed, ...UNWATCHED.map((u) => seedKey('profile', u))].sort());
    // The run's books say why each refresh was bought (kept in _seedline_runs with the stream's outcome).
    expect(second.result.streams.find((o) => o.stream === 'profiles')?.refreshes).toEqual({
      byChange: changed.length,
      byAge: 0,
    });
    // The plan weighs that against refresh by age alone: each watched profile once a day (refresh_after 1d) for 30 days.
    const after = (await planSync(await prepared())).find((p) => p.stream === 'profiles') as StreamPlan;
    expect(after.refreshSaving).toEqual({
      watched: WATCHED.length,
      windowDays: 30,
      byChange: changed.length,
      byAge: 0,
      credits: changed.length,
      byAgeAlone: WATCHED.length * 30,
      byAgeAloneCredits: WATCHED.length * 30,
    });

    // The report shows the same beside its Triggers chart.
    const report = await readReportData(
      rig.destination,
      (await prepared()).options.config,
      30,
      rig.sandbox.clock.now(),
      new Map([['profiles', 'profile']]),
    );
    expect(report.refreshesOnChange).toEqual([
      {
        stream: 'profiles',
        watched: WATCHED.length,
        byChange: changed.length,
        byAge: 0,
        byAgeAlone: WATCHED.length * 30,
      },
    ]);

    // Fetched after its Trigger, a changed profile is fresh again: the next sync buys nothing.
    const third = await sync();
    expect(third.enriched).toEqual([]);
  });
});

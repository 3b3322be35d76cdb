import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load-config.js';
import { prepareSync, runSync, type RunResult } from '../../src/engine/pipeline.js';
import type { Reporter } from '../../src/engine/stream-context.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import { startEngineRig, type EngineRig } from '../helpers/engine.js';

const KEY = 'svc_live_refresh_schedule';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** When the nightly tick fires. */
const NIGHT_1 = new Date('2026-11-01T02:30:00Z');
const silent: Reporter = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };

let rig: EngineRig;

/** One sync of `streams` whose clock reads `at` throughout. */
async function syncAt(streams: Record<string, unknown>, seeds: Record<string, unknown>, at: Date): Promise<RunResult> {
  const raw = {
    api: { base_url: rig.sandbox.url, api_key: KEY },
    destination: { type: 'duckdb', path: 'w.duckdb' },
    seeds,
    streams,
    batch: { poll_interval_ms: 10 },
  };
  const prepared = await prepareSync({
    config: parseConfig(JSON.stringify(raw), 'test'),
    baseDir: rig.dir,
    manifests: await loadManifests(),
    destination: rig.destination,
    now: () => at,
  });
  return runSync(prepared, { client: rig.client, reporter: silent });
}

describe('refresh_after under a schedule, against the sandbox and DuckDB', () => {
  beforeEach(async () => {
    rig = await startEngineRig(KEY, { rpm: 100_000 });
  });
  afterEach(() => rig.close());

  // The data of a run is stamped as it loads, some time after the tick that started it: here 40 minutes.
  const loadedAfterTheTick = new Date(NIGHT_1.getTime() + 40 * 60_000);

  it('given jobs with refresh_after 1d loaded 40 minutes after last night’s tick, when tonight’s tick runs 24 h after it, then the jobs are searched again', async () => {
    const streams = { jobs: { keywords: ['data engineer'], per_company: false, refresh_after: '1d' } };
    await syncAt(streams, {}, loadedAfterTheTick);

    const tonight = await syncAt(streams, {}, new Date(NIGHT_1.getTime() + DAY));

    expect(tonight.streams[0]).toMatchObject({ stream: 'jobs', skipped: 0 });
  });

  it('given profiles with refresh_after 7d fetched 40 minutes after last week’s tick, when this week’s tick runs 7 days after it, then they are fetched again; a day earlier they are still fresh', async () => {
    const streams = { profiles: { refresh_after: '7d' } };
    const seeds = { profiles: ['https://www.network.example/in/refresh-ann'] };
    await syncAt(streams, seeds, loadedAfterTheTick);

    const dayEarly = await syncAt(streams, seeds, new Date(NIGHT_1.getTime() + 6 * DAY));
    const thisWeek = await syncAt(streams, seeds, new Date(NIGHT_1.getTime() + 7 * DAY));

    expect(dayEarly.streams[0]).toMatchObject({ stream: 'profiles', skipped: 1 });
    expect(thisWeek.streams[0]).toMatchObject({ stream: 'profiles', skipped: 0 });
    expect(
      rig.sandbox.ledger.entries.filter((e) => e.billed && e.credits > 0 && e.target.includes('refresh-ann')),
    ).toHaveLength(2);
  });
});

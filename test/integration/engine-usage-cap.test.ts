import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load-config.js';
import { prepareSync, runSync, type RunResult } from '../../src/engine/pipeline.js';
import type { Reporter } from '../../src/engine/stream-context.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import { startEngineRig, type EngineRig } from '../helpers/engine.js';

const KEY = 'svc_test_usage';
const HOUR_MS = 3_600_000;
/** The sandbox's clock starts on 2026-11-01; these runs happen once November has closed. */
const DECEMBER_2 = new Date('2026-12-02T00:00:00Z');
const NOVEMBER = '2026-11-01T00:00:00.000Z';

/**
 * GET /v1/usage/signals answers at most 1000 rows, highest credits_charged first, with no cursor
 * (spec): a month with more external_ids than that must be read in smaller windows.
 */
describe('usage stream when a month has more than 1000 external_ids', () => {
  let rig: EngineRig;
  let notices: string[];
  beforeEach(async () => {
    rig = await startEngineRig(KEY, { rpm: 100_000 });
    notices = [];
  });
  afterEach(async () => rig.close());

  /** Creates `count` Signals with external_ids `<prefix>-<i>` checked every `interval`, and lets their first (baseline) check run now. */
  async function checkSignals(prefix: string, count: number, interval = '30d'): Promise<void> {
    for (let start = 0; start < count; start += 100) {
      const batch = Array.from({ length: Math.min(100, count - start) }, (_, j) => start + j);
      await Promise.all(
        batch.map((i) =>
          rig.client.createSignal({
            name: `${prefix} ${i}`,
            target: { type: 'profile', site_url: `https://www.network.example/in/${prefix}-${i}` },
            schedule: { interval },
            criteria: { mode: 'field_change', fields: ['headline'] },
            external_id: `${prefix}-${i}`,
          }),
        ),
      );
    }
    await rig.sandbox.clock.advance(HOUR_MS);
  }

  async function sync(now: Date): Promise<RunResult> {
    const raw = {
      api: { base_url: 'sandbox', api_key: KEY },
      destination: { type: 'duckdb', path: 'w.duckdb' },
      streams: { usage: { months: 2 } },
    };
    const prepared = await prepareSync({
      config: parseConfig(JSON.stringify(raw), 'test'),
      baseDir: rig.dir,
      manifests: await loadManifests(),
      destination: rig.destination,
      now: () => now,
    });
    const reporter: Reporter = {
      streamStarted() {},
      streamProgress() {},
      streamFinished() {},
      notice: (stream, message) => notices.push(`${stream}: ${message}`),
    };
    return runSync(prepared, { client: rig.client, reporter });
  }
  const november = async () =>
    (
      await rig.destination.query<{ n: number; checks: number }>(
        `select count(*)::integer as n, coalesce(sum(checks), 0)::integer as checks from seedline.usage where window_from = timestamptz '${NOVEMBER}'`,
      )
    )[0];

  it('given a closed month of 1,200 external_ids, when synced, then every row is loaded with its counts added up over the pieces read and the month is final', async () => {
    // 600 ids checked on the 1st, 15th and 29th; 600 more on the 20th: the whole month, and its
    // second half, each hold 1,200 ids; every narrower window read holds 600.
    await checkSignals('early', 600, '14d');
    await rig.sandbox.clock.set(new Date('2026-11-20T00:00:00Z'));
    await checkSignals('late', 600);
    await rig.sandbox.clock.set(new Date('2026-11-30T00:00:00Z'));

    const first = await sync(DECEMBER_2);
    expect(first.streams[0]?.status).toBe('succeeded');
    expect(await november()).toEqual({ n: 1200, checks: 600 * 3 + 600 });
    const early = await rig.destination.query<{ checks: number; credits_charged: number }>(
      `select checks::integer as checks, credits_charged::integer as credits_charged from seedline.usage where external_id = 'early-7' and window_from = timestamptz '${NOVEMBER}'`,
    );
    expect(early).toEqual([{ checks: 3, credits_charged: 3 }]);
    expect(notices).toEqual([]);

    const second = await sync(new Date(DECEMBER_2.getTime() + HOUR_MS));
    expect(second.streams[0]?.skipped).toBe(1);
  });

  it('given 1,001 external_ids checked on one day, when synced, then the 1,000 rows that came are loaded, a notice names the day, and the month is read again next run', async () => {
    await checkSignals('same-day', 1001);

    const first = await sync(DECEMBER_2);
    expect(first.streams[0]?.status).toBe('succeeded');
    expect(await november()).toEqual({ n: 1000, checks: 1000 });
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(
      /^usage: 2026-11-01T00:00:00\.000Z to 2026-11-02T00:00:00\.000Z: 1000 usage rows came back for one day.*not marked final/,
    );

    const second = await sync(new Date(DECEMBER_2.getTime() + HOUR_MS));
    expect(second.streams[0]?.skipped).toBe(0);
  });
});

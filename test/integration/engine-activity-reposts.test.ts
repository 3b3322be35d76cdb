import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load-config.js';
import { prepareSync, runSync, type RunResult } from '../../src/engine/pipeline.js';
import type { Reporter } from '../../src/engine/stream-context.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import type { RepostShape } from '../../src/sandbox/options.js';
import { startEngineRig, type EngineRig } from '../helpers/engine.js';

const KEY = 'svc_test_reposts';
const PROFILE = 'https://www.network.example/in/grace-hopper';
const DAY_MS = 86_400_000;
const silent: Reporter = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };

/**
 * Reposts carry "metadata of the original post (field names not listed)" (spec): here the
 * original's `posted_at` sits beside the repost's own fields, and the reposted posts are 200 to 600
 * days old, so the original's date says nothing about when the repost was made.
 */
describe('activity reposts of older posts', () => {
  let rig: EngineRig;
  afterEach(async () => rig.close());

  async function start(reposts: RepostShape): Promise<void> {
    rig = await startEngineRig(KEY, { rpm: 100_000, reposts });
  }
  async function sync(): Promise<RunResult> {
    const raw = {
      api: { base_url: 'sandbox', api_key: KEY },
      destination: { type: 'duckdb', path: 'w.duckdb' },
      seeds: { profiles: [PROFILE] },
      streams: { profiles: {}, activity: { kinds: ['reposts'], max_pages: 2 } },
    };
    const prepared = await prepareSync({
      config: parseConfig(JSON.stringify(raw), 'test'),
      baseDir: rig.dir,
      manifests: await loadManifests(),
      destination: rig.destination,
      now: () => rig.sandbox.clock.now(),
    });
    return runSync(prepared, { client: rig.client, reporter: silent });
  }
  const loaded = async () =>
    (await rig.destination.query<{ urn: string }>('select urn from seedline.activity_reposts')).map((r) =>
      String(r.urn),
    );
  /** URNs on the first page of the profile's reposts, as the service shows them now. */
  async function firstPage(): Promise<string[]> {
    const answer = await rig.client.profileActivity({ url: PROFILE, kind: 'reposts', per_page: 25 });
    return ((answer.data as { reposts: Array<{ urn: string }> }).reposts ?? []).map((r) => String(r.urn));
  }

  /** Two runs 60 days apart: every repost the service shows on page 1 after that must be loaded. */
  async function expectNewRepostsLoaded(): Promise<void> {
    const first = await sync();
    expect(first.status).toBe('succeeded');
    expect((await loaded()).length).toBeGreaterThan(0);

    await rig.sandbox.clock.advance(60 * DAY_MS);
    const before = await loaded();
    const page = await firstPage();
    expect(page.filter((urn) => !before.includes(urn)).length).toBeGreaterThan(0);

    const second = await sync();
    expect(second.status).toBe('succeeded');
    expect(await loaded()).toEqual(expect.arrayContaining(page));
  }

  it("given reposts carrying the original post's posted_at, when new reposts of older posts appear, then the next run loads them (stamped by reposted_at)", async () => {
    await start({ original: 'flat', original_age_days: [200, 600] });
    await expectNewRepostsLoaded();
  });

  it("given reposts carrying the original post's posted_at and no reposted_at, when new reposts of older posts appear, then the next run loads them (no stamp stops paging)", async () => {
    await start({ original: 'flat', reposted_at: false, original_age_days: [200, 600] });
    await expectNewRepostsLoaded();
  });
});

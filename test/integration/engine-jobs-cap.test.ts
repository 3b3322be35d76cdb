import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load-config.js';
import { prepareSync, runSync, type RunResult } from '../../src/engine/pipeline.js';
import type { Reporter } from '../../src/engine/stream-context.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import { startEngineRig, type EngineRig } from '../helpers/engine.js';

const COMPANY = 'https://www.network.example/company/initech';
const DAY_MS = 86_400_000;

/**
 * Job search answers hold at most `max_results` postings, newest first, with no page further
 * (spec, POST /v1/search/jobs); later runs ask only for postings since the last run.
 */
describe('jobs stream when a board has more open postings than max_results', () => {
  let rig: EngineRig;
  let notices: string[];
  beforeEach(async () => {
    rig = await startEngineRig('svc_test_jobs', { rpm: 100_000 });
    notices = [];
  });
  afterEach(async () => rig.close());

  async function sync(maxResults: number): Promise<RunResult> {
    const raw = {
      api: { base_url: 'sandbox', api_key: 'svc_test_jobs' },
      destination: { type: 'duckdb', path: 'w.duckdb' },
      seeds: { companies: [COMPANY] },
      streams: { jobs: { per_company: true, max_results: maxResults } },
    };
    const prepared = await prepareSync({
      config: parseConfig(JSON.stringify(raw), 'test'),
      baseDir: rig.dir,
      manifests: await loadManifests(),
      destination: rig.destination,
      now: () => rig.sandbox.clock.now(),
    });
    const reporter: Reporter = {
      streamStarted() {},
      streamProgress() {},
      streamFinished() {},
      notice: (stream, message) => notices.push(`${stream}: ${message}`),
    };
    return runSync(prepared, { client: rig.client, reporter });
  }
  const loaded = async () =>
    (await rig.destination.query<{ url: string }>('select url from seedline.jobs')).map((r) => r.url).sort();
  async function openPostings(): Promise<string[]> {
    const answer = await rig.client.searchJobs({ company_url: COMPANY, max_results: 100 });
    return ((answer.data as { jobs: Array<{ url: string }> }).jobs ?? []).map((j) => j.url).sort();
  }

  it('given a board with more open postings than max_results, when synced, then a notice names the company and a larger max_results, and once it is raised the next run reads back over the cut', async () => {
    const board = await openPostings();
    expect(board.length).toBeGreaterThan(10);
    expect(board.length).toBeLessThan(100);

    const first = await sync(10);
    expect(first.streams[0]).toMatchObject({ status: 'succeeded', records: 10 });
    expect(notices).toHaveLength(1);
    expect(notices[0]).toContain(COMPANY);
    expect(notices[0]).toMatch(/10 postings came back.*Raise streams\.jobs\.max_results \(at most 100\)/);

    // Two days on, the user raises max_results as the notice says: the next run asks the cut window
    // again and gets every posting the first answer cut off.
    await rig.sandbox.clock.advance(2 * DAY_MS);
    notices = [];
    const second = await sync(100);
    expect(second.streams[0]?.status).toBe('succeeded');
    expect(notices).toEqual([]);
    const stillOpen = await openPostings();
    expect(await loaded()).toEqual(expect.arrayContaining(stillOpen));
  });

  it('given a board with more open postings than max_results, when later daily runs keep that max_results, then each asks only for postings since the run before and pays for no posting twice', async () => {
    expect((await sync(10)).streams[0]?.records).toBe(10);
    const perRun: Array<{ credits: number; newPostings: number }> = [];
    for (let day = 1; day <= 3; day++) {
      await rig.sandbox.clock.advance(DAY_MS);
      const before = new Set(await loaded());
      const run = await sync(10);
      perRun.push({
        credits: run.streams[0]!.credits,
        newPostings: (await loaded()).filter((url) => !before.has(url)).length,
      });
    }
    // One credit per posting returned: a run that asked the cut window again would buy the same ten.
    for (const run of perRun) expect(run.credits, JSON.stringify(perRun)).toBeLessThanOrEqual(run.newPostings);
  });

  it('given a capped answer, when the next run comes within refresh_after, then the company is not asked again (freshness counts from the capped pass)', async () => {
    await sync(10);
    await rig.sandbox.clock.advance(DAY_MS / 2);
    const again = await sync(10);
    expect(again.streams[0]).toMatchObject({ skipped: 1, credits: 0 });
  });
});

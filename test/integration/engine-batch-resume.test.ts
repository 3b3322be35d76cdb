import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/index.js';
import { parseConfig } from '../../src/config/load-config.js';
import type { BatchRow, Destination } from '../../src/destinations/destination.js';
import { prepareSync, runSync } from '../../src/engine/pipeline.js';
import { seedKey } from '../../src/util/seed-keys.js';
import type { ServiceClient } from '../../src/engine/service-calls.js';
import type { Reporter } from '../../src/engine/stream-context.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import { startEngineRig, type EngineRig } from '../helpers/engine.js';
import { sha256 } from '../../src/util/stable-json.js';

/** The client's reads of a job's results: parsed by the client, or read by the worker threads (`getBatchResultsDecoded`). */
const RESULTS_READS = new Set(['getBatchResults', 'getBatchResultsDecoded']);

const silent: Reporter = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };
const READ = 'https://www.network.example/in/resume-read';
const UNSENT = 'https://www.network.example/in/resume-unsent';
const OTHER = 'https://www.network.example/in/resume-other';

/** The real client, with every call it makes written down (method and first argument). */
function recording(client: ApiClient, calls: [string, unknown][]): ServiceClient {
  return new Proxy(client as unknown as ServiceClient, {
    get(target, name) {
      // Getters run on the real client: its private fields are not on the proxy.
      const value = Reflect.get(target, name) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push([String(name), args[0]]);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

function itemsOf(profile: string) {
  return [{ operation: 'profiles.enrich' as const, params: { url: profile }, ref: seedKey('profile', profile) }];
}

describe('resume-only sync of a batch stream against the sandbox and DuckDB', () => {
  let rig: EngineRig;
  let sandbox: Sandbox;
  let client: ApiClient;
  let destination: Destination;
  let dir: string;

  beforeEach(async () => {
    rig = await startEngineRig('svc_live_resume', { seed: 11, rpm: 100_000 });
    ({ sandbox, client, destination, dir } = rig);
  });
  afterEach(() => rig.close());

  /** Records a batch as an earlier, stopped run left it. */
  async function record(profile: string, status: 'intent' | 'submitted', jobId: string | null): Promise<void> {
    const body = JSON.stringify({ items: itemsOf(profile) });
    const unit = await destination.beginUnit('earlier_run');
    await unit.saveBatches([
      {
        idempotencyKey: `earlier-${profile}`,
        stream: 'profiles',
        bodyHash: sha256(body),
        body,
        jobId,
        status,
        itemCount: 1,
      },
    ]);
    await unit.saveSeeds([
      {
        stream: 'profiles',
        seedKey: itemsOf(profile)[0]!.ref,
        seed: profile,
        status: status === 'intent' ? 'pending' : 'submitted',
        jobId,
      },
    ]);
    await unit.commit();
  }

  /** A real job of the sandbox for one profile, resolved. */
  async function submittedJob(profile: string): Promise<string> {
    const job = await client.submitBatch({ items: itemsOf(profile) }, { idempotencyKey: `job-${profile}` });
    await sandbox.idle();
    return job.data.job_id;
  }

  async function resumeOnly(calls: [string, unknown][], resumeJobs?: string[]) {
    const config = parseConfig(
      JSON.stringify({
        api: { base_url: sandbox.url, api_key: 'svc_live_resume' },
        destination: { type: 'duckdb', path: 'w.duckdb' },
        seeds: { profiles: [READ, UNSENT, OTHER] },
        streams: { profiles: {} },
      }),
      'test',
    );
    const prepared = await prepareSync({
      config,
      baseDir: dir,
      manifests: await loadManifests(),
      destination,
      resumeOnly: true,
      ...(resumeJobs ? { resumeJobs } : {}),
    });
    return runSync(prepared, { client: recording(client, calls), reporter: silent });
  }

  const statusOf = async (profile: string): Promise<BatchRow['status'] | undefined> =>
    (await destination.readBatches('profiles')).find((b) => b.idempotencyKey === `earlier-${profile}`)?.status;

  it('given a submitted job and an unsent intent, when a resume-only sync runs, then it reads the job and never posts the intent', async () => {
    const jobId = await submittedJob(READ);
    await record(READ, 'submitted', jobId);
    await record(UNSENT, 'intent', null);
    const billedBefore = sandbox.ledger.totalBilled();

    const calls: [string, unknown][] = [];
    const result = await resumeOnly(calls);

    expect(result.streams[0]).toMatchObject({ stream: 'profiles', records: 1 });
    expect(await statusOf(READ)).toBe('completed');
    expect(await statusOf(UNSENT)).toBe('intent');
    expect(calls.filter(([name]) => name === 'submitBatch')).toEqual([]);
    expect(sandbox.ledger.totalBilled()).toBe(billedBefore);
  });

  it('given two submitted jobs, when a resume-only sync names one, then only that one is read and the other is left untouched', async () => {
    const jobId = await submittedJob(READ);
    await record(READ, 'submitted', jobId);
    // Unknown to the service: touching it would answer 404 and retire it.
    await record(OTHER, 'submitted', 'job_still_running_elsewhere');

    const calls: [string, unknown][] = [];
    await resumeOnly(calls, [jobId]);

    expect(await statusOf(READ)).toBe('completed');
    expect(await statusOf(OTHER)).toBe('submitted');
    expect(calls.filter(([name]) => RESULTS_READS.has(name)).map(([, id]) => id)).toEqual([jobId]);
  });
});

describe('an intent older than the service keeps its Idempotency-Key, against the sandbox and DuckDB', () => {
  let rig: EngineRig;

  beforeEach(async () => {
    rig = await startEngineRig('svc_live_old_intent', { seed: 14, rpm: 100_000 });
  });
  afterEach(() => rig.close());

  async function syncWithIntentRecorded(hoursAgo: number): Promise<string[]> {
    const { sandbox, destination, dir, client } = rig;
    const body = JSON.stringify({ items: itemsOf(UNSENT) });
    const unit = await destination.beginUnit('earlier_run');
    const createdAt = new Date(Date.now() - hoursAgo * 3_600_000);
    await unit.saveBatches([
      {
        idempotencyKey: 'earlier-old-intent',
        stream: 'profiles',
        bodyHash: sha256(body),
        body,
        jobId: null,
        status: 'intent',
        itemCount: 1,
        createdAt,
      },
    ]);
    await unit.saveSeeds([
      { stream: 'profiles', seedKey: itemsOf(UNSENT)[0]!.ref, seed: UNSENT, status: 'pending', jobId: null },
    ]);
    await unit.commit();
    const notices: string[] = [];
    const config = parseConfig(
      JSON.stringify({
        api: { base_url: sandbox.url, api_key: 'svc_live_old_intent' },
        destination: { type: 'duckdb', path: 'w.duckdb' },
        seeds: { profiles: [UNSENT] },
        streams: { profiles: {} },
      }),
      'test',
    );
    const prepared = await prepareSync({ config, baseDir: dir, manifests: await loadManifests(), destination });
    const result = await runSync(prepared, {
      client,
      reporter: { ...silent, notice: (_stream, message) => notices.push(message) },
    });
    expect(result.streams[0]).toMatchObject({ stream: 'profiles', records: 1 });
    return notices;
  }

  it('given an unsent intent recorded 30 h ago, when the next run resends it, then it warns that a second job may be created and billed', async () => {
    const notices = await syncWithIntentRecorded(30);
    expect(notices).toEqual([
      expect.stringMatching(
        /^resending batch intent earlier-old-intent, recorded 30 h ago: .*creates and bills a second job/,
      ),
    ]);
  });

  it('given an unsent intent recorded 2 h ago, when the next run resends it, then it says nothing (its key still protects it)', async () => {
    expect(await syncWithIntentRecorded(2)).toEqual([]);
  });
});

describe('the status of a run asked to stop, against the sandbox and DuckDB', () => {
  let rig: EngineRig;

  beforeEach(async () => {
    rig = await startEngineRig('svc_live_stop_status', { seed: 13, rpm: 100_000 });
  });
  afterEach(() => rig.close());

  async function syncStoppedWhen(when: 'before' | 'after the last stream') {
    const { sandbox, client, destination, dir } = rig;
    const stop = new AbortController();
    if (when === 'before') stop.abort();
    const config = parseConfig(
      JSON.stringify({
        api: { base_url: sandbox.url, api_key: 'svc_live_stop_status' },
        destination: { type: 'duckdb', path: 'w.duckdb' },
        seeds: { profiles: [READ] },
        streams: { profiles: {} },
      }),
      'test',
    );
    const prepared = await prepareSync({ config, baseDir: dir, manifests: await loadManifests(), destination });
    return runSync(prepared, {
      client,
      reporter: { ...silent, streamFinished: () => stop.abort() },
      stop: stop.signal,
    });
  }

  it('given a SIGTERM after the last stream finished, when the run ends, then it is succeeded (not stopped), so catch_up does not run it again', async () => {
    const result = await syncStoppedWhen('after the last stream');
    expect(result.streams[0]).toMatchObject({ status: 'succeeded', records: 1 });
    expect(result.status).toBe('succeeded');
    expect((await rig.destination.readRuns(1))[0]?.status).toBe('succeeded');
  });

  it('given a killed run still running behind 25 newer failed runs, when the next run starts, then the killed run is marked interrupted', async () => {
    const day = (n: number) => new Date(Date.UTC(2026, 9, n));
    await rig.destination.saveRun({ runId: 'run_killed', startedAt: day(1), status: 'running' });
    for (let n = 0; n < 25; n++)
      await rig.destination.saveRun({
        runId: `run_failed_${n}`,
        startedAt: new Date(day(2).getTime() + n * 60_000),
        finishedAt: day(3),
        status: 'failed',
      });
    await syncStoppedWhen('before');
    expect(await rig.destination.readRuns(100, 'running')).toEqual([]);
    expect((await rig.destination.readRuns(100, 'interrupted')).map((r) => r.runId)).toEqual(['run_killed']);
  });

  it('given a SIGTERM before any stream started, when the run ends, then it is stopped', async () => {
    const result = await syncStoppedWhen('before');
    expect(result.streams).toEqual([]);
    expect(result.status).toBe('stopped');
  });
});

describe('a sync of a batch stream stopped while it reads a submitted job, against the sandbox and DuckDB', () => {
  let rig: EngineRig;
  let releaseItems: () => void = () => undefined;

  // Items are held unresolved until the test ends, so the job is still open when its first results
  // page is read, however slow the machine (a 3 s latency did this before, a margin load could eat).
  beforeEach(async () => {
    const held = new Promise<void>((resolve) => (releaseItems = resolve));
    rig = await startEngineRig('svc_live_stopped_read', { seed: 12, rpm: 100_000, beforeBatchItem: () => held });
  });
  afterEach(async () => {
    releaseItems();
    await rig.close();
  });

  it('given a stop while the job is read, when the run ends, then the seed stays submitted in that paid job (not pending without it), so the next run reads it', async () => {
    const { sandbox, client, destination, dir } = rig;
    const stop = new AbortController();
    const calls: [string, unknown][] = [];
    const reading = new Proxy(recording(client, calls), {
      get(target, name) {
        const value = Reflect.get(target, name) as unknown;
        if (!RESULTS_READS.has(String(name)) || typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          stop.abort();
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const config = parseConfig(
      JSON.stringify({
        api: { base_url: sandbox.url, api_key: 'svc_live_stopped_read' },
        destination: { type: 'duckdb', path: 'w.duckdb' },
        seeds: { profiles: [READ] },
        streams: { profiles: {} },
      }),
      'test',
    );
    const prepared = await prepareSync({ config, baseDir: dir, manifests: await loadManifests(), destination });
    await runSync(prepared, { client: reading, reporter: silent, stop: stop.signal });

    const [batch] = await destination.readBatches('profiles');
    expect(batch).toMatchObject({ status: 'submitted', jobId: expect.any(String) });
    expect((await destination.readSeeds('profiles')).get(seedKey('profile', READ))).toMatchObject({
      status: 'submitted',
      jobId: batch!.jobId,
    });
    expect(calls.filter(([name]) => name === 'submitBatch')).toHaveLength(1);
  });
});

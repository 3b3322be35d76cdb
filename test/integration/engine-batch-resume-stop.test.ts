import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/client/index.js';
import { parseConfig } from '../../src/config/load-config.js';
import type { BatchRow } from '../../src/destinations/destination.js';
import { prepareSync, runSync, type RunResult } from '../../src/engine/pipeline.js';
import { seedKey } from '../../src/util/seed-keys.js';
import type { ServiceClient } from '../../src/engine/service-calls.js';
import type { Reporter } from '../../src/engine/stream-context.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import type { SandboxOptions } from '../../src/sandbox/index.js';
import { sha256 } from '../../src/util/stable-json.js';
import { startEngineRig, type EngineRig } from '../helpers/engine.js';

const KEY = 'svc_live_resume_stop';
const ANN = 'https://www.network.example/in/resume-stop-ann';
const BOB = 'https://www.network.example/in/resume-stop-bob';
const now = new Date();

/** When a run is asked to stop: on its first loaded result, as the stream starts, or on its first results read. */
type StopAt = 'first result' | 'stream start' | 'results read';

let rig: EngineRig;
/** The Idempotency-Key of every `submitBatch` call, in order. */
let submitKeys: string[];
/** Lets the sandbox resolve BOB's batch item, held until then (see `holdingBob`). */
let releaseBob: () => void = () => undefined;

async function startRig(options: SandboxOptions): Promise<void> {
  rig = await startEngineRig(KEY, { rpm: 100_000, ...options });
  submitKeys = [];
}

/** The real client; each submission's Idempotency-Key is written down, and a results read may ask the run to stop. */
function watched(client: ApiClient, onResultsRead: () => void): ServiceClient {
  return new Proxy(client as unknown as ServiceClient, {
    get(target, name) {
      // Getters run on the real client: its private fields are not on the proxy.
      const value = Reflect.get(target, name) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (name === 'submitBatch')
          submitKeys.push(String((args[1] as { idempotencyKey?: string } | undefined)?.idempotencyKey));
        if (name === 'getBatchResults' || name === 'getBatchResultsDecoded') onResultsRead();
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** A sync of the profiles stream over ANN and BOB, at a fixed clock (nothing turns stale between runs). */
async function sync(options: { stopAt?: StopAt; budget?: Record<string, number> } = {}): Promise<RunResult> {
  const { sandbox, client, destination, dir } = rig;
  const raw = {
    api: { base_url: sandbox.url, api_key: KEY },
    destination: { type: 'duckdb', path: 'w.duckdb' },
    seeds: { profiles: [ANN, BOB] },
    streams: { profiles: {} },
    batch: { chunk_size: 10, poll_interval_ms: 10 },
    budget: options.budget ?? {},
  };
  const prepared = await prepareSync({
    config: parseConfig(JSON.stringify(raw), 'test'),
    baseDir: dir,
    manifests: await loadManifests(),
    destination,
    now: () => now,
  });
  const stop = new AbortController();
  const reporter: Reporter = {
    streamStarted: () => options.stopAt === 'stream start' && stop.abort(),
    streamProgress: (_stream, progress) => options.stopAt === 'first result' && progress.done >= 1 && stop.abort(),
    streamFinished() {},
    notice() {},
  };
  const watchedClient = watched(client, () => options.stopAt === 'results read' && stop.abort());
  return runSync(prepared, { client: watchedClient, reporter, concurrentBatchJobs: 1, stop: stop.signal });
}

const statuses = async () =>
  Object.fromEntries([...(await rig.destination.readSeeds('profiles')).values()].map((row) => [row.seed, row.status]));
const batches = async (): Promise<BatchRow[]> => rig.destination.readBatches('profiles');
/** Billed charges of the sandbox for one profile. */
const charges = (profile: string) =>
  rig.sandbox.ledger.entries.filter((e) => e.billed && e.credits > 0 && e.target.includes(new URL(profile).pathname))
    .length;

/** Sandbox options holding BOB's batch item unresolved until `releaseBob()`: ANN's resolves at once. */
function holdingBob(): SandboxOptions {
  const bobHeld = new Promise<void>((resolve) => (releaseBob = resolve));
  const bob = seedKey('profile', BOB);
  return { batchItemConcurrency: 1, beforeBatchItem: (item) => (item.ref === bob ? bobHeld : Promise.resolve()) };
}

describe('a run stopped while it re-attaches to a job an earlier run partly read, against the sandbox and DuckDB', () => {
  // One item at a time, BOB's held: a run loads ANN's result and stops with BOB unresolved, however slow the machine.
  beforeEach(() => startRig(holdingBob()));
  afterEach(async () => {
    releaseBob();
    await rig.close();
  });

  /** Once BOB's item may resolve, the next runs read it from the one job: both seeds fetched, each paid for once. */
  async function expectBobReadOnceReleased(): Promise<void> {
    releaseBob();
    await sync();
    await sync();
    expect(await statuses()).toEqual({ [ANN]: 'fetched', [BOB]: 'fetched' });
    expect(submitKeys).toHaveLength(1);
    expect([charges(ANN), charges(BOB)]).toEqual([1, 1]);
  }

  /** Run 1 submits one job for ANN and BOB, loads ANN's result and is stopped with BOB unread. */
  async function jobPartlyReadByAnEarlierRun(): Promise<BatchRow> {
    await sync({ stopAt: 'first result' });
    expect(await statuses()).toEqual({ [ANN]: 'fetched', [BOB]: 'submitted' });
    const [job] = await batches();
    expect(job).toMatchObject({ status: 'submitted', jobId: expect.any(String), resultsCursor: expect.any(String) });
    return job!;
  }

  it('given a job an earlier stopped run partly read, when the next run is stopped before it re-attaches, then the loaded seed stays fetched, the job stays open at its cursor, and no seed is paid for twice', async () => {
    const job = await jobPartlyReadByAnEarlierRun();

    const stopped = await sync({ stopAt: 'stream start' });

    expect(stopped.streams[0]).toMatchObject({ stream: 'profiles', status: 'partial', stoppedOnRequest: true });
    expect(await statuses()).toEqual({ [ANN]: 'fetched', [BOB]: 'submitted' });
    expect(await batches()).toEqual([
      expect.objectContaining({ jobId: job.jobId, status: 'submitted', resultsCursor: job.resultsCursor }),
    ]);

    await expectBobReadOnceReleased();
  });

  it('given a job an earlier stopped run partly read, when the next run is stopped while it reads that job, then the loaded seed stays fetched and the run after reads the rest, each seed paid for once', async () => {
    const job = await jobPartlyReadByAnEarlierRun();

    await sync({ stopAt: 'results read' });

    expect(await statuses()).toEqual({ [ANN]: 'fetched', [BOB]: 'submitted' });
    expect(await batches()).toEqual([expect.objectContaining({ jobId: job.jobId, status: 'submitted' })]);

    await expectBobReadOnceReleased();
  });
});

describe('a run stopped before it resends an intent an earlier run left unsent, against the sandbox and DuckDB', () => {
  const idempotencyKey = 'seedline-v1-intent-of-an-earlier-run';

  // The intent for ANN and BOB as an earlier run killed right after recording it leaves it.
  beforeEach(async () => {
    await startRig({});
    const items = [ANN, BOB].map((url) => ({
      operation: 'profiles.enrich',
      params: { url },
      ref: seedKey('profile', url),
    }));
    const body = JSON.stringify({ items });
    const unit = await rig.destination.beginUnit('run_earlier');
    await unit.saveBatches([
      {
        idempotencyKey,
        stream: 'profiles',
        bodyHash: sha256(body),
        body,
        jobId: null,
        status: 'intent',
        itemCount: 2,
        resultsCursor: null,
      },
    ]);
    await unit.saveSeeds(
      items.map((item) => ({
        stream: 'profiles',
        seedKey: item.ref,
        seed: item.params.url,
        status: 'pending' as const,
        jobId: null,
      })),
    );
    await unit.commit();
  });
  afterEach(() => rig.close());

  /** Nothing was sent and the intent is still open with its seeds pending; the next runs send it once, with its key, each seed paid once. */
  async function expectIntentKeptThenSentOnce(): Promise<void> {
    expect(submitKeys).toEqual([]);
    expect(await statuses()).toEqual({ [ANN]: 'pending', [BOB]: 'pending' });
    expect(await batches()).toEqual([expect.objectContaining({ idempotencyKey, status: 'intent' })]);

    await sync();
    await sync();
    expect(submitKeys).toEqual([idempotencyKey]);
    expect(await statuses()).toEqual({ [ANN]: 'fetched', [BOB]: 'fetched' });
    expect([charges(ANN), charges(BOB)]).toEqual([1, 1]);
  }

  it('given an unsent intent of an earlier run, when the next run is stopped before it sends it, then the intent stays open with its seeds pending and the run after sends it once with the same Idempotency-Key', async () => {
    const stopped = await sync({ stopAt: 'stream start' });

    expect(stopped.streams[0]).toMatchObject({ stream: 'profiles', status: 'partial', stoppedOnRequest: true });
    await expectIntentKeptThenSentOnce();
  });

  it('given an unsent intent of an earlier run and a budget below its worst case, when the run stops for its budget, then nothing is sent, the intent stays open, and the run after sends it once with the same Idempotency-Key', async () => {
    const starved = await sync({ budget: { max_credits_per_run: 1 } });

    expect(starved.streams[0]).toMatchObject({ stream: 'profiles', status: 'partial', stopped: 'budget_exhausted' });
    await expectIntentKeptThenSentOnce();
  });
});

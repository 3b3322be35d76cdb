import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NetworkError, UpstreamTimeoutError } from '../../src/client/index.js';
import { parseConfig } from '../../src/config/load-config.js';
import { createDestination } from '../../src/destinations/create-destination.js';
import type { Destination } from '../../src/destinations/destination.js';
import { prepareSync, runSync, type RunResult } from '../../src/engine/pipeline.js';
import type { ServiceClient, ServiceResponse } from '../../src/engine/service-calls.js';
import type { Reporter } from '../../src/engine/stream-context.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';

const silent: Reporter = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };
/** A people search of 30 results: two pages of 25 at 2 credits, 4 credits at worst. */
const SEARCH = { id: 'eng', filters: { keywords: 'data engineer' }, max_results: 30 };

/** A client whose requests (the people search) answer with `answer`; any other call is a test failure. */
function searchClient(answer: () => Promise<ServiceResponse>): ServiceClient {
  return new Proxy({ request: answer } as unknown as ServiceClient, {
    get: (target, name) =>
      (target as unknown as Record<string, unknown>)[name as string] ??
      (() => Promise.reject(new Error(`unexpected call ${String(name)}`))),
  });
}

describe('request stream credits when the answer does not say what it cost', () => {
  let dir: string;
  let destination: Destination;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'seedline-request-budget-'));
    destination = await createDestination({ type: 'duckdb', path: join(dir, 'w.duckdb'), schema: 'seedline' });
    await destination.ensureSystemTables();
  });
  afterEach(async () => destination.close());

  async function run(client: ServiceClient, budget: Record<string, number> = {}): Promise<RunResult> {
    const raw = {
      api: { base_url: 'sandbox', api_key: 'svc_test_x' },
      destination: { type: 'duckdb', path: 'w.duckdb' },
      streams: { people_search: { searches: [SEARCH], via: 'calls' } },
      budget,
    };
    const prepared = await prepareSync({
      config: parseConfig(JSON.stringify(raw), 'test'),
      baseDir: dir,
      manifests: await loadManifests(),
      destination,
    });
    return runSync(prepared, { client, reporter: silent });
  }

  it('given an answer without meta.creditsUsed, when synced, then the call counts at its worst case, not as free', async () => {
    const result = await run(searchClient(async () => ({ data: { results: [{ name: 'Ada' }] }, meta: {} })));
    // Not billed as far as the service said, but counted at risk: in the run's books and against its budget.
    expect(result.streams[0]).toMatchObject({ status: 'succeeded', credits: 0, creditsAtRisk: 4 });
    expect((await destination.readRuns(1))[0]).toMatchObject({ creditsUsed: 0, creditsAtRisk: 4 });
  });

  it('given a network error after the request went out, when synced, then the call counts at its worst case and the search stays due', async () => {
    const lost = () =>
      Promise.reject(new NetworkError({ origin: 'http://127.0.0.1:1', causeCode: 'UND_ERR_HEADERS_TIMEOUT' }));
    const result = await run(searchClient(lost), { max_credits_per_run: 6 });
    expect(result.streams[0]).toMatchObject({ status: 'failed', credits: 0, creditsAtRisk: 4, failed: 1 });
    expect((await destination.readRuns(1))[0]).toMatchObject({ creditsUsed: 0, creditsAtRisk: 4 });
    const state = JSON.parse((await destination.readState('people_search')).get('eng')?.cursor ?? '{}');
    expect(state.completed_at).toBeUndefined();
    expect(state.error).toMatch(/UND_ERR_HEADERS_TIMEOUT/);
  });

  it('given a 504 upstream_timeout answer, when synced, then the call costs nothing (the spec never bills it)', async () => {
    const timeout = () =>
      Promise.reject(
        new UpstreamTimeoutError({
          status: 504,
          type: 'upstream_timeout',
          serviceMessage: 'the live scrape did not finish in time',
        }),
      );
    const result = await run(searchClient(timeout));
    expect(result.streams[0]).toMatchObject({ status: 'failed', credits: 0, failed: 1 });
  });
});

describe('priced calls a budget could not hold', () => {
  let dir: string;
  let destination: Destination;
  let calls: number;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'seedline-request-priced-'));
    destination = await createDestination({ type: 'duckdb', path: join(dir, 'w.duckdb'), schema: 'seedline' });
    await destination.ensureSystemTables();
    calls = 0;
  });
  afterEach(async () => destination.close());

  async function runChanged(change: (manifest: Record<string, unknown>) => void): Promise<RunResult> {
    const raw = {
      api: { base_url: 'sandbox', api_key: 'svc_test_x' },
      destination: { type: 'duckdb', path: 'w.duckdb' },
      streams: { people_search: { searches: [SEARCH], via: 'calls' } },
    };
    const manifests = await loadManifests();
    const manifest = structuredClone(manifests.get('people_search')!);
    change(manifest as unknown as Record<string, unknown>);
    manifests.set('people_search', manifest);
    const prepared = await prepareSync({
      config: parseConfig(JSON.stringify(raw), 'test'),
      baseDir: dir,
      manifests,
      destination,
    });
    const client = searchClient(async () => {
      calls++;
      return { data: { results: [] }, meta: { creditsUsed: 4 } };
    });
    return runSync(prepared, { client, reporter: silent });
  }

  it('given a priced call writing a replace-mode table, when synced, then no call is made and the error says paid pages could be dropped', async () => {
    const result = await runChanged((m) => ((m.table as Record<string, unknown>).write_mode = 'replace'));
    expect(result.streams[0]).toMatchObject({ status: 'failed', credits: 0 });
    expect(result.streams[0]?.errors.join('\n')).toMatch(/replace mode.*costs credits.*Use write_mode merge or append/);
    expect(calls).toBe(0);
  });

  it('given a priced call paged by a cursor without a page limit, when synced, then no call is made and the error asks for max_pages', async () => {
    const result = await runChanged((m) => (m.paginator = { type: 'cursor' }));
    expect(result.streams[0]).toMatchObject({ status: 'failed', credits: 0 });
    expect(result.streams[0]?.errors.join('\n')).toMatch(/sets no page limit.*max_pages/);
    expect(calls).toBe(0);
  });
});

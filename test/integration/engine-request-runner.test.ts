import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/index.js';
import { parseConfig } from '../../src/config/load-config.js';
import { createDestination } from '../../src/destinations/create-destination.js';
import type { Destination } from '../../src/destinations/destination.js';
import { planSync, prepareSync, runSync } from '../../src/engine/pipeline.js';
import type { ServiceClient, ServiceRequest, ServiceResponse } from '../../src/engine/service-calls.js';
import type { Reporter } from '../../src/engine/stream-context.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import { startSandbox } from '../../src/sandbox/index.js';

const silent: Reporter = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };

const signal = (id: string) => ({
  id,
  name: `watch ${id}`,
  status: 'active',
  schedule: { interval: '1d' },
  criteria: { mode: 'field_change', fields: ['headline'] },
  estimated_monthly_credits: 30,
});

/** A client whose GET /v1/signals serves two pages, the second failing when asked to. */
function signalsClient(pages: string[][], failSecondPage: () => boolean): ServiceClient {
  const listSignals = async (query?: Record<string, unknown>): Promise<ServiceResponse> => {
    const index = query?.cursor ? Number(query.cursor) : 0;
    if (index === 1 && failSecondPage()) throw Object.assign(new Error('internal error'), { type: 'internal_error' });
    const next = index + 1 < pages.length ? String(index + 1) : null;
    return { data: pages[index]!.map(signal), meta: { creditsUsed: 0, nextCursor: next } };
  };
  const request = async (call: ServiceRequest) =>
    call.path === '/v1/signals'
      ? listSignals(call.query)
      : Promise.reject(new Error(`unexpected request ${call.path}`));
  return new Proxy({ request } as unknown as ServiceClient, {
    get: (target, name) =>
      (target as unknown as Record<string, unknown>)[name as string] ??
      (() => Promise.reject(new Error(`unexpected call ${String(name)}`))),
  });
}

describe('replace-mode request stream (signals) against DuckDB', () => {
  let dir: string;
  let destination: Destination;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'seedline-replace-'));
    destination = await createDestination({ type: 'duckdb', path: join(dir, 'w.duckdb'), schema: 'seedline' });
    await destination.lock({ holder: 'test' });
    await destination.ensureSystemTables();
  });
  afterEach(async () => destination.close());

  async function run(client: ServiceClient) {
    const config = parseConfig(
      JSON.stringify({
        api: { base_url: 'sandbox', api_key: 'svc_test_x' },
        destination: { type: 'duckdb', path: 'w.duckdb' },
        streams: { signals: {} },
      }),
      'test',
    );
    const prepared = await prepareSync({ config, baseDir: dir, manifests: await loadManifests(), destination });
    return runSync(prepared, { client, reporter: silent });
  }
  const ids = async () =>
    (await destination.query<{ id: string }>('select id from seedline.signals order by id')).map((r) => r.id);

  it('given a loaded table, when a later page fails, then the table keeps its rows and the next run reloads every page', async () => {
    let fail = false;
    const client = signalsClient([['sig_a', 'sig_b'], ['sig_c']], () => fail);
    expect((await run(client)).status).toBe('succeeded');
    expect(await ids()).toEqual(['sig_a', 'sig_b', 'sig_c']);

    fail = true;
    expect((await run(client)).status).toBe('failed');
    expect(await ids()).toEqual(['sig_a', 'sig_b', 'sig_c']);

    fail = false;
    expect((await run(client)).status).toBe('succeeded');
    expect(await ids()).toEqual(['sig_a', 'sig_b', 'sig_c']);
  });
});

describe('request stream against a live-billing sandbox with an empty balance', () => {
  it('given a search the balance cannot cover and no budget, when synced, then the 402 stops the stream like a spent budget, naming the balance, and the search stays due', async () => {
    const sandbox = await startSandbox({ balance: 0, rpm: 100_000 });
    const dir = await mkdtemp(join(tmpdir(), 'seedline-402-'));
    const destination = await createDestination({ type: 'duckdb', path: join(dir, 'w.duckdb'), schema: 'seedline' });
    const client = await ApiClient.connect({ baseUrl: sandbox.url, apiKey: 'svc_live_empty' });
    try {
      await destination.ensureSystemTables();
      const searches = [
        { id: 'a', filters: { keywords: 'rust' } },
        { id: 'b', filters: { keywords: 'go' } },
      ];
      const config = parseConfig(
        JSON.stringify({
          api: { base_url: sandbox.url, api_key: 'svc_live_empty' },
          destination: { type: 'duckdb', path: 'w.duckdb' },
          streams: { people_search: { searches } },
        }),
        'test',
      );
      const prepared = await prepareSync({ config, baseDir: dir, manifests: await loadManifests(), destination });

      const result = await runSync(prepared, { client, reporter: silent, balance: client.account?.credits_remaining });

      const [outcome] = result.streams;
      expect(outcome).toMatchObject({
        stream: 'people_search',
        status: 'partial',
        stopped: 'budget_exhausted',
        credits: 0,
        failed: 0,
        estimatedCredits: 4,
      });
      expect(outcome?.errors.join('\n')).toMatch(/402 insufficient_credits.*the account balance is 0 credits/);
      expect(sandbox.ledger.totalBilled()).toBe(0);
      expect((await destination.readRuns(1))[0]).toMatchObject({
        status: 'partial',
        stopReason: 'budget_exhausted',
        creditsUsed: 0,
        creditsEstimated: 4,
      });
      expect((await planSync(prepared))[0]).toMatchObject({ stream: 'people_search', units: 2, worstCaseCredits: 4 });
    } finally {
      await client.close();
      await destination.close();
      await sandbox.close();
    }
  });
});

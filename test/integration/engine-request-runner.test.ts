import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load-config.js';
import { createDestination } from '../../src/destinations/create-destination.js';
import type { Destination } from '../../src/destinations/destination.js';
import { prepareSync, runSync } from '../../src/engine/pipeline.js';
import type { ServiceClient, ServiceResponse } from '../../src/engine/service-calls.js';
import type { Reporter } from '../../src/engine/stream-context.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';

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
  return new Proxy({ listSignals } as unknown as ServiceClient, {
    get: (target, name) => (target as unknown as Record<string, unknown>)[name as string] ?? (() => Promise.reject(new Error(`unexpected call ${String(name)}`))),
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
    const config = parseConfig(JSON.stringify({ api: { base_url: 'sandbox', api_key: 'svc_test_x' }, destination: { type: 'duckdb', path: 'w.duckdb' }, streams: { signals: {} } }), 'test');
    const prepared = await prepareSync({ config, baseDir: dir, manifests: await loadManifests(), destination });
    return runSync(prepared, { client, reporter: silent });
  }
  const ids = async () => (await destination.query<{ id: string }>('select id from seedline.signals order by id')).map((r) => r.id);

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

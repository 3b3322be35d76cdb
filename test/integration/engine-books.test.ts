import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/index.js';
import { parseConfig } from '../../src/config/load-config.js';
import { createDestination } from '../../src/destinations/create-destination.js';
import { prepareSync, runSync, type RunResult } from '../../src/engine/pipeline.js';
import type { Reporter } from '../../src/engine/stream-context.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import { startSandbox, type FaultRates } from '../../src/sandbox/index.js';

// The books are the service's: what a run records is what the service billed for it, and equals
// how far the account's balance fell over the run, faults and retries included.
const silent: Reporter = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };
const KEY = 'svc_live_books';
const CONFIG = {
  api: { base_url: 'http://127.0.0.1:1', api_key: KEY },
  destination: { type: 'duckdb', path: 'w.duckdb' },
  seeds: {
    profiles: ['alice-one', 'bob-two', 'carol-three', 'dan-four', 'flaky-fred', 'private-hidden'],
    companies: ['https://www.network.example/company/acme-analytics', 'https://www.network.example/company/globex'],
    posts: ['https://www.network.example/posts/alice-one_activity-7000000000000000001'],
    headcount: [
      { company_url: 'https://www.network.example/company/acme-analytics', filters: { titles: ['engineer'] } },
    ],
  },
  streams: {
    profiles: {},
    companies: {},
    posts: {},
    headcount: {},
    jobs: { keywords: ['data engineer'], max_results: 5 },
    activity: { kinds: ['posts'], max_pages: 2 },
    company_posts: { max_pages: 2 },
    people_search: { searches: [{ id: 'cto', filters: { titles: ['CTO'] }, max_results: 30 }] },
    company_search: { searches: [{ id: 'fintech', filters: { keywords: 'fintech' } }] },
  },
  batch: { chunk_size: 10, poll_interval_ms: 10 },
};

async function syncOnce(
  faults: FaultRates,
  seed: number,
): Promise<{ first: RunResult; second: RunResult; billed: number; billedAfterFirst: number }> {
  const sandbox = await startSandbox({ rpm: 100_000, faults, seed });
  const dir = await mkdtemp(join(tmpdir(), 'seedline-books-'));
  const destination = await createDestination({ type: 'duckdb', path: join(dir, 'w.duckdb'), schema: 'seedline' });
  const client = new ApiClient({ baseUrl: sandbox.url, apiKey: KEY, retry: { baseDelayMs: 1, maxDelayMs: 5 } });
  try {
    await destination.ensureSystemTables();
    const config = parseConfig(JSON.stringify({ ...CONFIG, api: { ...CONFIG.api, base_url: sandbox.url } }), 'test');
    const prepared = await prepareSync({ config, baseDir: dir, manifests: await loadManifests(), destination });
    const balance = async () => ((await client.getAccount()).data as { credits_remaining: number }).credits_remaining;
    const first = await runSync(prepared, { client, reporter: silent, balance: await balance() });
    const billedAfterFirst = sandbox.ledger.totalBilled();
    const second = await runSync(prepared, { client, reporter: silent, balance: await balance() });
    return { first, second, billed: sandbox.ledger.totalBilled(), billedAfterFirst };
  } finally {
    await client.close();
    await destination.close();
    await sandbox.close();
  }
}

describe('the books of a run', () => {
  it.each([
    ['no faults', {}, 1],
    ['10% 500, 10% 504, 5% upstream_error, 5% 429', { '500': 0.1, '504': 0.1, upstream_error: 0.05, '429': 0.05 }, 3],
    ['20% 504', { '504': 0.2 }, 11],
  ] as const)(
    'given %s, when every billed stream syncs, then the credits recorded equal what the service billed and how far the balance fell',
    async (_name, faults, seed) => {
      const { first, second, billed, billedAfterFirst } = await syncOnce(faults, seed);
      expect(first.books.atRisk).toBe(0);
      expect(first.credits).toBe(billedAfterFirst);
      expect(first.balanceChange).toBe(billedAfterFirst);
      expect(first.streams.reduce((n, s) => n + s.credits, 0)).toBe(billedAfterFirst);
      // Whatever the first run left (an item failed twice for a passing reason), the second finishes with the same agreement.
      expect(second.credits).toBe(billed - billedAfterFirst);
      expect(second.balanceChange).toBe(billed - billedAfterFirst);
    },
  );
});

/**
 * Refresh by age alone against refresh on change, over weeks of the sandbox's virtual clock.
 *
 *   npm run build && node dist/bench/refresh-on-change.js [--profiles 1000] [--weeks 12] [--fields company]
 *
 * Both scenarios watch every profile with a weekly Signal (its checks are billed the same in
 * both) and sync once a week for `--weeks` weeks, on the virtual clock, into a fresh DuckDB file:
 * - by age: `profiles: { refresh_after: 7d }`: every profile is bought again each week;
 * - on change: `refresh_after_watched: 90d` as well, with the signals and triggers streams: a
 *   profile is bought again when a Trigger reports a change to it, else after 90 days.
 * `--fields` are the Signals' criteria fields: which changes make a Trigger. Prints, from the
 * sandbox's billing ledger, the credits of profile enrichments and of Signal checks in each
 * scenario, the Triggers, and the profiles the last week's table holds.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from '../src/client/index.js';
import { formatTable } from '../src/cli/format-table.js';
import { parseConfig } from '../src/config/load-config.js';
import { createDestination } from '../src/destinations/create-destination.js';
import { prepareSync, runSync } from '../src/engine/pipeline.js';
import type { Reporter } from '../src/engine/stream-context.js';
import { loadManifests } from '../src/manifest/load-manifests.js';
import { startSandbox } from '../src/sandbox/index.js';

const DAY = 86_400_000;
const silent: Reporter = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };

function flag(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? String(process.argv[at + 1]) : fallback;
}

const PROFILES = Number(flag('profiles', '1000'));
const WEEKS = Number(flag('weeks', '12'));
const FIELDS = flag('fields', 'company').split(',');
const KEY = 'svc_live_refresh_bench';

interface Figures {
  scenario: string;
  enrich_credits: number;
  signal_check_credits: number;
  triggers: number;
  profiles_loaded: number;
  seconds: string;
  enriched_each_week: string;
}

async function scenario(name: string, streams: Record<string, unknown>): Promise<Figures> {
  const started = performance.now();
  const sandbox = await startSandbox({ rpm: 1_000_000, startTime: new Date(), balance: 10_000_000 });
  const client = await ApiClient.connect({ baseUrl: sandbox.url, apiKey: KEY });
  const dir = await mkdtemp(join(tmpdir(), 'seedline-refresh-bench-'));
  const destination = await createDestination({ type: 'duckdb', path: join(dir, 'w.duckdb') });
  try {
    await destination.lock({ holder: 'bench' });
    await destination.ensureSystemTables();
    const seeds = Array.from({ length: PROFILES }, (_, i) => `https://www.network.example/in/bench-person-${i}`);
    for (let from = 0; from < seeds.length; from += 1000) {
      const created = await fetch(`${sandbox.url}/v1/signals/bulk`, {
        method: 'POST',
        headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
        body: JSON.stringify({
          targets: seeds.slice(from, from + 1000).map((site_url) => ({ type: 'profile', site_url })),
          template: {
            name_prefix: 'bench',
            schedule: { interval: '7d' },
            criteria: { mode: 'field_change', fields: FIELDS },
          },
        }),
      });
      if (created.status >= 300) throw new Error(`creating Signals: ${created.status} ${await created.text()}`);
    }
    await sandbox.clock.advance(1000);
    const config = parseConfig(
      JSON.stringify({
        api: { base_url: sandbox.url, api_key: KEY },
        destination: { type: 'duckdb', path: 'w.duckdb' },
        seeds: { profiles: seeds },
        streams,
        budget: { max_credits_per_run: 1_000_000 },
        batch: { poll_interval_ms: 10 },
      }),
      'bench',
    );
    const manifests = await loadManifests();
    const weekly: number[] = [];
    for (let week = 0; week < WEEKS; week++) {
      if (week > 0) await sandbox.clock.advance(7 * DAY);
      const prepared = await prepareSync({
        config,
        baseDir: dir,
        manifests,
        destination,
        now: () => sandbox.clock.now(),
      });
      const before = sandbox.ledger.entries.length;
      await runSync(prepared, { client, reporter: silent });
      weekly.push(sandbox.ledger.entries.slice(before).filter((e) => e.operation === 'profiles.enrich').length);
    }
    const credits = (operation: string) =>
      sandbox.ledger.entries.filter((e) => e.operation === operation).reduce((n, e) => n + e.credits, 0);
    const triggers = await countTriggers(sandbox.url);
    const [loaded] = await destination.query<{ n: unknown }>('select count(*) as n from seedline.profiles');
    return {
      scenario: name,
      enrich_credits: credits('profiles.enrich'),
      signal_check_credits: credits('signal.check'),
      triggers,
      profiles_loaded: Number(loaded?.n ?? 0),
      seconds: ((performance.now() - started) / 1000).toFixed(1),
      enriched_each_week: weekly.join(' '),
    };
  } finally {
    await destination.close();
    await client.close();
    await sandbox.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Every Trigger of the account (the service keeps them 90 days), read a page at a time. */
async function countTriggers(url: string): Promise<number> {
  let count = 0;
  let cursor = '';
  do {
    const page = (await (
      await fetch(`${url}/v1/triggers?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { headers: { 'x-api-key': KEY } })
    ).json()) as { data: unknown[]; meta: { nextCursor?: string | null; next_cursor?: string | null } };
    count += page.data.length;
    cursor = page.meta.nextCursor ?? page.meta.next_cursor ?? '';
  } while (cursor);
  return count;
}

const rows = [
  await scenario('by age (refresh_after 7d)', { profiles: { refresh_after: '7d' } }),
  await scenario('on change (+ refresh_after_watched 90d)', {
    profiles: { refresh_after: '7d', refresh_after_watched: '90d' },
    signals: {},
    triggers: {},
  }),
];
console.log(`${PROFILES} profiles, a weekly Signal on each (criteria ${FIELDS.join(', ')}), ${WEEKS} weekly syncs`);
console.log(formatTable(rows as unknown as Record<string, unknown>[]));
const [age, change] = rows as [Figures, Figures];
console.log(
  `enrichment credits on change / by age: ${(change.enrich_credits / age.enrich_credits).toFixed(3)} (${age.enrich_credits - change.enrich_credits} saved)`,
);

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/index.js';
import { parseConfig } from '../../src/config/load-config.js';
import type { Destination } from '../../src/destinations/destination.js';
import { prepareSync, runSync, type RunResult } from '../../src/engine/pipeline.js';
import type { Reporter } from '../../src/engine/stream-context.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { destinationKinds, useBackend } from '../helpers/destinations.js';
import { watchProfiles } from '../helpers/watched-profiles.js';

const KEY = 'svc_live_trigger_apply';
const DAY = 86_400_000;
const silent: Reporter = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };
const WATCHED = Array.from({ length: 10 }, (_, i) => `https://www.network.example/in/applied-person-${i}`);
/** The columns the profiles manifest's `refresh_on_change.apply` writes, by diff field. */
const APPLIED: Record<string, string> = {
  headline: 'headline',
  position: 'current_company__title',
  company: 'current_company__name',
  skills: 'skills',
};

interface Trigger {
  trigger_id: string;
  signal_id: string;
  checked_at: string;
  diff: Record<string, { after: unknown }>;
}

// Issue 37, item 2: what a Trigger already says goes into the row at no cost.
describe.each(destinationKinds)('Triggers applied to rows, against the sandbox and %s', (kind) => {
  const backend = useBackend(kind);
  let sandbox: Sandbox;
  let client: ApiClient;
  let destination: Destination;

  beforeEach(async (context) => {
    if (!backend.available) return context.skip();
    // Virtual time before the wall clock: versions a load starts (at its wall-clock time) follow those a Trigger starts.
    sandbox = await startSandbox({ rpm: 100_000, startTime: new Date(Date.now() - 200 * DAY) });
    client = await ApiClient.connect({ baseUrl: sandbox.url, apiKey: KEY });
    destination = await backend.open();
    await destination.lock({ holder: 'test' });
    await watchProfiles(sandbox, KEY, WATCHED);
  });
  afterEach(async () => {
    await destination?.close();
    await client?.close();
    await sandbox?.close();
  });

  /** One sync on the sandbox's virtual clock; answers its result and the credits the sandbox billed. */
  async function sync(writeMode: string, budget?: number): Promise<{ result: RunResult; credits: number }> {
    const raw = {
      api: { base_url: sandbox.url, api_key: KEY },
      destination: { type: 'duckdb', path: 'unused.duckdb' },
      seeds: { profiles: WATCHED },
      streams: { profiles: { refresh_after_watched: '90d', write_mode: writeMode }, signals: {}, triggers: {} },
      batch: { poll_interval_ms: 10 },
      ...(budget === undefined ? {} : { budget: { max_credits_per_run: budget } }),
    };
    const before = sandbox.ledger.entries.length;
    const prepared = await prepareSync({
      config: parseConfig(JSON.stringify(raw), 'test'),
      baseDir: '.',
      manifests: await loadManifests(),
      destination,
      now: () => sandbox.clock.now(),
    });
    const result = await runSync(prepared, { client, reporter: silent });
    return { result, credits: sandbox.ledger.entries.slice(before).reduce((n, e) => n + e.credits, 0) };
  }

  /** The Triggers whose diff names an applied field, by the profile their Signal watches, oldest first. */
  async function appliedTriggers(): Promise<Map<string, Trigger[]>> {
    const get = async (path: string) =>
      (await (await fetch(`${sandbox.url}${path}`, { headers: { 'x-api-key': KEY } })).json()) as { data: unknown[] };
    const signals = (await get('/v1/signals?limit=100')).data as { id: string; target: { site_url: string } }[];
    const urlOf = new Map(signals.map((s) => [s.id, s.target.site_url]));
    const byProfile = new Map<string, Trigger[]>();
    for (const trigger of (await get('/v1/triggers?limit=100')).data as Trigger[]) {
      if (!Object.keys(trigger.diff).some((field) => field in APPLIED)) continue;
      const url = urlOf.get(trigger.signal_id)!;
      byProfile.set(url, [...(byProfile.get(url) ?? []), trigger]);
    }
    return byProfile;
  }

  const table = () => `${destination.schema}.profiles`;
  const iso = (value: unknown) => new Date(value as string).toISOString();

  it.each(['merge', 'history'])(
    'given watched profiles, when Triggers report changes and the budget stops the refresh, then the %s table takes their values at 0 credits, once, and the refresh later replaces them',
    async (writeMode) => {
      expect((await sync(writeMode)).credits).toBe(WATCHED.length);
      await sandbox.clock.advance(10 * DAY);
      const triggers = await appliedTriggers();
      console.info(`[trigger apply, ${kind} ${writeMode}] ${triggers.size} of ${WATCHED.length} profiles changed`);
      expect(triggers.size).toBeGreaterThan(0);

      // The budget stops the refresh the Triggers made due: the rows still take what the Triggers said, for nothing.
      const applied = await sync(writeMode, 0);
      expect(applied.credits).toBe(0);
      const outcome = applied.result.streams.find((o) => o.stream === 'profiles')!;
      const versions = [...triggers.values()].reduce((n, list) => n + list.length, 0);
      // Merge: one update a Trigger; history: one version a Trigger.
      expect(outcome.fromTriggers).toBe(versions);

      const rows = await destination.query<Record<string, unknown>>(
        `select * from ${table()} ${writeMode === 'history' ? 'where _valid_to is null' : ''} order by url`,
      );
      expect(rows).toHaveLength(WATCHED.length);
      for (const row of rows) {
        const list = triggers.get(String(row.seed));
        if (!list) {
          expect(row._trigger_id, `${String(row.seed)} had no Trigger`).toBeNull();
          continue;
        }
        const last = list.at(-1)!;
        expect(row._trigger_id).toBe(last.trigger_id);
        expect(iso(row._trigger_checked_at)).toBe(iso(last.checked_at));
        // Each column holds what the latest Trigger naming its field said.
        for (const [field, column] of Object.entries(APPLIED)) {
          const said = list.filter((t) => field in t.diff).at(-1);
          if (!said) continue;
          const value = column === 'skills' ? JSON.parse(String(row[column])) : row[column];
          expect(value, `${column} of ${String(row.seed)}`).toEqual(said.diff[field]!.after);
        }
      }
      if (writeMode === 'history') await expectVersionsFromTriggers(triggers);

      // Applying again changes nothing: each Trigger is in its row once.
      const again = await sync(writeMode, 0);
      expect(again.credits).toBe(0);
      expect(again.result.streams.find((o) => o.stream === 'profiles')!.fromTriggers).toBeUndefined();

      // With credits, the refresh those Triggers made due runs and replaces what they said with the whole profile.
      const refreshed = await sync(writeMode);
      expect(refreshed.credits).toBe(triggers.size);
      const marked = await destination.query<{ n: unknown }>(
        `select count(*) as n from ${table()} where _trigger_id is not null ${writeMode === 'history' ? 'and _valid_to is null' : ''}`,
      );
      expect(Number(marked[0]!.n)).toBe(0);
    },
  );

  /**
   * History: each Trigger started a version, in order, with the child rows of the version before it.
   * The sandbox's clock runs ahead of this machine's here, so each starts just before the apply, not
   * at its check (the destination test has a version start at the check itself).
   */
  async function expectVersionsFromTriggers(triggers: Map<string, Trigger[]>): Promise<void> {
    for (const [seed, list] of triggers) {
      const versions = await destination.query<Record<string, unknown>>(
        `select url, _valid_from, _valid_to, _trigger_id, _trigger_checked_at from ${table()} where seed = $1 order by _valid_from`,
        [seed],
      );
      expect(versions.map((v) => v._trigger_id)).toEqual([null, ...list.map((t) => t.trigger_id)]);
      for (let i = 1; i < versions.length; i++) {
        expect(iso(versions[i]!._trigger_checked_at)).toBe(iso(list[i - 1]!.checked_at));
        expect(iso(versions[i - 1]!._valid_to)).toBe(iso(versions[i]!._valid_from));
        expect(iso(versions[i]!._valid_from) > iso(versions[i - 1]!._valid_from)).toBe(true);
      }
      const positions = await destination.query<{ from: unknown; n: unknown }>(
        `select _parent_valid_from as "from", count(*) as n from ${table()}__positions where _parent_url = $1 group by 1`,
        [versions[0]!.url],
      );
      const counts = new Map(positions.map((p) => [iso(p.from), Number(p.n)]));
      const first = counts.get(iso(versions[0]!._valid_from)) ?? 0;
      expect(first, `positions of ${seed}`).toBeGreaterThan(0);
      for (const version of versions) expect(counts.get(iso(version._valid_from)) ?? 0).toBe(first);
    }
  }
});

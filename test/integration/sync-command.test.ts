import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/index.js';
import type { DestinationConfig } from '../../src/destinations/destination.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { tempWorkspace, writeConfig } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { syncedWarehouse } from '../helpers/synced-warehouse.js';
import { dropPostgresSchema } from '../helpers/postgres.js';
import { e2eBackends, queryDestination as query } from '../helpers/destinations.js';
import {
  COMPANIES,
  countRows as count,
  inSyncWorkspace as inWorkspace,
  PRIVATE,
  PROFILES,
  syncConfig as configFor,
} from '../helpers/sync-workspace.js';

// `seedline sync`, `plan`, `query` and `status` run in-process: the same command lines, exit codes
// and output as the CLI, without a process each (kill -9 trials: test/e2e/sync-kill.test.ts).
async function sync(configPath: string, extra: string[] = [], env: NodeJS.ProcessEnv = {}) {
  return runCliInProcess(['sync', '--config', configPath, ...extra], { env });
}

const backends = e2eBackends;

describe.each(backends)('seedline sync into $name', ({ name, make }) => {
  let sandbox: Sandbox;
  let dest: DestinationConfig | undefined;
  let configPath: string;
  let first: Awaited<ReturnType<typeof sync>>;

  beforeAll(async () => {
    sandbox = await startSandbox({ rpm: 100_000, concurrentBatchJobs: 5 });
    const dir = await tempWorkspace();
    dest = await make(dir, 'full');
    if (!dest) return;
    configPath = await writeConfig(dir, configFor({ sandbox, destination: dest }));
    first = await sync(configPath);
  });
  afterAll(async () => {
    await sandbox?.close();
    if (dest?.type === 'postgres') await dropPostgresSchema(dest.schema!);
  });

  it('given the seeds, when synced, then every reachable profile loads with typed columns and linked children', async ({
    skip,
  }) => {
    if (!dest) return skip(`${name} unavailable`);
    expect(first.stderr).not.toMatch(/svc_live_e2e/);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/profiles\s+partial/);
    expect(await count(dest, 'profiles')).toBe(PROFILES.length);
    const orphans = await query(
      dest,
      `select count(*) as n from "${dest.schema}".profiles__positions c left join "${dest.schema}".profiles p on p.url = c._parent_url where p.url is null`,
    );
    expect(Number(orphans[0]?.n)).toBe(0);
    expect(await count(dest, 'profiles__positions')).toBeGreaterThan(PROFILES.length);
    const types = await query(
      dest,
      `select column_name, data_type from information_schema.columns where table_schema = '${dest.schema}' and table_name = 'profiles' and column_name in ('scraped_at', 'connections_count', 'urn', 'seed')`,
    );
    const typeOf = Object.fromEntries(types.map((t) => [t.column_name, String(t.data_type).toLowerCase()]));
    expect(typeOf.scraped_at).toMatch(/timestamp/);
    expect(typeOf.urn).toMatch(/varchar|text|character varying/);
    expect(typeOf.seed).toMatch(/varchar|text|character varying/);
    expect(await count(dest, 'companies')).toBe(COMPANIES.length);
    expect(await count(dest, 'jobs')).toBeGreaterThan(0);
    expect(await count(dest, 'activity_posts')).toBeGreaterThan(0);
  });

  it('given private and deleted seeds, when synced, then they end failed in the ledger with the reason and the run exits 0', async ({
    skip,
  }) => {
    if (!dest) return skip(`${name} unavailable`);
    const failed = await query(
      dest,
      `select seed, status, error from "${dest.schema}"._seedline_seeds where stream = 'profiles' and status <> 'fetched' order by seed`,
    );
    expect(failed.map((f) => f.seed).sort()).toEqual([...PRIVATE].sort());
    for (const row of failed) {
      expect(row.status).toBe('failed');
      expect(String(row.error)).toMatch(/unprocessable_target/);
    }
    expect(first.stdout).toMatch(/unprocessable_target|failed/);
  });

  it('given unchanged seeds, when synced again, then it bills 0 credits and loads no duplicates', async ({ skip }) => {
    if (!dest) return skip(`${name} unavailable`);
    const billedBefore = sandbox.ledger.totalBilled();
    const rowsBefore = await count(dest, 'profiles');
    const positionsBefore = await count(dest, 'profiles__positions');
    const second = await sync(configPath);
    expect(second.code, second.stderr).toBe(0);
    expect(sandbox.ledger.totalBilled()).toBe(billedBefore);
    expect(await count(dest, 'profiles')).toBe(rowsBefore);
    expect(await count(dest, 'profiles__positions')).toBe(positionsBefore);
    expect(second.stdout).toMatch(/0 credits/);
  });
});

describe('on a synced warehouse', () => {
  const PROFILE_STREAMS = { profiles: {}, companies: {} };
  // Profiles (18 seeds, 2 refused) and companies synced once; each test changes a copy of its own.
  const syncedCopy = syncedWarehouse(async (dir) => {
    await inWorkspace({ rpm: 100_000 }, async ({ sandbox }) => {
      const destination = { type: 'duckdb', path: join(dir, 'w.duckdb'), schema: 'seedline' };
      const configPath = await writeConfig(dir, configFor({ sandbox, destination, streams: PROFILE_STREAMS }));
      expect((await sync(configPath)).code).toBe(0);
    });
  });

  /** A copy of the synced warehouse with a config on a fresh sandbox (`seeds` replaces the profile seeds). */
  async function onCopy<T>(
    seeds: string[] | undefined,
    body: (w: { sandbox: Sandbox; configPath: string; dest: DestinationConfig }) => Promise<T>,
  ): Promise<T> {
    const { dir, path } = await syncedCopy();
    return inWorkspace({ rpm: 100_000 }, async ({ sandbox }) => {
      const dest: DestinationConfig = { type: 'duckdb', path, schema: 'seedline' };
      const config = configFor({ sandbox, destination: dest, streams: PROFILE_STREAMS });
      if (seeds) config.seeds.profiles = seeds;
      return body({ sandbox, configPath: await writeConfig(dir, config), dest });
    });
  }

  it('given an empty warehouse, when planned, then each seed is due once expected and twice at worst', async () => {
    await inWorkspace({ rpm: 100_000 }, async ({ sandbox, dir, dest }) => {
      const configPath = await writeConfig(dir, configFor({ sandbox, destination: dest, streams: PROFILE_STREAMS }));
      const before = await runCliInProcess(['plan', '--config', configPath]);
      expect(before.code, before.stderr).toBe(0);
      const seeds = PROFILES.length + PRIVATE.length;
      // Worst case: each item and its single retry (batch.retry_billed_failures: 1); expected: each item once.
      expect(before.stdout).toMatch(new RegExp(`profiles\\s+${seeds}\\s+0\\s+0\\s+\\d+\\s+${2 * seeds}\\s+${seeds}`));
      expect(before.stdout).toMatch(/balance: \d+ credits/);
    });
  });

  it('given a synced warehouse, when planned, queried and inspected, then they report without calling the service', async () => {
    await onCopy(undefined, async ({ sandbox, configPath }) => {
      const calls = sandbox.ledger.entries.length;
      const after = await runCliInProcess(['plan', '--config', configPath]);
      expect(after.stdout).toMatch(/profiles\s+0\s+0\s+18\s+0\s+0\s+0/);
      const json = await runCliInProcess([
        'query',
        '--config',
        configPath,
        '--format',
        'json',
        'select count(*) as n from seedline.profiles',
      ]);
      expect(JSON.parse(json.stdout)).toEqual([{ n: PROFILES.length }]);
      const csv = await runCliInProcess([
        'query',
        '--config',
        configPath,
        '--format',
        'csv',
        "select seed, status from seedline._seedline_seeds where status = 'failed' order by seed",
      ]);
      expect(csv.stdout.trim().split('\n')).toEqual(['seed,status', ...[...PRIVATE].sort().map((s) => `${s},failed`)]);
      const status = await runCliInProcess(['status', '--config', configPath]);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toMatch(/profiles\s+fetched\s+16/);
      // One run stream by stream: what it sent, how long it took, what it loaded and billed.
      const [run] = (
        JSON.parse((await runCliInProcess(['status', '--config', configPath, '--json'])).stdout) as {
          runs: { run: string }[];
        }
      ).runs;
      const shown = JSON.parse(
        (await runCliInProcess(['status', '--config', configPath, '--run', run!.run, '--json'])).stdout,
      ) as {
        run: { run: string; status: string };
        streams: { stream: string; requests: number; seconds: number; records: number }[];
      };
      expect(shown.run).toMatchObject({ run: run!.run });
      const profiles = shown.streams.find((s) => s.stream === 'profiles')!;
      expect(profiles.requests).toBeGreaterThan(0);
      expect(profiles.seconds).toBeGreaterThanOrEqual(0);
      expect(profiles.records).toBe(PROFILES.length);
      const table = await runCliInProcess(['status', '--config', configPath, '--run', run!.run]);
      expect(table.stdout).toMatch(/stream\s+status\s+requests\s+seconds\s+records/);
      const unknown = await runCliInProcess(['status', '--config', configPath, '--run', 'run_nope']);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toContain('--run: no run run_nope in this warehouse');
      expect(sandbox.ledger.entries.length).toBe(calls);
    });
  });

  it('given a synced warehouse, when one bad seed is added and synced, then only that seed is called, only it fails anew, and the run exits 0', async () => {
    const bad = 'https://www.network.example/company/acme';
    await onCopy([...PROFILES, ...PRIVATE, bad], async ({ sandbox, configPath, dest }) => {
      const second = await sync(configPath);
      expect(second.code, second.stderr).toBe(0);
      expect(second.stdout).toMatch(/profiles\s+partial\s+0\s+0\s+18\s+1\s/);
      const failed = await query(
        dest,
        `select seed_key from "${dest.schema}"._seedline_seeds where status = 'failed' order by seed_key`,
      );
      expect(failed).toEqual(['acme', 'deleted-gone-two', 'private-hidden-one'].map((seed_key) => ({ seed_key })));
      // The 18 seeds of the warehouse are fresh or failed already: none is sent again (the service
      // refuses the bad one before its ledger).
      expect(sandbox.ledger.entries.filter((e) => e.operation === 'profiles.enrich')).toEqual([]);
    });
  });
});

describe('every stream', () => {
  it('given Signals with Triggers and every stream configured, when synced, then each stream loads its table', async () => {
    await inWorkspace({ rpm: 100_000 }, async ({ sandbox, dir, dest }) => {
      const client = new ApiClient({ baseUrl: sandbox.url, apiKey: 'svc_live_e2e' });
      try {
        const created = await client.bulkCreateSignals({
          template: {
            name_prefix: 'watch',
            tags: ['e2e'],
            schedule: { interval: '1d' },
            criteria: { mode: 'field_change', fields: ['headline', 'position'] },
          },
          targets: PROFILES.slice(0, 3).map((site_url) => ({ type: 'profile' as const, site_url })),
        });
        expect(created.data.created).toBe(3);
        // Baseline, then enough virtual days for the drifting profiles to change and trigger.
        for (let day = 0; day < 60; day++) await sandbox.clock.advance(86_400_000);
      } finally {
        await client.close();
      }
      const config = {
        ...configFor({
          sandbox,
          destination: dest,
          streams: {
            companies: {},
            posts: {},
            // A point every run (the default 1d adds one a day), so the second run appends one.
            headcount: { refresh_after: '0s' },
            company_posts: { max_pages: 1 },
            people_search: { searches: [{ id: 'ctos', filters: { titles: ['CTO'] }, max_results: 30 }] },
            company_search: {
              searches: [{ id: 'fintech', filters: { keywords: 'fintech' }, max_results: 10, variant: 'standard' }],
            },
            triggers: {},
            signals: {},
            usage: { months: 2 },
            account: {},
          },
        }),
        seeds: {
          companies: COMPANIES,
          posts: ['https://www.network.example/posts/alpha-1', 'https://www.network.example/posts/beta-2'],
          headcount: [{ company_url: COMPANIES[0], filters: { titles: ['engineer'], seniorities: ['senior'] } }],
        },
      };
      const configPath = await writeConfig(dir, config);
      const result = await sync(configPath);
      expect(result.code, result.stdout + result.stderr).toBe(0);
      for (const [table, atLeast] of [
        ['companies', COMPANIES.length],
        ['posts', 2],
        ['headcount', 1],
        ['company_posts', 1],
        ['people_search', 1],
        ['company_search', 1],
        ['triggers', 1],
        ['signals', 3],
        ['usage', 1],
        ['account', 1],
      ] as const) {
        expect(await count(dest, table), table).toBeGreaterThanOrEqual(atLeast);
      }
      const second = await sync(configPath);
      expect(second.code, second.stderr).toBe(0);
      expect(await count(dest, 'signals')).toBe(3);
      expect(await count(dest, 'headcount')).toBe(2);
      expect(await count(dest, 'account')).toBe(2);
    });
  });
});

describe('activity incremental', () => {
  it('given new posts after the first run, when synced again, then only first pages are fetched and the new posts load', async () => {
    await inWorkspace({ rpm: 100_000 }, async ({ sandbox, dir, dest }) => {
      const streams = { profiles: {}, activity: { kinds: ['posts'], refresh_after: '0s', max_pages: 3 } };
      const configPath = await writeConfig(dir, configFor({ sandbox, destination: dest, streams }));
      expect((await sync(configPath)).code).toBe(0);
      const activityCalls = () =>
        sandbox.ledger.entries.filter((e) => e.operation === 'profiles.activity' && e.credits > 0).length;
      const callsBefore = activityCalls();
      const postsBefore = await count(dest, 'activity_posts');
      await sandbox.clock.advance(10 * 86_400_000);
      const second = await sync(configPath);
      expect(second.code, second.stderr).toBe(0);
      const newCalls = activityCalls() - callsBefore;
      expect(newCalls).toBeGreaterThan(0);
      expect(newCalls).toBeLessThanOrEqual(PROFILES.length);
      expect(await count(dest, 'activity_posts')).toBeGreaterThan(postsBefore);
    });
  });
});

describe('faults', () => {
  it('given 5% 429 and 5% 504 answers, when synced, then it completes with the same rows as without faults', async () => {
    const streams = { profiles: {}, companies: {}, activity: { kinds: ['posts'], max_pages: 1 } };
    const rowsWith = async (faults: Record<string, number>) => {
      return inWorkspace({ rpm: 100_000, faults, seed: 7 }, async ({ sandbox, dir, dest }) => {
        const result = await sync(await writeConfig(dir, configFor({ sandbox, destination: dest, streams })));
        expect(result.code, result.stderr).toBe(0);
        return {
          profiles: await query(dest, `select url from "${dest.schema}".profiles order by url`),
          companies: await count(dest, 'companies'),
          posts: await count(dest, 'activity_posts'),
        };
      });
    };
    expect(await rowsWith({ '429': 0.05, '504': 0.05 })).toEqual(await rowsWith({}));
  });
});

describe('seeds the service refuses or fumbles', () => {
  it('given a company URL among profile seeds and a flaky profile, when synced twice, then only the bad seed fails, the flaky one loads, and nothing is blocked', async () => {
    await inWorkspace({ rpm: 100_000 }, async ({ sandbox, dir, dest }) => {
      const config = configFor({ sandbox, destination: dest, streams: { profiles: {} }, batch: { chunk_size: 1000 } });
      const bad = 'https://www.network.example/company/acme';
      const flaky = 'https://www.network.example/in/flaky-fred';
      config.seeds.profiles = [...PROFILES.slice(0, 5), bad, flaky];
      const configPath = await writeConfig(dir, config);
      const first = await sync(configPath);
      expect(first.code, first.stderr).toBe(0);
      expect(await count(dest, 'profiles')).toBe(6);
      const ledger = await query(
        dest,
        `select seed, status, error from "${dest.schema}"._seedline_seeds order by seed`,
      );
      expect(ledger.filter((r) => r.status === 'failed').map((r) => r.seed)).toEqual([bad]);
      expect(String(ledger.find((r) => r.seed === bad)?.error)).toMatch(/invalid_request/);
      const flakyCharges = sandbox.ledger.entries.filter(
        (e) => e.target.endsWith('/in/flaky-fred') && e.credits > 0 && e.billed,
      );
      expect(flakyCharges.length).toBeLessThanOrEqual(2);

      const second = await sync(configPath);
      expect(second.code, second.stderr).toBe(0);
      expect(second.stdout).toMatch(/profiles\s+succeeded/);
    });
  });
});

describe('config and budget', () => {
  it('given a config without budget, when planned and synced, then both say the default of 1000 credits a run applies, and the run stops there', async () => {
    await inWorkspace({ rpm: 100_000 }, async ({ sandbox, dir }) => {
      // 1,200 profiles: 1 credit each (2 reserved with the single retry of a billed failure).
      const seeds = Array.from({ length: 1200 }, (_, n) => `https://www.network.example/in/budget-person-${n}`);
      const config = {
        ...configFor({
          sandbox,
          destination: { type: 'duckdb', path: join(dir, 'w.duckdb') },
          streams: { profiles: {} },
        }),
        seeds: { profiles: seeds },
        batch: { chunk_size: 100, poll_interval_ms: 20 },
      };
      const path = await writeConfig(dir, config);
      const plan = await runCliInProcess(['plan', '--config', path, '--json']);
      expect(plan.code, plan.stderr).toBe(0);
      expect(JSON.parse(plan.stdout).limits).toMatchObject({
        per_run: 1000,
        per_run_from: 'default',
        binding: { limit: 1000, name: 'budget.max_credits_per_run' },
      });
      const text = await runCliInProcess(['plan', '--config', path]);
      expect(text.stdout).toContain('the default: the config sets no budget.max_credits_per_run');

      const result = await sync(path);
      expect(result.stdout).toContain(
        'budget: 1000 credits a run, the default: the config sets no budget.max_credits_per_run',
      );
      const billed = sandbox.ledger.entries.reduce((n, e) => n + e.credits, 0);
      expect(billed).toBeGreaterThan(0);
      expect(billed).toBeLessThanOrEqual(1000);
      expect(result.stdout).toMatch(/budget\.max_credits_per_run/);
    });
  });

  it('given a bad config, when synced, then it exits non-zero naming the key before any call', async () => {
    await inWorkspace({}, async ({ sandbox, dir }) => {
      const config = configFor({
        sandbox,
        destination: { type: 'duckdb', path: join(dir, 'w.duckdb') },
        streams: { profiles: { refresh_after: 'weekly' } },
      });
      const result = await sync(await writeConfig(dir, config));
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('streams.profiles.refresh_after');
      expect(sandbox.ledger.entries.length).toBe(0);
    });
  });

  it('given a seed file that does not exist, when synced, then it exits 2 (a config error) naming the key before any call and leaves no run running', async () => {
    await inWorkspace({}, async ({ sandbox, dir, dest }) => {
      const config = {
        ...configFor({ sandbox, destination: dest, streams: { profiles: {} } }),
        seeds: { profiles: { file: 'nope.csv' } },
      };
      const result = await sync(await writeConfig(dir, config));
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('seeds.profiles.file');
      expect(sandbox.ledger.entries.length).toBe(0);
      expect(await query(dest, `select status from "${dest.schema}"._seedline_runs where status = 'running'`)).toEqual(
        [],
      );
    });
  });

  it('given seeds from SQL on the warehouse and from a CSV file, when synced, then those seeds load', async () => {
    await inWorkspace({ rpm: 100_000 }, async ({ sandbox, dir, dest }) => {
      await writeFile(join(dir, 'companies.csv'), `name,url\nAcme,"${COMPANIES[0]}"\nGlobex,${COMPANIES[1]}\n`);
      const config = {
        ...configFor({ sandbox, destination: dest, streams: { profiles: {}, companies: {} } }),
        seeds: {
          profiles: { sql: "select 'sql-seed-one' as url union all select 'sql-seed-two'" },
          companies: { file: 'companies.csv', column: 'url' },
        },
      };
      const result = await sync(await writeConfig(dir, config));
      expect(result.code, result.stderr).toBe(0);
      const seeds = await query(
        dest,
        `select stream, seed from "${dest.schema}"._seedline_seeds where status = 'fetched' order by stream, seed`,
      );
      expect(seeds).toEqual([
        { stream: 'companies', seed: COMPANIES[0] },
        { stream: 'companies', seed: COMPANIES[1] },
        { stream: 'profiles', seed: 'sql-seed-one' },
        { stream: 'profiles', seed: 'sql-seed-two' },
      ]);
    });
  });

  it('given a budget smaller than the work, when synced, then it never spends past the budget and says so', async () => {
    await inWorkspace({ rpm: 100_000 }, async ({ sandbox, dir }) => {
      const config = configFor({
        sandbox,
        destination: { type: 'duckdb', path: join(dir, 'w.duckdb') },
        streams: { profiles: {} },
        budget: 7,
      });
      const result = await sync(await writeConfig(dir, config));
      expect(result.code, result.stderr).toBe(0);
      expect(sandbox.ledger.totalBilled()).toBeLessThanOrEqual(7);
      expect(result.stdout + result.stderr).toMatch(/budget/);
    });
  });
});

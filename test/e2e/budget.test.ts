import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDestination } from '../../src/destinations/create-destination.js';
import type { DestinationConfig } from '../../src/destinations/destination.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { runCli, tempWorkspace, writeConfig } from '../helpers/cli.js';

const PROFILES = [
  ...Array.from({ length: 12 }, (_, i) => `https://www.network.example/in/budget-person-${i}`),
  'private-budget-hidden',
];
const COMPANIES = ['acme-analytics', 'globex', 'initech'].map((c) => `https://www.network.example/company/${c}`);
const SEARCH = { id: 'engineers', filters: { keywords: 'data engineer' }, max_results: 30 };

function configFor(sandbox: Sandbox, dest: DestinationConfig, budget: Record<string, number>) {
  return {
    api: { base_url: sandbox.url, api_key: 'svc_live_budget' },
    destination: dest,
    seeds: { profiles: PROFILES, companies: COMPANIES },
    streams: { profiles: {}, companies: {}, people_search: { searches: [SEARCH] } },
    batch: { chunk_size: 4, poll_interval_ms: 20 },
    budget,
  };
}

async function query(dest: DestinationConfig, sql: string): Promise<Record<string, unknown>[]> {
  const destination = await createDestination(dest);
  try {
    return await destination.query(sql);
  } finally {
    await destination.close();
  }
}

async function balanceOf(sandbox: Sandbox): Promise<number> {
  const response = await fetch(`${sandbox.url}/v1/account`, { headers: { 'x-api-key': 'svc_live_budget' } });
  return ((await response.json()) as { data: { credits_remaining: number } }).data.credits_remaining;
}

/** Credits billed per target: a target billed twice would be paying twice for the same thing. */
function billedTwice(sandbox: Sandbox): string[] {
  const counts = new Map<string, number>();
  for (const entry of sandbox.ledger.entries)
    if (entry.billed && entry.credits > 0) counts.set(entry.target, (counts.get(entry.target) ?? 0) + 1);
  return [...counts].filter(([, n]) => n > 1).map(([target]) => target);
}

describe('credit budget against a live-billing sandbox', () => {
  it('given a small balance and keep_balance, when synced, then it stops at the budget, agrees with the ledger, and the next run finishes the rest without refetching', async () => {
    const sandbox = await startSandbox({ rpm: 100_000, balance: 40, concurrentBatchJobs: 2 });
    try {
      const dir = await tempWorkspace();
      const dest: DestinationConfig = { type: 'duckdb', path: join(dir, 'w.duckdb'), schema: 'seedline' };
      // Balance 40, keep 28: 12 credits may go, less than the 30 the work can cost.
      const configPath = await writeConfig(
        dir,
        configFor(sandbox, dest, { keep_balance: 28, max_credits_per_run: 20 }),
      );

      const planned = await runCli(['plan', '--config', configPath, '--json']);
      expect(planned.code, planned.stderr).toBe(0);
      const plan = JSON.parse(planned.stdout);
      expect(plan.balance).toBe(40);
      expect(plan.limits.binding).toEqual({ limit: 12, name: 'budget.keep_balance' });
      expect(plan.verdict).toBe('will_stop');
      const byStream = Object.fromEntries(plan.streams.map((s: { stream: string }) => [s.stream, s]));
      // An enrichment item's worst case counts its single retry (batch.retry_billed_failures: 1).
      expect(byStream.profiles).toMatchObject({ units: PROFILES.length, worst_case_credits: 2 * PROFILES.length });
      expect(byStream.companies).toMatchObject({ units: COMPANIES.length, worst_case_credits: 2 * COMPANIES.length });
      // A search of 30 results is two pages of 25 at 2 credits each.
      expect(byStream.people_search).toMatchObject({ units: 1, calls: 1, worst_case_credits: 4 });
      expect(plan.cost_source).toBe('openapi');
      expect(sandbox.ledger.entries).toHaveLength(0);

      const first = await runCli(['sync', '--config', configPath]);
      expect(first.code, first.stderr).toBe(0);
      expect(first.stdout).toMatch(/budget_exhausted/);
      const spentFirst = sandbox.ledger.totalBilled();
      expect(spentFirst).toBeGreaterThan(0);
      expect(spentFirst).toBeLessThanOrEqual(12);
      expect(await balanceOf(sandbox)).toBeGreaterThanOrEqual(28);
      const [run1] = await query(
        dest,
        'select credits_used, credits_estimated, stop_reason, streams from seedline._seedline_runs',
      );
      expect(run1).toMatchObject({ credits_used: spentFirst, stop_reason: 'budget_exhausted' });
      // Reconciliation per stream: expected against actual, and why each stopped.
      const perStream = (
        JSON.parse(String(run1?.streams)) as {
          stream: string;
          estimatedCredits: number;
          worstCaseCredits: number;
          credits: number;
          stopped?: string;
        }[]
      ).map((o) => [o.stream, o.estimatedCredits, o.worstCaseCredits, o.credits, o.stopped]);
      expect(perStream).toEqual([
        ['profiles', PROFILES.length, 2 * PROFILES.length, 12, 'budget_exhausted'],
        ['companies', COMPANIES.length, 2 * COMPANIES.length, 0, 'budget_exhausted'],
        ['people_search', 4, 4, 0, 'budget_exhausted'],
      ]);
      expect(Number(run1?.credits_estimated)).toBe(PROFILES.length + COMPANIES.length + 4);
      const pendingAfterFirst = await query(
        dest,
        "select stream, seed from seedline._seedline_seeds where status = 'pending'",
      );
      const fetchedFirst = await query(dest, "select seed_key from seedline._seedline_seeds where status = 'fetched'");
      expect(pendingAfterFirst.length).toBeGreaterThan(0);
      expect(fetchedFirst.length).toBeGreaterThan(0);

      // A fresh budget: the rest is fetched, nothing twice.
      await writeConfig(dir, configFor(sandbox, dest, { max_credits_per_run: 100 }));
      const second = await runCli(['sync', '--config', configPath]);
      expect(second.code, second.stderr).toBe(0);
      expect(second.stdout).not.toMatch(/budget_exhausted/);
      expect(billedTwice(sandbox)).toEqual([]);
      const seeds = await query(
        dest,
        'select status, count(*) as n from seedline._seedline_seeds group by status order by status',
      );
      expect(seeds.map((r) => [r.status, Number(r.n)])).toEqual([
        ['failed', 1],
        ['fetched', PROFILES.length - 1 + COMPANIES.length],
      ]);
      expect(Number((await query(dest, 'select count(*) as n from seedline.people_search'))[0]?.n)).toBeGreaterThan(0);
      const runs = await query(dest, 'select sum(credits_used) as used from seedline._seedline_runs');
      expect(Number(runs[0]?.used)).toBe(sandbox.ledger.totalBilled());
      // The plan's worst case was never below what the work cost.
      expect(sandbox.ledger.totalBilled()).toBeLessThanOrEqual(plan.totals.worst_case_credits);

      // A monthly cap: this month's runs already spent the total; 3 more credits is all a full refresh may add.
      const spentSoFar = sandbox.ledger.totalBilled();
      await writeConfig(dir, configFor(sandbox, dest, { max_credits_per_month: spentSoFar + 3 }));
      const third = await runCli(['sync', '--config', configPath, '--full-refresh']);
      expect(third.code, third.stderr).toBe(0);
      expect(third.stdout).toMatch(/budget_exhausted/);
      expect(sandbox.ledger.totalBilled() - spentSoFar).toBeLessThanOrEqual(3);
      const monthly = await query(dest, 'select sum(credits_used) as used from seedline._seedline_runs');
      expect(Number(monthly[0]?.used)).toBe(sandbox.ledger.totalBilled());
    } finally {
      await sandbox.close();
    }
  });

  it('given a run killed while reading its batch results, when the next run has a monthly cap, then the killed run counts what it paid and the next run loads the paid job without counting it again', async () => {
    const sandbox = await startSandbox({ rpm: 100_000, concurrentBatchJobs: 1 });
    try {
      const dir = await tempWorkspace();
      const dest: DestinationConfig = { type: 'duckdb', path: join(dir, 'w.duckdb'), schema: 'seedline' };
      const seeds = PROFILES.slice(0, 6);
      const config = (budget: Record<string, number>) => ({
        ...configFor(sandbox, dest, budget),
        seeds: { profiles: seeds },
        streams: { profiles: {} },
        batch: { chunk_size: 10, poll_interval_ms: 20 },
      });
      const configPath = await writeConfig(dir, config({}));

      const killed = await runCli(['sync', '--config', configPath], { env: { SEEDLINE_TEST_CRASH_AT: 'mid-results' } });
      expect(killed.code).not.toBe(0);
      const paid = sandbox.ledger.totalBilled();
      expect(paid).toBe(seeds.length);
      // A killed run counts what it may have been billed: read bills plus the rest of its job at risk.
      const counted = 'credits_used + credits_at_risk - credits_settled_earlier';
      const [dead] = await query(dest, `select ${counted} as counted from seedline._seedline_runs`);
      expect(Number(dead?.counted)).toBe(paid);

      await writeConfig(dir, config({ max_credits_per_month: paid }));
      const resumed = await runCli(['sync', '--config', configPath]);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(sandbox.ledger.totalBilled()).toBe(paid);
      // The next run books the bills it reads against the killed run's at-risk items: the month counts the job once.
      const runs = await query(
        dest,
        `select status, ${counted} as counted from seedline._seedline_runs order by started_at`,
      );
      expect(runs.map((r) => [r.status, Number(r.counted)])).toEqual([
        ['interrupted', paid],
        ['succeeded', 0],
      ]);
      const [ledger] = await query(dest, 'select sum(credits) as credits from seedline._seedline_seeds');
      expect(Number(ledger?.credits)).toBe(paid);
      const statuses = await query(dest, 'select status, count(*) as n from seedline._seedline_seeds group by status');
      expect(statuses.map((r) => [r.status, Number(r.n)])).toEqual([['fetched', seeds.length]]);
    } finally {
      await sandbox.close();
    }
  });

  it('given a balance smaller than the work and no budget, when the service answers 402, then the stream stops like a spent budget and names the balance', async () => {
    const sandbox = await startSandbox({ rpm: 100_000, balance: 6, concurrentBatchJobs: 1 });
    try {
      const dir = await tempWorkspace();
      const dest: DestinationConfig = { type: 'duckdb', path: join(dir, 'w.duckdb'), schema: 'seedline' };
      const config = { ...configFor(sandbox, dest, {}), streams: { profiles: {} } };
      const result = await runCli(['sync', '--config', await writeConfig(dir, config)]);

      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/402 insufficient_credits.*the account balance is \d+ credits/);
      expect(sandbox.ledger.totalBilled()).toBeLessThanOrEqual(6);
      const [run] = await query(dest, 'select credits_used, stop_reason from seedline._seedline_runs');
      expect(run).toEqual({ credits_used: sandbox.ledger.totalBilled(), stop_reason: 'budget_exhausted' });
      const statuses = await query(
        dest,
        'select status, count(*) as n from seedline._seedline_seeds group by status order by status',
      );
      expect(statuses.map((r) => [r.status, Number(r.n)])).toEqual([
        ['fetched', sandbox.ledger.totalBilled()],
        ['pending', PROFILES.length - sandbox.ledger.totalBilled()],
      ]);
    } finally {
      await sandbox.close();
    }
  });
});

import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DestinationConfig } from '../../src/destinations/destination.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import type { LedgerEntry } from '../../src/sandbox/billing-ledger.js';
import { type CliResult, tempWorkspace, writeConfig } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { dropPostgresSchema } from '../helpers/postgres.js';
import { e2eBackends, queryDestination as query } from '../helpers/destinations.js';

/** Every billed stream and the sandbox operation it is billed under (single call or batch item alike). */
const BILLED = {
  profiles: 'profiles.enrich',
  companies: 'companies.enrich',
  posts: 'posts.enrich',
  headcount: 'companies.headcount',
  jobs: 'search.jobs',
  activity: 'profiles.activity',
  company_posts: 'companies.posts',
  people_search: 'search.people',
  company_search: 'search.companies',
} as const;
type BilledStream = keyof typeof BILLED;
const STREAMS = Object.keys(BILLED) as BilledStream[];

const COMPANIES = ['acme-analytics', 'globex'].map((c) => `https://www.network.example/company/${c}`);

/** A config with every billed stream, each left at its default refresh_after, and small seeds. */
function configFor(sandbox: Sandbox, destination: DestinationConfig) {
  return {
    api: { base_url: sandbox.url, api_key: 'svc_live_second_run' },
    destination,
    seeds: {
      profiles: ['https://www.network.example/in/person-1', 'https://www.network.example/in/person-2', 'person-3'],
      companies: COMPANIES,
      posts: ['https://www.network.example/posts/alpha-1', 'https://www.network.example/posts/beta-2'],
      headcount: [{ company_url: COMPANIES[0], filters: { titles: ['engineer'] } }],
    },
    streams: {
      profiles: {},
      companies: {},
      posts: {},
      headcount: {},
      jobs: { keywords: ['data engineer'], max_results: 10 },
      activity: { kinds: ['posts'], max_pages: 1 },
      company_posts: { max_pages: 1 },
      people_search: { searches: [{ id: 'ctos', filters: { titles: ['CTO'] }, max_results: 25 }] },
      company_search: { searches: [{ id: 'fintech', filters: { keywords: 'fintech' }, max_results: 25 }] },
    },
    batch: { chunk_size: 10, poll_interval_ms: 20 },
  };
}

/** Net credits the sandbox billed per stream's operation (refunds included) over `entries`. */
function billedByStream(entries: readonly LedgerEntry[]): Record<BilledStream, number> {
  const byOperation = new Map<string, number>();
  for (const entry of entries)
    if (entry.billed) byOperation.set(entry.operation, (byOperation.get(entry.operation) ?? 0) + entry.credits);
  return Object.fromEntries(STREAMS.map((stream) => [stream, byOperation.get(BILLED[stream]) ?? 0])) as Record<
    BilledStream,
    number
  >;
}

/** Row count of every data table of the destination's schema (system tables left out). */
async function rowCounts(config: DestinationConfig): Promise<Record<string, number>> {
  const schema = config.schema ?? 'seedline';
  const tables = await query(
    config,
    `select table_name from information_schema.tables where table_schema = '${schema}' and table_name not like '\\_%' escape '\\' order by table_name`,
  );
  const counts: Record<string, number> = {};
  for (const { table_name } of tables) {
    const rows = await query(config, `select count(*) as n from "${schema}"."${String(table_name)}"`);
    counts[String(table_name)] = Number(rows[0]?.n);
  }
  return counts;
}

describe.each(e2eBackends)('an immediate second sync into $name', ({ name, make }) => {
  let sandbox: Sandbox;
  let dest: DestinationConfig | undefined;
  let configPath: string;
  let first: CliResult;
  let firstBilled: Record<BilledStream, number>;
  let afterFirst: number;
  let rowsAfterFirst: Record<string, number>;

  beforeAll(async () => {
    sandbox = await startSandbox({ rpm: 100_000, concurrentBatchJobs: 5 });
    const dir = await tempWorkspace();
    dest = await make(dir, 'second_run');
    if (!dest) return;
    configPath = await writeConfig(dir, configFor(sandbox, dest));
    first = await runCliInProcess(['sync', '--config', configPath]);
    afterFirst = sandbox.ledger.entries.length;
    firstBilled = billedByStream(sandbox.ledger.entries);
    rowsAfterFirst = await rowCounts(dest);
  });
  afterAll(async () => {
    await sandbox?.close();
    if (dest?.type === 'postgres') await dropPostgresSchema(dest.schema!);
  });

  it('given every billed stream, when synced the first time, then each stream is billed and loads rows', async ({
    skip,
  }) => {
    if (!dest) return skip(`${name} unavailable: see the warning above`);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    for (const stream of STREAMS) expect(firstBilled[stream], stream).toBeGreaterThan(0);
    for (const table of [
      'profiles',
      'companies',
      'posts',
      'headcount',
      'jobs',
      'activity_posts',
      'company_posts',
      'people_search',
      'company_search',
    ]) {
      expect(rowsAfterFirst[table], table).toBeGreaterThan(0);
    }
  });

  it('given the first sync, when planned, then every billed stream has 0 worst-case credits', async ({ skip }) => {
    if (!dest) return skip(`${name} unavailable: see the warning above`);
    const plan = await runCliInProcess(['plan', '--config', configPath, '--json']);
    expect(plan.code, plan.stderr).toBe(0);
    const report = JSON.parse(plan.stdout) as {
      streams: { stream: string; worst_case_credits: number }[];
      totals: { worst_case_credits: number };
    };
    const worst = Object.fromEntries(report.streams.map((p) => [p.stream, p.worst_case_credits]));
    expect(worst).toEqual(Object.fromEntries(STREAMS.map((stream) => [stream, 0])));
    expect(report.totals.worst_case_credits).toBe(0);
    expect(sandbox.ledger.entries.length).toBe(afterFirst);
  });

  it('given an unchanged config, when synced again at once, then it bills 0 credits in total and per operation and the row counts stay', async ({
    skip,
  }) => {
    if (!dest) return skip(`${name} unavailable: see the warning above`);
    const second = await runCliInProcess(['sync', '--config', configPath]);
    expect(second.code, second.stdout + second.stderr).toBe(0);
    const added = sandbox.ledger.entries.slice(afterFirst);
    expect(
      added.filter((e) => e.credits !== 0),
      'charges or refunds of the second run',
    ).toEqual([]);
    expect(billedByStream(added)).toEqual(Object.fromEntries(STREAMS.map((stream) => [stream, 0])));
    expect(added.reduce((n, e) => n + (e.billed ? e.credits : 0), 0)).toBe(0);
    expect(await rowCounts(dest)).toEqual(rowsAfterFirst);
    const [run] = await query(
      dest,
      `select credits_used from "${dest.schema}"._seedline_runs order by started_at desc limit 1`,
    );
    expect(Number(run?.credits_used)).toBe(0);
  });
});

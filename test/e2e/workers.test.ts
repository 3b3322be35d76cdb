import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DestinationConfig } from '../../src/destinations/destination.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { runCli, spawnCli, tempWorkspace, writeConfig, type RunningCli } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { queryDestination as query } from '../helpers/destinations.js';
import { dropPostgresSchema, postgresAvailable, testPostgresUrl } from '../helpers/postgres.js';
import { eventually } from '../helpers/sandbox.js';
import { keyFingerprint } from '../../src/util/key-fingerprint.js';
import { PRIVATE, PROFILES, syncConfig } from '../helpers/sync-workspace.js';

// Workers share a Postgres warehouse: each is a process of its own, so a kill -9 is real.
const streams = {
  profiles: { refresh_after: '7d' },
  companies: {},
  activity: { kinds: ['posts'], max_pages: 2 },
};
const BUDGET = 400;
/** Two accounts, each with a budget of its own below the run's. */
const KEYS = [
  { api_key: 'svc_live_fleet_a', max_credits_per_run: 300 },
  { api_key: 'svc_live_fleet_b', max_credits_per_run: 300, weight: 1 },
];
/** The sandbox's account id of a key (how its ledger names the account). */
const accountOf = (key: string) => `acct_${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;
/** A fleet's config: the seeds and streams of the single sync, called with both keys. */
const fleetConfig = (sandbox: Sandbox, dest: DestinationConfig) => {
  const config = syncConfig({ sandbox, destination: dest, streams, budget: BUDGET });
  return { ...config, api: { base_url: sandbox.url, keys: KEYS } };
};
/** How long to wait for a worker's output at most: generous, as a loaded machine starts processes slowly. */
const PATIENCE = 90_000;
const pg = await postgresAvailable();

const snapshot = async (dest: DestinationConfig) => ({
  profiles: await query(dest, `select url, full_name, headline from "${dest.schema}".profiles order by url`),
  companies: await query(dest, `select url, name from "${dest.schema}".companies order by url`),
  posts: await query(dest, `select record_key from "${dest.schema}".activity_posts order by record_key`),
});

const schemaFor = async (name: string): Promise<DestinationConfig> => {
  const schema = `workers_${name}_${process.pid}`;
  await dropPostgresSchema(schema);
  return { type: 'postgres', url: testPostgresUrl, schema };
};

const worker = (configPath: string, id: string, env: NodeJS.ProcessEnv = {}): RunningCli =>
  spawnCli(['worker', '--config', configPath, '--until-idle', '--id', id, '--lease', '2s', '--shards', '4'], { env });

/** Credits billed per target of an operation, from the sandbox's own ledger. */
const billedTargets = (sandbox: Sandbox, operation: string) =>
  sandbox.ledger.entries.filter((e) => e.operation === operation && e.credits > 0).map((e) => e.target);

describe.runIf(pg)('seedline worker', () => {
  let baseline: Awaited<ReturnType<typeof snapshot>>;
  const cleanup: string[] = [];
  beforeAll(async () => {
    const sandbox = await startSandbox({ rpm: 100_000 });
    try {
      const dest = await schemaFor('single');
      cleanup.push(dest.schema!);
      const dir = await tempWorkspace();
      const configPath = await writeConfig(dir, syncConfig({ sandbox, destination: dest, streams, budget: BUDGET }));
      // The single-sync reference runs in-process; the workers under test are processes.
      const single = await runCliInProcess(['sync', '--config', configPath]);
      expect(single.code, single.stderr).not.toBe(1);
      baseline = await snapshot(dest);
    } finally {
      await sandbox.close();
    }
  });
  afterAll(async () => {
    for (const schema of cleanup) await dropPostgresSchema(schema);
  });

  it('given two keys and three workers, one killed with kill -9 after its first submission and a fourth started later, when they run until idle, then the tables equal a single sync, nothing is billed twice and each key keeps to its budget', async () => {
    const sandbox = await startSandbox({ rpm: 100_000, concurrentBatchJobs: 2 });
    try {
      const dest = await schemaFor('fleet');
      cleanup.push(dest.schema!);
      const dir = await tempWorkspace();
      const configPath = await writeConfig(dir, fleetConfig(sandbox, dest));
      // It takes the first item (profiles, shard 1) and dies right after that job is submitted.
      const killed = worker(configPath, 'w-killed', { SEEDLINE_TEST_CRASH_AT: 'after-submit' });
      await eventually(async () => /\[profiles\] started: [1-9]/.test(killed.stderr), { every: 100, limit: PATIENCE });
      const others = [worker(configPath, 'w-a'), worker(configPath, 'w-b')];
      expect(await killed.exited, killed.stderr).toBe(null);
      expect(killed.child.signalCode).toBe('SIGKILL');
      // Started after the kill: it joins the open round and may take the dead worker's item over.
      others.push(worker(configPath, 'w-late'));
      for (const w of others) expect(await w.exited, w.stderr).toBe(0);

      expect(await snapshot(dest)).toEqual(baseline);
      const enriched = billedTargets(sandbox, 'profiles.enrich');
      expect(enriched.length).toBe(new Set(enriched).size);
      expect(enriched.length).toBe(PROFILES.length + PRIVATE.length);
      expect(sandbox.rateLimitedAnswers).toBe(0);
      const billed = sandbox.ledger.entries.reduce((n, e) => n + e.credits, 0);
      expect(billed).toBeLessThanOrEqual(BUDGET);
      // status shows each key's books: what it spent (billed or at risk) covers what its account was billed.
      const status = await runCliInProcess(['status', '--config', configPath, '--json']);
      const books = (JSON.parse(status.stdout) as { keys: { key: string; spent: number; limit: number }[] }).keys;
      for (const key of KEYS) {
        const spent = sandbox.ledger.entries.filter((e) => e.account === accountOf(key.api_key));
        const credits = spent.reduce((n, e) => n + e.credits, 0);
        expect(spent.length, `${key.api_key} did some of the work`).toBeGreaterThan(0);
        expect(credits).toBeLessThanOrEqual(key.max_credits_per_run);
        const book = books.find((b) => b.key === keyFingerprint(key.api_key));
        expect(book?.limit).toBe(key.max_credits_per_run);
        expect(book?.spent).toBeGreaterThanOrEqual(credits);
      }
      // And so does the report.
      const page = join(dir, 'report.html');
      expect((await runCliInProcess(['report', '--config', configPath, '--out', page])).code).toBe(0);
      const html = await readFile(page, 'utf8');
      expect(html).toContain('Credits per key');
      for (const key of KEYS) expect(html).toContain(keyFingerprint(key.api_key));

      const items = await query(
        dest,
        `select status, count(*)::int as n from "${dest.schema}"._seedline_fleet_work group by status order by status`,
      );
      expect(items).toEqual([{ status: 'done', n: expect.any(Number) }]);
      // The killed worker's item went to another worker once its lease ran out.
      const takenOver = await query(
        dest,
        `select item, worker_id, attempts from "${dest.schema}"._seedline_fleet_work where attempts > 1`,
      );
      expect(takenOver).toEqual([
        { item: 'profiles#1/4', worker_id: expect.not.stringMatching(/killed/), attempts: 2 },
      ]);
      const interrupted = await query(
        dest,
        `select count(*)::int as n from "${dest.schema}"._seedline_runs where status = 'interrupted'`,
      );
      expect(interrupted).toEqual([{ n: 1 }]);
      console.log(
        `[workers] 2 keys, 3 workers (one killed by kill -9 after its first submission) and 1 started later: ` +
          `${sandbox.ledger.entries.length} billed entries, ${billed} credits ` +
          `(${KEYS.map((k) => `${keyFingerprint(k.api_key)} ${sandbox.ledger.entries.filter((e) => e.account === accountOf(k.api_key)).reduce((n, e) => n + e.credits, 0)}`).join(', ')}), ` +
          `${enriched.length} profiles enriched, 0 twice; ${sandbox.rateLimitedAnswers} 429s; items ${JSON.stringify(items)}, taken over: ${takenOver.map((t) => t.item).join(', ')}`,
      );
      const rounds = await query(dest, `select finished_at, spent from "${dest.schema}"._seedline_fleet_rounds`);
      expect(rounds).toHaveLength(1);
      expect(rounds[0]?.finished_at).not.toBeNull();
      expect(Number(rounds[0]?.spent)).toBeGreaterThanOrEqual(billed);
    } finally {
      await sandbox.close();
    }
  });

  it('given a DuckDB destination, when a worker starts, then it is refused with what to do instead', async () => {
    const sandbox = await startSandbox({ rpm: 100_000 });
    try {
      const dir = await tempWorkspace();
      const configPath = await writeConfig(
        dir,
        syncConfig({ sandbox, destination: { type: 'duckdb', path: `${dir}/w.duckdb` }, streams }),
      );
      const refused = await runCli(['worker', '--config', configPath, '--until-idle']);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/Postgres warehouse; a DuckDB file takes one writer at a time/);
      expect(sandbox.ledger.entries).toHaveLength(0);
    } finally {
      await sandbox.close();
    }
  });
});

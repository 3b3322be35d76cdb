import { afterAll, describe, expect, it } from 'vitest';
import { keyFingerprint } from '../../src/util/key-fingerprint.js';
import type { DestinationConfig } from '../../src/destinations/destination.js';
import { startSandbox } from '../../src/sandbox/index.js';
import { runCli, spawnCli, tempWorkspace, writeConfig } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { queryDestination as query } from '../helpers/destinations.js';
import { dropPostgresSchema, postgresAvailable, testPostgresUrl } from '../helpers/postgres.js';
import { eventually } from '../helpers/sandbox.js';
import { syncConfig } from '../helpers/sync-workspace.js';

// A worker is a process of its own: its /metrics is scraped over loopback and SIGTERM is real.
const streams = { profiles: { refresh_after: '7d' }, companies: {} };
const KEY = 'svc_live_e2e_metrics';
/** How long to wait for a worker's output at most: generous, as a loaded machine starts processes slowly. */
const PATIENCE = 90_000;
const pg = await postgresAvailable();

/** The value of one sample of the exposition text (`name{labels} value`), undefined when absent. */
const sample = (text: string, name: string, labels: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
};

/** `seedline status --json` of the config: its workers, with their state. */
const statusWorkers = async (configPath: string) => {
  const status = await runCliInProcess(['status', '--config', configPath, '--json']);
  expect(status.code, status.stderr).toBe(0);
  return (JSON.parse(status.stdout) as { workers?: Record<string, unknown>[] }).workers;
};

describe.runIf(pg)('seedline worker --metrics', () => {
  const schema = `worker_metrics_${process.pid}`;
  afterAll(() => dropPostgresSchema(schema));

  it('given a worker with --metrics, when its round is done, then /metrics bills what the sandbox ledger billed its key, status lists it running, and after SIGTERM stopped', async () => {
    const sandbox = await startSandbox({ rpm: 100_000 });
    try {
      await dropPostgresSchema(schema);
      const dest: DestinationConfig = { type: 'postgres', url: testPostgresUrl, schema };
      const dir = await tempWorkspace();
      const configPath = await writeConfig(
        dir,
        syncConfig({ sandbox, destination: dest, streams, budget: 400, key: KEY }),
      );
      const worker = spawnCli(['worker', '--config', configPath, '--id', 'w-metrics', '--metrics', '127.0.0.1:0'], {});
      const url = await eventually(async () => /^metrics: (http:\/\/\S+)$/m.exec(worker.stdout)?.[1], {
        every: 100,
        limit: PATIENCE,
      });
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);

      const key = `key="${keyFingerprint(KEY)}"`;
      const billedByLedger = () => sandbox.ledger.entries.reduce((n, e) => n + e.credits, 0);
      // The round is done once every item is; its last run is counted once the worker is told it ended.
      const text = await eventually(
        async () => {
          const items = await query(
            dest,
            `select count(*)::int as n, count(*) filter (where status = 'done')::int as done from "${schema}"._seedline_fleet_work`,
          ).catch(() => []);
          if (!items[0] || items[0].n === 0 || items[0].n !== items[0].done) return undefined;
          const scraped = await (await fetch(url)).text();
          return sample(scraped, 'seedline_credits_billed_total', key) === billedByLedger() ? scraped : undefined;
        },
        { every: 200, limit: PATIENCE },
      );
      expect(billedByLedger()).toBeGreaterThan(0);
      expect(sample(text, 'seedline_rate_limited_total', key)).toBe(0);
      expect(sample(text, 'seedline_requests_total', key)).toBeGreaterThan(0);
      expect(sample(text, 'seedline_runs_total', 'status="succeeded"')).toBeGreaterThan(0);
      const due = await query(
        dest,
        `select count(*)::int as n from "${schema}"._seedline_seeds where stream = 'profiles' and status in ('pending', 'failed')`,
      );
      expect(sample(text, 'seedline_seeds_due', 'stream="profiles"')).toBe(due[0]?.n);
      expect(sample(text, 'seedline_freshness_lag_seconds', 'stream="profiles"')).toBeGreaterThanOrEqual(0);
      expect(text).toMatch(/^seedline_items_done_total \d+$/m);
      expect(text).toMatch(/^seedline_worker_leases 0$/m);
      expect(text).toMatch(/^process_cpu_user_seconds_total /m);
      expect(text).not.toContain(KEY);

      expect(await statusWorkers(configPath)).toEqual([
        expect.objectContaining({ worker: 'w-metrics', key: keyFingerprint(KEY), leases: 0, state: 'running' }),
      ]);

      worker.child.kill('SIGTERM');
      expect(await worker.exited, worker.stderr).toBe(0);
      expect(await statusWorkers(configPath)).toEqual([
        expect.objectContaining({ worker: 'w-metrics', pid: worker.child.pid, state: 'stopped' }),
      ]);
    } finally {
      await sandbox.close();
    }
  });

  it('given a warehouse no worker ever used, when status runs, then it shows no workers and creates no fleet table', async () => {
    const sandbox = await startSandbox({ rpm: 100_000 });
    try {
      const plain = `${schema}_plain`;
      await dropPostgresSchema(plain);
      const dest: DestinationConfig = { type: 'postgres', url: testPostgresUrl, schema: plain };
      const dir = await tempWorkspace();
      const configPath = await writeConfig(dir, syncConfig({ sandbox, destination: dest, streams }));
      const status = await runCli(['status', '--config', configPath]);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).not.toMatch(/Workers/);
      expect(await statusWorkers(configPath)).toBeUndefined();
      const tables = await query(
        dest,
        `select count(*)::int as n from information_schema.tables where table_schema = '${plain}' and table_name in ('_seedline_workers', '_seedline_fleet_work', '_seedline_fleet_rounds')`,
      );
      expect(tables).toEqual([{ n: 0 }]);
      await dropPostgresSchema(plain);
    } finally {
      await sandbox.close();
    }
  });
});

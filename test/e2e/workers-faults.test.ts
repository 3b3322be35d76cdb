import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { DestinationConfig } from '../../src/destinations/destination.js';
import { startSandbox } from '../../src/sandbox/index.js';
import { spawnCli, tempWorkspace, writeConfig, type RunningCli } from '../helpers/cli.js';
import { queryDestination as query } from '../helpers/destinations.js';
import { dropPostgresSchema, postgresAvailable, testPostgresUrl } from '../helpers/postgres.js';
import { eventually } from '../helpers/sandbox.js';
import { PRIVATE, PROFILES, syncConfig } from '../helpers/sync-workspace.js';

// What a fleet does when a part of it fails: a key refused mid-run, a worker that stops answering.
const pg = await postgresAvailable();
const PATIENCE = 90_000;
const streams = { profiles: { refresh_after: '7d' }, companies: {} };
const accountOf = (key: string) => `acct_${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;

const schemaFor = async (name: string): Promise<DestinationConfig> => {
  const schema = `workers_${name}_${process.pid}`;
  await dropPostgresSchema(schema);
  return { type: 'postgres', url: testPostgresUrl, schema };
};

const worker = (configPath: string, id: string, lease = '2s'): RunningCli =>
  spawnCli(['worker', '--config', configPath, '--until-idle', '--id', id, '--lease', lease, '--shards', '4']);

describe.runIf(pg)('a fleet when a part of it fails', () => {
  const cleanup: string[] = [];
  afterAll(async () => {
    for (const schema of cleanup) await dropPostgresSchema(schema);
  });

  it('given two keys, when the service refuses one mid-run, then the other goes on, the refused key takes no more items, and nothing is billed twice', async () => {
    const sandbox = await startSandbox({ rpm: 100_000 });
    try {
      const dest = await schemaFor('refused');
      cleanup.push(dest.schema!);
      const keys = ['svc_live_refused_a', 'svc_live_refused_b'];
      const dir = await tempWorkspace();
      const config = syncConfig({ sandbox, destination: dest, streams, batch: { chunk_size: 2 } });
      const configPath = await writeConfig(dir, {
        ...config,
        api: { base_url: sandbox.url, keys: keys.map((api_key) => ({ api_key })) },
      });
      const workers = [worker(configPath, 'w-1'), worker(configPath, 'w-2')];
      // Refused once it has been billed for something: mid-run, with jobs of its own behind it.
      await eventually(async () => sandbox.ledger.entries.some((e) => e.account === accountOf(keys[1]!)), {
        every: 20,
        limit: PATIENCE,
      });
      sandbox.revokeKey(keys[1]!);
      for (const w of workers) expect(await w.exited, w.stderr).toBe(0);

      const refused = await query(
        dest,
        `select key_id, refusal from "${dest.schema}"._seedline_fleet_keys where refusal is not null`,
      );
      expect(refused).toEqual([{ key_id: expect.stringMatching(/^key_/), refusal: expect.stringMatching(/401/) }]);
      const billed = sandbox.ledger.entries.filter((e) => e.operation === 'profiles.enrich' && e.credits > 0);
      expect(billed.length).toBe(new Set(billed.map((e) => e.target)).size);
      expect(billed.some((e) => e.account === accountOf(keys[0]!))).toBe(true);
      // Every seed is loaded, or waits in a job of the refused key (paid for: asked again with that key only).
      const loaded = await query(
        dest,
        `select count(*)::int as n from "${dest.schema}"._seedline_seeds where stream = 'profiles' and status in ('fetched', 'failed')`,
      );
      const waiting = await query(
        dest,
        `select coalesce(sum(item_count), 0)::int as n from "${dest.schema}"._seedline_batches
          where stream = 'profiles' and status in ('intent', 'submitted') and key_id is not null`,
      );
      expect(Number(loaded[0]?.n) + Number(waiting[0]?.n)).toBe(PROFILES.length + PRIVATE.length);
    } finally {
      await sandbox.close();
    }
  });

  it('given a worker paused past its lease, when another takes its item over and it resumes, then it stops that item and the tables hold each seed once, billed once', async () => {
    const sandbox = await startSandbox({ rpm: 100_000 });
    try {
      const dest = await schemaFor('paused');
      cleanup.push(dest.schema!);
      const dir = await tempWorkspace();
      const configPath = await writeConfig(dir, syncConfig({ sandbox, destination: dest, streams }));
      const paused = worker(configPath, 'w-paused');
      await eventually(async () => /\[profiles\] started: [1-9]/.test(paused.stderr), { every: 50, limit: PATIENCE });
      paused.child.kill('SIGSTOP');
      const taker = worker(configPath, 'w-taker');
      try {
        await eventually(
          async () =>
            (
              await query(
                dest,
                `select 1 from "${dest.schema}"._seedline_fleet_work where worker_id = 'w-taker' and attempts > 1`,
              ).catch(() => [])
            ).length > 0,
          { every: 200, limit: PATIENCE },
        );
      } finally {
        paused.child.kill('SIGCONT');
      }
      expect(await taker.exited, taker.stderr).toBe(0);
      expect(await paused.exited, paused.stderr).toBe(0);
      expect(paused.stderr).toMatch(/another worker took this item over/);

      const billed = sandbox.ledger.entries.filter((e) => e.operation === 'profiles.enrich' && e.credits > 0);
      expect(billed.length).toBe(new Set(billed.map((e) => e.target)).size);
      const rows = await query(
        dest,
        `select count(*)::int as n, count(distinct url)::int as urls from "${dest.schema}".profiles`,
      );
      expect(rows[0]?.n).toBe(rows[0]?.urls);
      expect(rows[0]?.n).toBe(PROFILES.length);
    } finally {
      await sandbox.close();
    }
  });
});

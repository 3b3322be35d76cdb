import { describe, expect, it } from 'vitest';
import type { DestinationConfig } from '../../src/destinations/destination.js';
import { startSandbox } from '../../src/sandbox/index.js';
import { runCli, tempWorkspace, writeConfig } from '../helpers/cli.js';
import { e2eBackends, queryDestination as query } from '../helpers/destinations.js';

const KEY = 'svc_live_shaping_workers_crash';
/** Three jobs of 500, read one after the other: the first page makes the table, the later ones are shaped in the worker thread. */
const SEEDS = Array.from({ length: 1_500 }, (_, i) => `https://www.network.example/in/shaping-crash-${i}`);

// Issue 20: a sync killed (kill -9) right after a page shaped in a worker thread committed loses nothing and pays nothing twice.
describe.each(e2eBackends)('a sync with a shaping worker killed mid-results, into $name', ({ name, make }) => {
  it('given the second job committed from the worker, when the process is killed there and the sync runs again, then every seed is loaded once and billed once', async (ctx) => {
    const sandbox = await startSandbox({
      rpm: 100_000,
      latencyMs: [0, 0],
      batchItemConcurrency: 500,
      concurrentBatchJobs: 1,
    });
    try {
      const dir = await tempWorkspace();
      const dest: DestinationConfig | undefined = await make(dir, 'shaping_crash');
      if (!dest) return ctx.skip();
      const schema = dest.schema ?? 'seedline';
      const configPath = await writeConfig(dir, {
        api: { base_url: sandbox.url, api_key: KEY },
        destination: dest,
        seeds: { profiles: SEEDS },
        streams: { profiles: {} },
        batch: { chunk_size: 500, poll_interval_ms: 10, shaping_workers: 1 },
      });

      const killed = await runCli(['sync', '--config', configPath], {
        env: { SEEDLINE_TEST_CRASH_AT: 'mid-results:2' },
      });
      expect(killed.code).not.toBe(0);
      // Killed after its second results page committed: the first made the table, the second came from the worker.
      const [loaded] = await query(dest, `select count(*) as n from ${schema}.profiles`);
      expect(Number(loaded!.n)).toBeGreaterThan(0);
      expect(Number(loaded!.n)).toBeLessThan(SEEDS.length);

      const rerun = await runCli(['sync', '--config', configPath]);
      expect(rerun.code, rerun.stderr).toBe(0);
      expect(sandbox.ledger.totalBilled()).toBe(SEEDS.length);
      const [profiles] = await query(dest, `select count(*) as n, count(distinct url) as urls from ${schema}.profiles`);
      expect([Number(profiles!.n), Number(profiles!.urls)]).toEqual([SEEDS.length, SEEDS.length]);
      const repeated = await query(
        dest,
        `select _parent_url, _index from ${schema}.profiles__positions group by 1, 2 having count(*) > 1`,
      );
      expect(repeated).toEqual([]);
      const ledger = await query(
        dest,
        `select status, count(*) as n, sum(credits) as credits from ${schema}._seedline_seeds group by status`,
      );
      expect(ledger.map((r) => [r.status, Number(r.n), Number(r.credits)])).toEqual([
        ['fetched', SEEDS.length, SEEDS.length],
      ]);
      const [rejected] = await query(dest, `select count(*) as n from ${schema}._seedline_rejected`);
      expect(Number(rejected!.n)).toBe(0);
    } finally {
      await sandbox.close();
    }
  });
});

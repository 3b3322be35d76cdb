import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { parseMetricsAddress } from '../../src/cli/listen-options.js';
import { countedRun, SeedlineMetrics } from '../../src/cli/seedline-metrics.js';
import type { RunResult } from '../../src/engine/pipeline.js';

const KEY = 'key_0123456789ab';
/** A limiter's counters, as `RateLimiter.stats` gives them. */
const limiter = (requests: number, rateLimited: number) => ({
  stats: { requests, rateLimited, pauses: 0, batchSubmissions: 0 },
});
const run = (status: RunResult['status'], billed: number, earlierBilled = 0, atRisk = 0) =>
  ({ status, books: { billed, earlierBilled, atRisk, settledForEarlier: 0 } }) as RunResult;
const sample = (text: string, line: string) =>
  Number(
    text
      .split('\n')
      .find((l) => l.startsWith(`${line} `))
      ?.split(' ')
      .at(-1),
  );

describe('parseMetricsAddress', () => {
  it.each([
    ['9464', { host: '127.0.0.1', port: 9464 }],
    ['0', { host: '127.0.0.1', port: 0 }],
    ['0.0.0.0:9464', { host: '0.0.0.0', port: 9464 }],
    ['localhost:1', { host: 'localhost', port: 1 }],
    ['[::1]:9464', { host: '::1', port: 9464 }],
  ])('given %j, when parsed, then it is %j', (text, address) => {
    expect(parseMetricsAddress(text)).toEqual(address);
  });

  it.each(['', 'host:', '70000', 'host:65536', ':9464', 'a:b:9464', '94.64'])(
    'given %j, when parsed, then commander is told the form',
    (text) => {
      expect(() => parseMetricsAddress(text)).toThrow(InvalidArgumentError);
      expect(() => parseMetricsAddress(text)).toThrow(/expected \[host:\]port/);
    },
  );
});

describe('SeedlineMetrics', () => {
  it('given clients tracked and released, when scraped twice, then calls and 429s add up per key and never go back', async () => {
    const metrics = new SeedlineMetrics();
    const first = limiter(5, 1);
    const release = metrics.track(KEY, first);
    expect(sample(await metrics.text(), `seedline_requests_total{key="${KEY}"}`)).toBe(5);
    first.stats = { ...first.stats, requests: 8, rateLimited: 2 };
    release();
    metrics.track(KEY, limiter(3, 0));
    const text = await metrics.text();
    expect(sample(text, `seedline_requests_total{key="${KEY}"}`)).toBe(11);
    expect(sample(text, `seedline_rate_limited_total{key="${KEY}"}`)).toBe(2);
  });

  it('given worker runs that ended, when scraped, then runs count by status, billed leaves out earlier runs’ jobs, and only done items count', async () => {
    const metrics = new SeedlineMetrics({ leases: async () => 2 });
    const item = {} as Parameters<SeedlineMetrics['workerRunEnded']>[1];
    metrics.workerRunEnded(run('succeeded', 10, 3, 2), item, KEY);
    metrics.workerRunEnded(run('stopped', 4), item, KEY);
    const text = await metrics.text();
    expect(sample(text, `seedline_credits_billed_total{key="${KEY}"}`)).toBe(11);
    expect(sample(text, `seedline_credits_at_risk_total{key="${KEY}"}`)).toBe(2);
    expect(sample(text, 'seedline_runs_total{status="succeeded"}')).toBe(1);
    expect(sample(text, 'seedline_runs_total{status="stopped"}')).toBe(1);
    expect(sample(text, 'seedline_items_done_total')).toBe(1);
    expect(sample(text, 'seedline_worker_leases')).toBe(2);
  });

  it('given a warehouse read that fails after one that worked, when scraped, then the gauges keep their values and the failure is counted', async () => {
    let fail = false;
    const metrics = new SeedlineMetrics({
      readWarehouse: async () => {
        if (fail) throw new Error('locked');
        return [{ stream: 'profiles', due: 3, oldest: new Date(Date.now() - 60_000) }];
      },
    });
    expect(sample(await metrics.text(), 'seedline_seeds_due{stream="profiles"}')).toBe(3);
    fail = true;
    const text = await metrics.text();
    expect(sample(text, 'seedline_seeds_due{stream="profiles"}')).toBe(3);
    expect(sample(text, 'seedline_freshness_lag_seconds{stream="profiles"}')).toBeGreaterThanOrEqual(60);
    expect(sample(text, 'seedline_metrics_read_errors_total')).toBe(1);
  });

  it('given countedRun with metrics, when the run ends, then its limiter’s calls and its credits are counted', async () => {
    const metrics = new SeedlineMetrics();
    await countedRun(metrics, KEY, async (given) => {
      expect(given).toBeDefined();
      return run('partial', 7);
    });
    const text = await metrics.text();
    expect(sample(text, `seedline_credits_billed_total{key="${KEY}"}`)).toBe(7);
    expect(sample(text, `seedline_requests_total{key="${KEY}"}`)).toBe(0);
    expect(sample(text, 'seedline_runs_total{status="partial"}')).toBe(1);
    // Not a worker: its metrics would only read 0.
    expect(text).not.toMatch(/seedline_worker_leases|seedline_items_done_total/);
  });

  it('given countedRun without metrics, when run, then no limiter is made (the client makes its own)', async () => {
    await countedRun(undefined, KEY, async (given) => {
      expect(given).toBeUndefined();
      return run('succeeded', 1);
    });
  });
});

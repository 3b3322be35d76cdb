import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import pg from 'pg';
import { createDestination } from '../../src/destinations/create-destination.js';
import { postgresConnection } from '../../src/destinations/postgres/postgres-connection.js';
import type { DestinationConfig } from '../../src/destinations/destination.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { runCli, type RunningCli, spawnCli, tempWorkspace, writeConfig } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { dropPostgresSchema, postgresAvailable, testPostgresUrl } from '../helpers/postgres.js';
import { eventually } from '../helpers/sandbox.js';

const PROFILES = Array.from({ length: 6 }, (_, i) => `https://www.network.example/in/sched-person-${i}`);
const SLOW_PROFILES = Array.from({ length: 40 }, (_, i) => `https://www.network.example/in/slow-person-${i}`);
/** Generous bound for what a loaded 2-core machine may take; never a timing assertion. */
const PATIENCE = 90_000;

interface RunRow {
  run_id: string;
  status: string;
  schedule_group: string | null;
  finished_at: unknown;
  error: string | null;
}

/** One connection for every probe of the file: polling must not open a pool per look. */
let probe: pg.Client | undefined;
async function query<T>(_dest: DestinationConfig, sql: string): Promise<T[]> {
  if (!probe) {
    probe = new pg.Client(postgresConnection(testPostgresUrl));
    await probe.connect();
  }
  return (await probe.query(sql)).rows as T[];
}

/** Polls `check` a few times a second until it holds (no timing assertion: the bound is generous). */
const until = (check: () => Promise<boolean>) => eventually(check, { every: 250, limit: PATIENCE });

const runsOf = (dest: DestinationConfig, group: string) =>
  query<RunRow>(
    dest,
    `select run_id, status, schedule_group, finished_at, error from "${dest.schema}"._seedline_runs where schedule_group = '${group}' order by started_at`,
  );

/** The ticks the two schedulers synced (each once, if all is well) and how many they skipped. */
function ticksOf(group: string, ...clis: RunningCli[]) {
  const stderr = clis.map((c) => c.stderr).join('');
  return {
    synced: [...stderr.matchAll(new RegExp(`\\[${group}\\] tick (\\S+): sync of`, 'g'))].map((m) => m[1]),
    finished: [...stderr.matchAll(new RegExp(`\\[${group}\\] run \\S+: `, 'g'))].length,
    skipped: [...stderr.matchAll(new RegExp(`\\[${group}\\] (tick \\S+ already run|skipped a tick)`, 'g'))].length,
  };
}

/** Stops a scheduler the way a service manager does and waits for it to exit. */
async function terminate(cli: RunningCli): Promise<number | null> {
  cli.child.kill('SIGTERM');
  return cli.exited;
}

describe.runIf(await postgresAvailable())('seedline schedule (Postgres destination, sandbox over HTTP)', () => {
  let sandbox: Sandbox;
  let dir: string;
  const schemas: string[] = [];
  const started: RunningCli[] = [];

  beforeAll(async () => {
    sandbox = await startSandbox({ rpm: 100_000 });
    dir = await tempWorkspace();
  });
  afterAll(async () => {
    for (const cli of started) if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    await sandbox?.close();
    await probe?.end();
    for (const schema of schemas) await dropPostgresSchema(schema);
  });

  const configFor = (service: Sandbox, schema: string, seeds: readonly string[], batch: Record<string, unknown>) => ({
    api: { base_url: service.url, api_key: 'svc_live_schedule' },
    destination: { type: 'postgres', url: testPostgresUrl, schema },
    seeds: { profiles: seeds },
    streams: { profiles: { refresh_after: '7d' } },
    batch: { chunk_size: 5, poll_interval_ms: 20, ...batch },
  });

  async function workspace(
    name: string,
    schedule: Record<string, unknown>,
    seeds = PROFILES,
    batch: Record<string, unknown> = {},
    service = sandbox,
  ) {
    const schema = `e2e_sched_${name}_${process.pid}`;
    await dropPostgresSchema(schema);
    schemas.push(schema);
    const dest: DestinationConfig = { type: 'postgres', url: testPostgresUrl, schema };
    const config = await writeConfig(dir, { ...configFor(service, schema, seeds, batch), schedule }, `${name}.yaml`);
    return { dest, config };
  }

  const schedule = (config: string, extra: string[] = []) => {
    const cli = spawnCli(['schedule', '--config', config, ...extra]);
    started.push(cli);
    return cli;
  };

  it('given two schedulers on one destination and a tick every two seconds, when they run, then each tick is synced by exactly one of them', async () => {
    const { dest, config } = await workspace('pair', { often: { cron: '*/2 * * * * *', streams: ['profiles'] } });
    const first = schedule(config);
    const second = schedule(config);
    // Also until one of them skipped a tick the other had: under load one may start seconds after the other.
    await until(
      async () =>
        (await runsOf(dest, 'often').catch(() => [])).filter((r) => r.finished_at !== null).length >= 4 &&
        ticksOf('often', first, second).skipped >= 1,
    );
    expect(await terminate(first)).toBe(0);
    expect(await terminate(second)).toBe(0);

    const { synced, skipped } = ticksOf('often', first, second);
    expect(synced.length).toBeGreaterThanOrEqual(4);
    expect(new Set(synced).size).toBe(synced.length);
    expect(skipped).toBeGreaterThanOrEqual(1);
    const runs = await runsOf(dest, 'often');
    expect(runs).toHaveLength(synced.length);
    expect(runs.every((r) => r.schedule_group === 'often' && ['succeeded', 'stopped'].includes(r.status))).toBe(true);
    const billed = sandbox.ledger.entries.filter(
      (e) => e.operation === 'profiles.enrich' && e.credits > 0 && String(e.target).includes('sched-person'),
    );
    expect(billed).toHaveLength(PROFILES.length);
  });

  it('given a catch_up group whose last tick passed while no scheduler ran, when started twice, then the missed tick runs once, at the first start', async () => {
    const { dest, config } = await workspace('catchup', {
      nightly: { cron: '0 0 * * *', streams: ['profiles'], catch_up: true },
    });
    const first = schedule(config);
    await until(async () => /\[nightly\] run \S+: succeeded/.test(first.stderr));
    expect(first.stderr).toMatch(
      /\[nightly\] catching up the tick of \S+T00:00:00\.000Z \(last completed run: never\)/,
    );
    expect(await terminate(first)).toBe(0);
    expect(await runsOf(dest, 'nightly')).toHaveLength(1);

    const second = schedule(config);
    await until(async () => /\[nightly\] no tick missed/.test(second.stderr));
    expect(await terminate(second)).toBe(0);
    expect(second.stderr).not.toMatch(/catching up/);
    const runs = await runsOf(dest, 'nightly');
    expect(runs.map((r) => r.status)).toEqual(['succeeded']);
    const status = await runCliInProcess(['status', '--config', config]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/succeeded\s+nightly/);
  });

  it('given a catch_up group whose only run after the last tick was stopped, when started, then it still catches the tick up', async () => {
    const { dest, config } = await workspace('stopped', {
      nightly: { cron: '0 0 * * *', streams: ['profiles'], catch_up: true },
    });
    const destination = await createDestination(dest);
    try {
      await destination.ensureSystemTables();
      await destination.saveRun({
        runId: 'run_stopped_early',
        startedAt: new Date(),
        finishedAt: new Date(),
        status: 'stopped',
        scheduleGroup: 'nightly',
      });
    } finally {
      await destination.close();
    }
    const cli = schedule(config);
    await until(async () => /\[nightly\] run \S+: succeeded/.test(cli.stderr));
    expect(await terminate(cli)).toBe(0);
    expect(cli.stderr).toMatch(/\[nightly\] catching up the tick of \S+T00:00:00\.000Z \(last completed run: never\)/);
    expect((await runsOf(dest, 'nightly')).map((r) => r.status)).toEqual(['stopped', 'succeeded']);
  });

  it('given another writer holding the destination lock, when a scheduler waiting for it gets SIGTERM, then it exits without running', async () => {
    const { dest, config } = await workspace('lockwait', { yearly: { cron: '0 0 1 1 *', streams: ['profiles'] } });
    const holder = await createDestination(dest);
    try {
      await holder.lock({ holder: 'e2e long sync' });
      await holder.ensureSystemTables();
      const cli = schedule(config, ['--run-now']);
      await until(async () => /\[yearly\] scheduled/.test(cli.stderr));
      expect(await terminate(cli)).toBe(0);
      expect(cli.stderr).toMatch(/\[yearly\] tick \S+: stopped while waiting for the destination lock; nothing ran/);
    } finally {
      await holder.close();
    }
    expect(await runsOf(dest, 'yearly')).toEqual([]);
  });

  it('given a tick that fails before its sync starts (a seed file gone), when it runs, then the tick is recorded failed', async () => {
    const schema = `e2e_sched_early_${process.pid}`;
    await dropPostgresSchema(schema);
    schemas.push(schema);
    const dest: DestinationConfig = { type: 'postgres', url: testPostgresUrl, schema };
    const config = await writeConfig(
      dir,
      {
        ...configFor(sandbox, schema, [], {}),
        seeds: { profiles: { file: 'gone.csv', column: 'url' } },
        schedule: { yearly: { cron: '0 0 1 1 *', streams: ['profiles'] } },
      },
      'early.yaml',
    );
    const cli = schedule(config, ['--run-now']);
    await until(async () => /\[yearly\] run failed/.test(cli.stderr));
    expect(await terminate(cli)).toBe(0);
    const runs = await runsOf(dest, 'yearly');
    expect(runs.map((r) => r.status)).toEqual(['failed']);
    expect(runs[0]!.error).toMatch(/gone\.csv/);
  });

  it('given a slow run under way, when the scheduler gets SIGTERM, then committed pages stay, the run is recorded stopped, and the next sync completes the rest', async () => {
    // Only the first submitted job's items resolve until the scheduler is stopped: the run is under way, one
    // chunk committed and the rest unread, whenever the SIGTERM lands (a latency left that to timing).
    let firstJob: string | undefined;
    let released = false;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = () => ((released = true), resolve())));
    const slow: Sandbox = await startSandbox({
      rpm: 100_000,
      latencyMs: [40, 60],
      beforeBatchItem: async ({ ref }) => {
        if (released) return;
        const jobId = slow.ledger.entries.find((e) => e.ref === ref && e.jobId !== undefined)?.jobId;
        firstJob ??= jobId;
        if (jobId !== firstJob) await gate;
      },
    });
    try {
      const { dest, config } = await workspace(
        'term',
        { yearly: { cron: '0 0 1 1 *', streams: ['profiles'] } },
        SLOW_PROFILES,
        { chunk_size: 2 },
        slow,
      );
      const cli = schedule(config, ['--run-now']);
      const loaded = () =>
        query<{ n: unknown }>(dest, `select count(*) as n from "${dest.schema}".profiles`).then(
          (rows) => Number(rows[0]?.n),
          () => 0,
        );
      await until(async () => (await loaded()) > 0);
      expect(await terminate(cli)).toBe(0);

      const [run] = await runsOf(dest, 'yearly');
      expect(run?.status).toBe('stopped');
      expect(run?.finished_at).not.toBeNull();
      expect(run?.error).toMatch(/stopped on request/);
      const kept = await loaded();
      expect(kept).toBeGreaterThan(0);
      expect(kept).toBeLessThan(SLOW_PROFILES.length);
      expect(cli.stderr).toMatch(/SIGTERM: stopping/);
      // The run that ended on the stop announces no next run.
      expect(cli.stderr.slice(cli.stderr.indexOf('SIGTERM: stopping'))).not.toMatch(/next run/);

      release();
      const rest = await runCli(['sync', '--config', config]);
      expect(rest.code, rest.stderr).toBe(0);
      expect(await loaded()).toBe(SLOW_PROFILES.length);
      const billed = slow.ledger.entries
        .filter((e) => e.operation === 'profiles.enrich' && e.credits > 0)
        .map((e) => String(e.target));
      expect(new Set(billed).size).toBe(billed.length);
    } finally {
      release();
      await slow.close();
    }
  });
});

describe('seedline schedule (DuckDB destination, one writing process per file)', () => {
  it('given two schedulers on one DuckDB file and a tick every two seconds, when they run, then each tick is synced by exactly one of them', async () => {
    const sandbox = await startSandbox({ rpm: 100_000 });
    const dir = await tempWorkspace();
    const dest: DestinationConfig = { type: 'duckdb', path: join(dir, 'w.duckdb'), schema: 'seedline' };
    const clis: RunningCli[] = [];
    try {
      const config = await writeConfig(dir, {
        api: { base_url: sandbox.url, api_key: 'svc_live_schedule_duckdb' },
        destination: { type: 'duckdb', path: dest.path },
        seeds: { profiles: PROFILES },
        streams: { profiles: { refresh_after: '7d' } },
        batch: { chunk_size: 5, poll_interval_ms: 20 },
        schedule: { often: { cron: '*/2 * * * * *', streams: ['profiles'] } },
      });
      clis.push(spawnCli(['schedule', '--config', config]), spawnCli(['schedule', '--config', config]));
      // The file is theirs while they run: wait on what they print, read the table after.
      // Also until one of them skipped a tick the other had: under load one may start seconds after the other.
      await until(async () => ticksOf('often', ...clis).finished >= 4 && ticksOf('often', ...clis).skipped >= 1);
      for (const cli of clis) expect(await terminate(cli)).toBe(0);

      const { synced, skipped } = ticksOf('often', ...clis);
      expect(new Set(synced).size).toBe(synced.length);
      expect(skipped).toBeGreaterThanOrEqual(1);
      const destination = await createDestination(dest);
      try {
        const runs = await destination.query(
          `select status from seedline._seedline_runs where schedule_group = 'often'`,
        );
        expect(runs).toHaveLength(synced.length);
      } finally {
        await destination.close();
      }
    } finally {
      for (const cli of clis) if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
      await sandbox.close();
    }
  });
});

describe('seedline schedule: a config it cannot run', () => {
  it('given a group with an unknown stream, an unconfigured one and a bad cron, when started, then each is named and it exits 2 before any call', async () => {
    const dir = await tempWorkspace();
    const config = await writeConfig(dir, {
      api: { base_url: 'http://127.0.0.1:9/', api_key: 'svc_test_x' },
      destination: { type: 'duckdb', path: join(dir, 'w.duckdb') },
      seeds: { profiles: [] },
      streams: { profiles: {} },
      schedule: { hourly: { cron: '0 * * * *', streams: ['profiles', 'nope', 'companies'] } },
    });
    const streams = await runCli(['schedule', '--config', config]);
    expect(streams.code).toBe(2);
    expect(streams.stderr).toMatch(/schedule\.hourly\.streams: unknown stream "nope"/);
    expect(streams.stderr).toMatch(/schedule\.hourly\.streams: stream "companies" is not configured/);

    const cron = await writeConfig(
      dir,
      {
        api: { base_url: 'http://127.0.0.1:9/', api_key: 'svc_test_x' },
        destination: { type: 'duckdb', path: join(dir, 'w.duckdb') },
        seeds: { profiles: [] },
        streams: { profiles: {} },
        schedule: { hourly: { cron: 'every hour', streams: ['profiles'] } },
      },
      'cron.yaml',
    );
    const bad = await runCli(['schedule', '--config', cron]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/schedule\.hourly\.cron: expected a cron expression of five fields/);

    const none = await runCli([
      'schedule',
      '--config',
      await writeConfig(
        dir,
        {
          api: { base_url: 'sandbox', api_key: 'svc_test_x' },
          destination: { type: 'duckdb', path: join(dir, 'w.duckdb') },
          streams: {},
        },
        'none.yaml',
      ),
    ]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/schedule: missing[\s\S]*--cron/);
  });
});

import { spawn } from 'node:child_process';
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { DestinationConfig } from '../../src/destinations/destination.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { type CliResult, runCli, spawnCli, tempWorkspace } from '../helpers/cli.js';
import { queryDestination } from '../helpers/destinations.js';
import { postgresAvailable, runOnPostgres, testPostgresUrl } from '../helpers/postgres.js';
import { timeLimit } from '../helpers/time-limits.js';
import { freePort } from '../helpers/free-port.js';

// Issue 39, item 1: `seedline init` and every folder of examples/ run as written against the sandbox.
const ROOT = resolve(import.meta.dirname, '../..');
const PATIENCE = { timeout: timeLimit(90_000), interval: 200 };

/** A copy of an example folder in a fresh workspace (so runs leave nothing in the repository). */
async function copyOf(example: string): Promise<string> {
  const dir = join(await tempWorkspace(), example);
  await cp(join(ROOT, 'examples', example), dir, { recursive: true });
  return dir;
}

const duckdbAt = (dir: string): DestinationConfig => ({
  type: 'duckdb',
  path: join(dir, 'warehouse.duckdb'),
  schema: 'seedline',
});

async function ok(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const run = await runCli(args, { env });
  expect(run.code, `${args.join(' ')}\n${run.stdout}\n${run.stderr}`).toBe(0);
  return run;
}

/** Credits a `sync --json` billed. */
async function syncCredits(args: string[], env: NodeJS.ProcessEnv = {}): Promise<number> {
  return (JSON.parse((await ok([...args, '--json'], env)).stdout) as { credits: number }).credits;
}

/** A Postgres database of its own, dropped after the file: an example's config is used as written. */
function useFreshDatabase(name: string): { url: () => string } {
  let url = '';
  beforeAll(async () => {
    if (!(await postgresAvailable())) return;
    await runOnPostgres(`drop database if exists ${name} with (force)`);
    await runOnPostgres(`create database ${name}`);
    const parsed = new URL(testPostgresUrl);
    parsed.pathname = `/${name}`;
    url = parsed.href;
  });
  afterAll(async () => {
    if (url) await runOnPostgres(`drop database if exists ${name} with (force)`);
  });
  return { url: () => url };
}

/** Runs a command line as printed, from the repository's root, through a shell. */
function runPrinted(line: string): Promise<{ code: number | null; output: string }> {
  return new Promise((done, fail) => {
    const child = spawn(line, { cwd: ROOT, shell: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', fail);
    child.on('close', (code) => done({ code, output }));
  });
}

describe('seedline init', () => {
  const database = useFreshDatabase(`seedline_init_${process.pid}`);

  it('given no terminal, when init writes a DuckDB project, then the next commands it prints run, and a second init overwrites nothing', async () => {
    const dir = join(await tempWorkspace(), 'starter');
    const init = await ok(['init', dir]);
    const next = init.stdout.split('\n').filter((line) => /^ {2}\S/.test(line));
    expect(next).toEqual([
      expect.stringMatching(/ plan --config \S+$/),
      expect.stringMatching(/ sync --config \S+ --sample-query$/),
    ]);
    for (const line of next) {
      const run = await runPrinted(line.trim());
      expect(run.code, `${line}\n${run.output}`).toBe(0);
    }
    const rows = await queryDestination(duckdbAt(dir), 'select count(*)::int as n from seedline.profiles');
    expect(rows[0]!.n).toBe(3);

    const config = await readFile(join(dir, 'seedline.yaml'), 'utf8');
    const again = await runCli(['init', dir]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(
      /already has seedline\.yaml, seeds\/profiles\.csv, seeds\/companies\.csv, \.env\.example: init never overwrites/,
    );
    expect(await readFile(join(dir, 'seedline.yaml'), 'utf8')).toBe(config);
  });

  it('given --destination postgres and a URL, when the printed sync runs, then the profiles land in that Postgres', async (ctx) => {
    if (!database.url()) return ctx.skip();
    const dir = join(await tempWorkspace(), 'pg-starter');
    const init = await ok(['init', dir, '--destination', 'postgres', '--postgres-url', database.url()]);
    expect(await readFile(join(dir, '.env.example'), 'utf8')).toMatch(/SEEDLINE_PG_URL=/);
    const sync = init.stdout.split('\n').find((line) => / sync --config /.test(line))!;
    const run = await runPrinted(sync.trim());
    expect(run.code, run.output).toBe(0);
    const rows = await queryDestination(
      { type: 'postgres', url: database.url(), schema: 'seedline' },
      'select count(*)::int as n from seedline.companies',
    );
    expect(rows[0]!.n).toBe(2);
  });
});

describe('examples/', () => {
  const database = useFreshDatabase(`seedline_example_${process.pid}`);

  it('given examples/postgres and SEEDLINE_PG_URL in a .env beside it, when synced, then profiles and companies load there', async (ctx) => {
    if (!database.url()) return ctx.skip();
    const dir = await copyOf('postgres');
    await writeFile(join(dir, '.env'), `SEEDLINE_PG_URL=${database.url()}\n`);
    expect(await syncCredits(['sync', '--config', join(dir, 'seedline.yaml')])).toBe(5);
    const rows = await queryDestination(
      { type: 'postgres', url: database.url(), schema: 'seedline' },
      'select (select count(*) from seedline.profiles)::int as profiles, (select count(*) from seedline.companies)::int as companies',
    );
    expect(rows[0]).toEqual({ profiles: 3, companies: 2 });
  });

  it('given examples/custom-stream, when planned and synced twice, then its own table fills and the second sync spends nothing', async () => {
    const dir = await copyOf('custom-stream');
    const config = join(dir, 'seedline.yaml');
    expect((await ok(['plan', '--config', config])).stdout).toMatch(/^topic_posts\s+2\s/m);
    expect(await syncCredits(['sync', '--config', config])).toBeGreaterThan(0);
    const topics = await queryDestination(
      duckdbAt(dir),
      'select topic, count(*)::int as n from seedline.topic_posts group by topic order by topic',
    );
    expect(topics.map((row) => row.topic)).toEqual(['dbt', 'lakehouse']);
    expect(await syncCredits(['sync', '--config', config])).toBe(0);
  });

  it('given examples/seeds-csv-sql, when the profiles load first, then the companies query seeds the companies they work at', async () => {
    const dir = await copyOf('seeds-csv-sql');
    const config = join(dir, 'seedline.yaml');
    await ok(['sync', '--config', config, '--streams', 'profiles']);
    await ok(['sync', '--config', config]);
    const [row] = await queryDestination(
      duckdbAt(dir),
      `select (select count(distinct company_url) from seedline.profiles__positions where ended_at is null)::int as wanted,
              (select count(*) from seedline.companies)::int as loaded`,
    );
    expect(row!.wanted).toBeGreaterThan(0);
    expect(row!.loaded).toBe(row!.wanted);
  });

  it('given examples/schedule, when started with --run-now and stopped, then each group ran once and exited 0', async () => {
    const dir = await copyOf('schedule');
    const cli = spawnCli(['schedule', '--config', join(dir, 'seedline.yaml'), '--run-now']);
    try {
      await vi.waitFor(() => {
        expect(cli.stderr).toMatch(/\[hourly\] run \S+: /);
        expect(cli.stderr).toMatch(/\[nightly\] run \S+: /);
      }, PATIENCE);
    } finally {
      cli.child.kill('SIGTERM');
    }
    expect(await cli.exited).toBe(0);
    const runs = await queryDestination(
      duckdbAt(dir),
      'select schedule_group, status from seedline._seedline_runs order by schedule_group',
    );
    expect(runs).toEqual([
      { schedule_group: 'hourly', status: 'succeeded' },
      { schedule_group: 'nightly', status: 'succeeded' },
    ]);
  });

  describe('examples/signals-serve against the sandbox run as a server', () => {
    let sandbox: Sandbox;
    beforeAll(async () => {
      sandbox = await startSandbox({ rpm: 100_000 });
    });
    afterAll(() => sandbox?.close());

    it('given the example, when applied, served and synced, then three Signals exist once, their table loads, and a test delivery reaches serve', async () => {
      const dir = await copyOf('signals-serve');
      const config = join(dir, 'seedline.yaml');
      const env = { SEEDLINE_BASE_URL: sandbox.url, SEEDLINE_SERVE_PORT: String(await freePort()) };
      expect((await ok(['signals', 'apply', '--config', config], env)).stdout).toMatch(
        /3 one-time webhook secrets appended/,
      );
      expect((await ok(['signals', 'plan', '--config', config], env)).stdout).toMatch(/unchanged\s+3|3 unchanged/);

      const served = spawnCli(['serve', '--config', config], { env });
      try {
        await vi.waitFor(() => expect(served.stdout).toMatch(/listening on http:\/\/\S+/), PATIENCE);
        await ok(['sync', '--config', config], env);
        const signals = await queryDestination(duckdbAt(dir), 'select count(*)::int as n from seedline.signals');
        expect(signals[0]!.n).toBe(3);
        const listed = JSON.parse((await ok(['signals', 'list', '--config', config, '--json'], env)).stdout) as {
          id: string;
        }[];
        expect(listed).toHaveLength(3);
        const test = await ok(['signals', 'test-webhook', '--config', config, listed[0]!.id], env);
        expect(test.stdout).toMatch(/delivered/);
      } finally {
        served.child.kill('SIGTERM');
        await served.exited;
      }
    });
  });
});

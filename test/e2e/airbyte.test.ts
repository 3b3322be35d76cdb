import { readFileSync } from 'node:fs';
import { protocolMessages } from '../helpers/airbyte-messages.js';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { runCli, tempWorkspace } from '../helpers/cli.js';
import { recordSubmittedJob } from '../helpers/submitted-job.js';
import { exportStreamState } from '../../src/airbyte/airbyte-state.js';
import { createDestination } from '../../src/destinations/create-destination.js';

const KEY = 'svc_live_airbyte';

// Issue 18, item 3: seedline as an Airbyte source.
describe('seedline airbyte', () => {
  let sandbox: Sandbox;
  let dir: string;
  /** A config (the Airbyte config is the seedline config as JSON) with its working DuckDB file named `store`. */
  const config = async (store: string) => {
    const path = join(dir, `${store}.json`);
    await writeFile(
      path,
      JSON.stringify({
        api: { base_url: sandbox.url, api_key: KEY },
        destination: { type: 'duckdb', path: `${store}.duckdb` },
        seeds: { profiles: ['ada-lovelace', 'grace-hopper', 'alan-turing'], companies: ['acme-analytics'] },
        streams: { profiles: {}, companies: {}, account: {} },
      }),
    );
    return path;
  };

  beforeAll(async () => {
    sandbox = await startSandbox({ rpm: 100_000 });
    dir = await tempWorkspace();
  });
  afterAll(() => sandbox?.close());

  it('given a config, when spec, check and discover run, then each prints valid protocol messages: the config schema, SUCCEEDED, and one stream per table with its key and cursor', async () => {
    const path = await config('first');
    const [spec] = protocolMessages((await runCli(['airbyte', 'spec'])).stdout);
    expect(spec.spec.connectionSpecification.properties).toHaveProperty('streams');
    expect(protocolMessages((await runCli(['airbyte', 'check', '--config', path])).stdout)).toEqual([
      { type: 'CONNECTION_STATUS', connectionStatus: { status: 'SUCCEEDED' } },
    ]);
    const [failed] = protocolMessages(
      (await runCli(['airbyte', 'check', '--config', join(dir, 'missing.json')])).stdout,
    );
    expect(failed.connectionStatus).toMatchObject({
      status: 'FAILED',
      message: expect.stringMatching(/cannot read the file/),
    });
    const [catalog] = protocolMessages((await runCli(['airbyte', 'discover', '--config', path])).stdout);
    const streams = catalog.catalog.streams as {
      name: string;
      source_defined_primary_key: string[][];
      default_cursor_field: string[];
    }[];
    expect(streams.find((s) => s.name === 'profiles')).toMatchObject({
      source_defined_primary_key: [['url']],
      default_cursor_field: ['_loaded_at'],
    });
    expect(streams.find((s) => s.name === 'profiles__positions')).toMatchObject({
      source_defined_primary_key: [['_parent_url'], ['_index']],
    });
    await writeFile(
      join(dir, 'catalog.json'),
      JSON.stringify({
        streams: streams
          .filter((s) => ['profiles', 'profiles__positions', 'companies'].includes(s.name))
          .map((stream) => ({ stream, sync_mode: 'incremental', destination_sync_mode: 'append_dedup' })),
      }),
    );
  });

  it('given a catalog of three streams, when read runs, then RECORD, STATE, LOG and TRACE messages are valid; fed back into a read in a fresh container its STATE makes it spend 0 credits', async () => {
    const first = await runCli([
      'airbyte',
      'read',
      '--config',
      await config('first'),
      '--catalog',
      join(dir, 'catalog.json'),
    ]);
    expect(first.code, first.stderr).toBe(0);
    const emitted = protocolMessages(first.stdout);
    const records = (stream: string, all: any[]) =>
      all.filter((m) => m.type === 'RECORD' && m.record.stream === stream).length;
    expect([records('profiles', emitted), records('companies', emitted)]).toEqual([3, 1]);
    expect(records('profiles__positions', emitted)).toBeGreaterThan(0);
    expect(emitted.filter((m) => m.type === 'TRACE').map((m) => m.trace.type)).toEqual(
      expect.arrayContaining(['ESTIMATE', 'STREAM_STATUS']),
    );
    expect(emitted.some((m) => m.type === 'LOG')).toBe(true);
    const finals = emitted.filter(
      (m) => m.type === 'TRACE' && m.trace.type === 'STREAM_STATUS' && m.trace.stream_status.status === 'COMPLETE',
    );
    expect(finals.map((m) => m.trace.stream_status.stream_descriptor.name).sort()).toEqual([
      'companies',
      'profiles',
      'profiles__positions',
    ]);
    // Each stream is emitted as it ends, while the run goes on: the profiles' STATE comes before the
    // companies stream starts, so a read killed then keeps what the profiles bought.
    const profilesState = emitted.findIndex(
      (m) => m.type === 'STATE' && m.state.stream.stream_descriptor.name === 'profiles',
    );
    const companiesStart = emitted.findIndex((m) => m.type === 'LOG' && /\[companies\] started/.test(m.log.message));
    expect(profilesState).toBeGreaterThanOrEqual(0);
    expect(companiesStart).toBeGreaterThan(profilesState);
    const billed = sandbox.ledger.totalBilled();
    expect(billed).toBeGreaterThan(0);

    // What the platform keeps: the last STATE of each stream.
    const states = emitted.filter((m) => m.type === 'STATE').map((m) => m.state);
    await writeFile(join(dir, 'state.json'), JSON.stringify(states));
    const second = await runCli([
      'airbyte',
      'read',
      '--config',
      await config('fresh'),
      '--catalog',
      join(dir, 'catalog.json'),
      '--state',
      join(dir, 'state.json'),
    ]);
    expect(second.code, second.stderr).toBe(0);
    const again = protocolMessages(second.stdout);
    expect(sandbox.ledger.totalBilled()).toBe(billed);
    expect([records('profiles', again), records('companies', again)]).toEqual([0, 0]);
    expect(again.filter((m) => m.type === 'STATE')).toHaveLength(3);

    // full_refresh: every current row of the store, though nothing new was bought.
    const catalog = JSON.parse(readFileSync(join(dir, 'catalog.json'), 'utf8')) as { streams: { sync_mode: string }[] };
    await writeFile(
      join(dir, 'full.json'),
      JSON.stringify({
        streams: catalog.streams.map((s) => ({ ...s, sync_mode: 'full_refresh', destination_sync_mode: 'overwrite' })),
      }),
    );
    const full = protocolMessages(
      (await runCli(['airbyte', 'read', '--config', await config('first'), '--catalog', join(dir, 'full.json')]))
        .stdout,
    );
    expect([records('profiles', full), records('companies', full)]).toEqual([3, 1]);
    expect(sandbox.ledger.totalBilled()).toBe(billed);
  });

  it('given a catalog naming a stream the config does not sync, when read runs, then one ERROR trace says so as a config error and it exits 1', async () => {
    await writeFile(
      join(dir, 'bad-catalog.json'),
      JSON.stringify({
        streams: [
          {
            stream: { name: 'jobs', json_schema: {}, supported_sync_modes: ['full_refresh'] },
            sync_mode: 'full_refresh',
            destination_sync_mode: 'append',
          },
        ],
      }),
    );
    const read = await runCli([
      'airbyte',
      'read',
      '--config',
      await config('bad'),
      '--catalog',
      join(dir, 'bad-catalog.json'),
    ]);
    expect(read.code).toBe(1);
    const errors = protocolMessages(read.stdout).filter((m) => m.type === 'TRACE' && m.trace.type === 'ERROR');
    expect(errors).toEqual([
      expect.objectContaining({
        trace: expect.objectContaining({
          error: expect.objectContaining({ failure_type: 'config_error', message: expect.stringContaining('jobs') }),
        }),
      }),
    ]);
  });

  it('given a seed that fails alone and a stream stopped by the budget, when read runs, then the first stream is COMPLETE with a WARN LOG and the second INCOMPLETE after a TRACE ERROR', async () => {
    const write = async (name: string, seeds: string[], budget: number) => {
      const path = join(dir, `${name}.json`);
      await writeFile(
        path,
        JSON.stringify({
          api: { base_url: sandbox.url, api_key: KEY },
          destination: { type: 'duckdb', path: `${name}.duckdb` },
          seeds: { profiles: seeds },
          streams: { profiles: {} },
          budget: { max_credits_per_run: budget },
        }),
      );
      return path;
    };
    await writeFile(
      join(dir, 'profiles-catalog.json'),
      JSON.stringify({
        streams: [{ stream: { name: 'profiles' }, sync_mode: 'incremental', destination_sync_mode: 'append_dedup' }],
      }),
    );
    const read = async (config: string) => {
      const run = await runCli([
        'airbyte',
        'read',
        '--config',
        config,
        '--catalog',
        join(dir, 'profiles-catalog.json'),
      ]);
      expect(run.code, run.stderr).toBe(0);
      const all = protocolMessages(run.stdout);
      return {
        errors: all.filter((m) => m.type === 'TRACE' && m.trace.type === 'ERROR').map((m) => m.trace.error),
        warnings: all.filter((m) => m.type === 'LOG' && m.log.level === 'WARN').map((m) => m.log.message as string),
        final: all.filter((m) => m.type === 'TRACE' && m.trace.type === 'STREAM_STATUS').at(-1).trace.stream_status
          .status,
      };
    };

    const privateSeed = await read(await write('private-seed', ['ada-lovelace', 'private-dennis-ritchie'], 100));
    expect(privateSeed.errors).toEqual([]);
    expect(privateSeed.final).toBe('COMPLETE');
    expect(privateSeed.warnings).toContainEqual(
      expect.stringMatching(/^stream profiles: 1 seeds or partitions failed one by one/),
    );

    const budget = await read(
      await write(
        'budget',
        Array.from({ length: 40 }, (_, i) => `airbyte-budget-${i}`),
        2,
      ),
    );
    expect(budget.errors).toEqual([
      expect.objectContaining({
        failure_type: 'transient_error',
        message: expect.stringMatching(/^stream profiles stopped at the budget/),
      }),
    ]);
    expect(budget.final).toBe('INCOMPLETE');
  });

  it('given a STATE carrying a batch job a read paid for and never loaded, when a read in an empty store is fed it, then it re-attaches to the job, emits the profile and pays nothing again', async () => {
    // A working store that submitted a job (and recorded it) before its container went away.
    const profile = 'https://www.network.example/in/airbyte-open-job';
    const lost = await createDestination({ type: 'duckdb', path: join(dir, 'lost.duckdb') });
    let state: unknown;
    let jobId: string;
    try {
      jobId = await recordSubmittedJob(lost, { url: sandbox.url, apiKey: KEY }, profile);
      state = [
        {
          type: 'STREAM',
          stream: { stream_descriptor: { name: 'profiles' }, stream_state: await exportStreamState(lost, 'profiles') },
        },
      ];
    } finally {
      await lost.close();
    }
    expect(JSON.stringify(state)).toContain(jobId);
    await sandbox.idle();
    const billedBefore = sandbox.ledger.totalBilled();

    const path = join(dir, 'open-job.json');
    await writeFile(
      path,
      JSON.stringify({
        api: { base_url: sandbox.url, api_key: KEY },
        destination: { type: 'duckdb', path: 'open-job.duckdb' },
        seeds: { profiles: [profile] },
        streams: { profiles: {} },
      }),
    );
    await writeFile(join(dir, 'open-job-state.json'), JSON.stringify(state));
    await writeFile(
      join(dir, 'open-job-catalog.json'),
      JSON.stringify({
        streams: [{ stream: { name: 'profiles' }, sync_mode: 'incremental', destination_sync_mode: 'append_dedup' }],
      }),
    );
    const read = await runCli([
      'airbyte',
      'read',
      '--config',
      path,
      '--catalog',
      join(dir, 'open-job-catalog.json'),
      '--state',
      join(dir, 'open-job-state.json'),
    ]);
    expect(read.code, read.stderr).toBe(0);
    const emitted = protocolMessages(read.stdout);
    expect(emitted.filter((m) => m.type === 'RECORD').map((m) => m.record.data.url)).toEqual([
      expect.stringContaining('airbyte-open-job'),
    ]);
    await sandbox.idle();
    expect(sandbox.ledger.totalBilled()).toBe(billedBefore);
    const finalState = emitted.filter((m) => m.type === 'STATE').at(-1).state.stream.stream_state;
    expect(finalState.batches).toEqual([]);
  });
});

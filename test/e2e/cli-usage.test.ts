import { existsSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { runCli, spawnCli, tempWorkspace, writeConfig } from '../helpers/cli.js';
import { eventually } from '../helpers/sandbox.js';

const STACK = /\n\s+at /;
const BAD_KEY = 'svc_bogus_NeverPrintThisKey42';

/** A config on the embedded sandbox and a DuckDB file in `dir`. */
const configOf = (dir: string, destination: Record<string, unknown> = {}, apiKey = 'svc_test_usage') => ({
  api: { base_url: 'sandbox', api_key: apiKey },
  destination: { type: 'duckdb', path: join(dir, 'w.duckdb'), ...destination },
  seeds: { profiles: ['jane-doe'] },
  streams: { profiles: {} },
});

describe('seedline --version', () => {
  it('given --version or -V, when run, then it prints the version of package.json and exits 0', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    for (const flag of ['--version', '-V']) {
      const result = await runCli([flag]);
      expect([result.code, result.stdout.trim()]).toEqual([0, version]);
    }
  });
});

describe('exit code 2 for every usage error', () => {
  it('given an unknown --streams name, a bad --cron, an unknown option, when run, then each exits 2 naming the problem', async () => {
    const dir = await tempWorkspace();
    const config = await writeConfig(dir, configOf(dir));
    const cases: [string[], RegExp][] = [
      [['plan', '--config', config, '--streams', 'nope'], /--streams: unknown stream "nope"/],
      [['plan', '--config', config, '--streams', 'jobs'], /--streams: stream "jobs" is not configured/],
      [['schedule', '--config', config, '--cron', 'bad'], /is not a cron expression/],
      [['plan', '--config', config, '--bogus'], /unknown option '--bogus'/],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(args);
      expect([args.join(' '), result.code]).toEqual([args.join(' '), 2]);
      expect(result.stderr).toMatch(message);
    }
  });
});

describe('seedline sandbox: a port it cannot use', () => {
  it('given --port 70000, when started, then it names the valid range without a stack trace and exits 2', async () => {
    const result = await runCli(['sandbox', '--port', '70000']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--port .*'70000' is invalid\. expected a port from 0 to 65535/);
    expect(result.stderr).not.toMatch(/RangeError|ERR_SOCKET_BAD_PORT/);
    expect(result.stderr).not.toMatch(STACK);
  });

  it('given a port already in use, when started, then one error line says so and how to pick another', async () => {
    const busy = createServer();
    await new Promise<void>((done) => busy.listen(0, '127.0.0.1', done));
    const { port } = busy.address() as AddressInfo;
    try {
      const result = await runCli(['sandbox', '--port', String(port)]);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `error: Cannot listen: 127.0.0.1:${port} is already in use: stop what listens there, or pick another port with --port (0 picks a free one). (SEEDLINE_LISTEN_FAILED)\n`,
      );
    } finally {
      busy.close();
    }
  });
});

describe('seedline schedule --timezone', () => {
  it('given a zone that does not exist, when started, then a usage error names the flag and it exits 2 before scheduling', async () => {
    const dir = await tempWorkspace();
    const config = await writeConfig(dir, configOf(dir));
    const result = await runCli(['schedule', '--config', config, '--cron', '0 * * * *', '--timezone', 'Mars/Base']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^error: --timezone: "Mars\/Base" is not an IANA time zone: give one such as UTC or Europe\/Berlin \(SEEDLINE_USAGE\)$/m,
    );
    expect(result.stderr).not.toMatch(STACK);
    expect(existsSync(join(dir, 'w.duckdb'))).toBe(false);
  });
});

describe('status and query on a DuckDB path with no file', () => {
  it('given a mistyped path, when status or query runs, then it names the path and destination.path, exits 2 and creates nothing', async () => {
    const dir = await tempWorkspace();
    const missing = join(dir, 'data', 'warehuose.duckdb');
    const config = await writeConfig(dir, configOf(dir, { path: missing }));
    for (const args of [['status'], ['query', 'select 1 as one']]) {
      const result = await runCli([args[0]!, '--config', config, ...args.slice(1)]);
      expect(result.code, result.stderr).toBe(2);
      // Its folder is missing too: that is named first (a folder is never created).
      expect(result.stderr).toContain(`destination.path: the folder ${join(dir, 'data')} does not exist`);
      expect(result.stderr).toMatch(/SEEDLINE_CONFIG_INVALID/);
    }
    expect(existsSync(join(dir, 'data'))).toBe(false);
  });
});

describe('status and query while another process holds the DuckDB file', () => {
  it('given a held file, when status runs, then the advice offers --wait, and query --wait answers once the file is free', async () => {
    const dir = await tempWorkspace();
    const config = await writeConfig(dir, configOf(dir));
    const holder = await DuckDBInstance.create(join(dir, 'w.duckdb'));
    let released = false;
    try {
      const refused = await runCli(['status', '--config', config]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(
        /is locked by another writer: .*Wait for it to finish or stop it, or run again with --wait\. \(SEEDLINE_DESTINATION_LOCKED\)/,
      );

      const waiting = spawnCli(['query', '--config', config, '--wait', '--format', 'json', 'select 42 as answer']);
      await eventually(async () => waiting.stderr.includes('waiting for it (Ctrl-C to stop)'));
      expect(waiting.child.exitCode).toBeNull();
      holder.closeSync();
      released = true;
      expect(await waiting.exited, waiting.stderr).toBe(0);
      expect(JSON.parse(waiting.stdout)).toEqual([{ answer: 42 }]);
    } finally {
      if (!released) holder.closeSync();
    }
  });
});

describe('a refused API key in a config-driven command', () => {
  it('given a bad api.api_key, when sync and plan run, then the advice points at the config key, not --api-key', async () => {
    const dir = await tempWorkspace();
    const config = await writeConfig(dir, configOf(dir, {}, BAD_KEY));
    const sync = await runCli(['sync', '--config', config]);
    expect(sync.code).toBe(1);
    expect(sync.stderr).toMatch(
      /The service refused the API key.*The key came from api\.api_key in .*seedline\.yaml\. \(SEEDLINE_INVALID_API_KEY\)/,
    );
    const plan = await runCli(['plan', '--config', config]);
    expect(plan.code).toBe(0);
    expect(plan.stdout).toMatch(
      /balance: unknown \(The service refused the API key.*The key came from api\.api_key in .*seedline\.yaml\.\)/,
    );
    for (const output of [sync.stderr, plan.stdout]) {
      expect(output).not.toMatch(/--api-key|SEEDLINE_API_KEY/);
      expect(output).not.toContain(BAD_KEY);
    }
  });
});

describe('an invalid DuckDB setting', () => {
  it('given destination.settings.memory_limit: lots, when synced, then the key and the problem are named and it exits 2 before any call', async () => {
    const dir = await tempWorkspace();
    const config = await writeConfig(dir, configOf(dir, { settings: { memory_limit: 'lots' } }));
    const result = await runCli(['sync', '--config', config]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /the value of destination\.settings\.memory_limit was refused: .*Memory must have a number \(e\.g\. 1GB\)\. Fix or remove destination\.settings\.memory_limit in the config\. \(SEEDLINE_DESTINATION_SETTING_INVALID\)/,
    );
    expect(result.stderr).not.toMatch(/Failed to set config/);
  });
});

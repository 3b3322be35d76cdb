import { Command } from 'commander';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { registerAccountCommand } from '../../src/cli/account-command.js';
import { ApiClient } from '../../src/client/api-client.js';
import { accountRecord, ClientTestServer, fail, ok } from '../helpers/client-test-server.js';

const API_KEY = 'svc_test_AccountCommandKey77';
let server: ClientTestServer;

async function run(
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<{ out: string; err: string; exitCode: number }> {
  let out = '';
  let err = '';
  const saved = { key: process.env.SEEDLINE_API_KEY, url: process.env.SEEDLINE_BASE_URL };
  process.env.SEEDLINE_API_KEY = env.SEEDLINE_API_KEY;
  process.env.SEEDLINE_BASE_URL = env.SEEDLINE_BASE_URL;
  if (env.SEEDLINE_API_KEY === undefined) delete process.env.SEEDLINE_API_KEY;
  if (env.SEEDLINE_BASE_URL === undefined) delete process.env.SEEDLINE_BASE_URL;
  const program = new Command().exitOverride();
  registerAccountCommand(program, {
    out: (text) => void (out += text),
    err: (message) => void (err += `error: ${message}\n`),
  });
  process.exitCode = 0;
  try {
    await program.parseAsync(['node', 'seedline', 'account', ...args]);
  } finally {
    if (saved.key === undefined) delete process.env.SEEDLINE_API_KEY;
    else process.env.SEEDLINE_API_KEY = saved.key;
    if (saved.url === undefined) delete process.env.SEEDLINE_BASE_URL;
    else process.env.SEEDLINE_BASE_URL = saved.url;
  }
  const exitCode = Number(process.exitCode ?? 0);
  process.exitCode = 0;
  return { out, err, exitCode };
}

beforeAll(async () => {
  server = await ClientTestServer.start();
});
afterEach(() => server.reset());
afterAll(async () => {
  await server.close();
});

describe('seedline account', () => {
  it('given a good key, when run, then the account prints as a table without the webhook secret', async () => {
    server.on('/v1/account', ok(accountRecord({ webhook_secret: 'whsec_never_print_me' })));
    const { out, err, exitCode } = await run(['--base-url', server.baseUrl, '--api-key', API_KEY]);
    expect(exitCode).toBe(0);
    expect(err).toBe('');
    expect(out).toMatch(/^account_id\s+acc_123$/m);
    expect(out).toMatch(/^credits_remaining\s+1000$/m);
    expect(out).toMatch(/^rate_limit\.requests_per_minute\s+120$/m);
    expect(out).not.toContain('whsec_never_print_me');
    expect(server.requests[0]?.headers['x-api-key']).toBe(API_KEY);
  });

  it('given --format json and the key in SEEDLINE_API_KEY, when run, then JSON is printed', async () => {
    server.on('/v1/account', ok(accountRecord()));
    const { out, exitCode } = await run(['--base-url', server.baseUrl, '--format', 'json'], {
      SEEDLINE_API_KEY: API_KEY,
    });
    expect(exitCode).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ account_id: 'acc_123', rate_limit: { concurrent_batch_jobs: 3 } });
  });

  it('given a bad key, when run, then one error line without the key or a stack trace, and exit code 1', async () => {
    server.on('/v1/account', fail(401, 'invalid_api_key', `unknown key ${API_KEY}`));
    const { out, err, exitCode } = await run(['--base-url', server.baseUrl, '--api-key', API_KEY]);
    expect(exitCode).toBe(1);
    expect(out).toBe('');
    expect(err.trim().split('\n')).toHaveLength(1);
    expect(err).toMatch(/^error: The service refused the API key/);
    expect(err).toMatch(/The key came from --api-key\.$/m);
    expect(err).not.toContain(API_KEY);
    expect(err).not.toMatch(/\n\s+at /);
  });

  it('given a bad key from SEEDLINE_API_KEY, when run, then the advice names the variable, not the flag', async () => {
    server.on('/v1/account', fail(401, 'invalid_api_key', 'unknown key'));
    const { err, exitCode } = await run(['--base-url', server.baseUrl], { SEEDLINE_API_KEY: API_KEY });
    expect(exitCode).toBe(1);
    expect(err).toMatch(/The key came from SEEDLINE_API_KEY\.$/m);
    expect(err).not.toContain('--api-key');
  });

  it('given plain http to a host that is not loopback, when run, then it refuses before building a client, naming --base-url, and exits 2', async () => {
    const getAccount = vi.spyOn(ApiClient.prototype, 'getAccount');
    try {
      const { out, err, exitCode } = await run(['--base-url', 'http://192.0.2.2:18999', '--api-key', API_KEY]);
      expect(exitCode).toBe(2);
      expect(out).toBe('');
      expect(err).toMatch(/^error: --base-url: plain http is allowed only to localhost .*clear text/);
      expect(err).not.toContain(API_KEY);
      expect(getAccount).not.toHaveBeenCalled();
    } finally {
      getAccount.mockRestore();
    }
  });

  it('given plain http to a remote host in SEEDLINE_BASE_URL, when run, then the error names the variable and exits 2', async () => {
    const getAccount = vi.spyOn(ApiClient.prototype, 'getAccount');
    try {
      const { err, exitCode } = await run(['--api-key', API_KEY], {
        SEEDLINE_BASE_URL: 'http://localhost.example.com',
      });
      expect(exitCode).toBe(2);
      expect(err).toMatch(/^error: SEEDLINE_BASE_URL: plain http is allowed only to localhost/);
      expect(getAccount).not.toHaveBeenCalled();
    } finally {
      getAccount.mockRestore();
    }
  });

  it('given an unreachable URL, when run, then a clear one-line error and exit code 1', async () => {
    const { err, exitCode } = await run(['--base-url', 'http://127.0.0.1:1', '--api-key', API_KEY]);
    expect(exitCode).toBe(1);
    expect(err).toMatch(/^error: Could not reach the service at http:\/\/127\.0\.0\.1:1 \(ECONNREFUSED\)/);
    expect(err.trim().split('\n')).toHaveLength(1);
    expect(err).not.toContain(API_KEY);
  });

  it('given no key anywhere, when run, then it says how to pass one and exits 1', async () => {
    const { err, exitCode } = await run(['--base-url', server.baseUrl]);
    expect(exitCode).toBe(1);
    expect(err).toBe('error: No API key: pass --api-key KEY or set SEEDLINE_API_KEY.\n');
    expect(server.requests).toHaveLength(0);
  });

  it('given a malformed URL, when run, then it says what is expected, naming --base-url, and exits 2', async () => {
    const { err, exitCode } = await run(['--base-url', 'not a url', '--api-key', API_KEY]);
    expect(exitCode).toBe(2);
    expect(err).toMatch(/^error: --base-url: expected an absolute https URL/);
    expect(server.requests).toHaveLength(0);
  });
});

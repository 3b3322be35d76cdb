import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { runCli, tempWorkspace, writeConfig } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';

// Issue 34, item 2: one 429 with `Retry-After: 99999` used to leave the client's queue paused for
// 27 hours: the run's stream failed, but the process never exited and kept the destination's lock.
// A proxy in front of the sandbox answers the job searches so; everything else passes through.

/** A proxy to `target` that answers POST /v1/search/jobs with a 429 asking to wait 99999 s. */
async function closedSearchProxy(target: string): Promise<Server> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/search/jobs') {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '99999' });
        res.end(JSON.stringify({ error: { type: 'rate_limited', message: 'closed for the day' } }));
        return;
      }
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([name]) => !['host', 'content-length', 'connection'].includes(name)),
      ) as Record<string, string>;
      const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
      fetch(`${target}${req.url}`, { method: req.method, headers, ...(body ? { body } : {}) })
        .then(async (answer) => {
          res.writeHead(answer.status, Object.fromEntries(answer.headers));
          res.end(Buffer.from(await answer.arrayBuffer()));
        })
        .catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

describe('a Retry-After past what a call waits out', () => {
  let sandbox: Sandbox;
  let proxy: Server;
  beforeAll(async () => {
    sandbox = await startSandbox({ rpm: 100_000 });
    proxy = await closedSearchProxy(sandbox.url);
  });
  afterAll(async () => {
    await new Promise((resolve) => proxy?.close(resolve));
    await sandbox?.close();
  });

  it('given job searches answered 429 with Retry-After 99999, when synced, then the process exits by itself naming the value, the other stream loads, and the lock is free for the next run', async () => {
    const dir = await tempWorkspace();
    const { port } = proxy.address() as AddressInfo;
    const config = await writeConfig(dir, {
      api: { base_url: `http://127.0.0.1:${port}`, api_key: 'svc_test_retry_after' },
      destination: { type: 'duckdb', path: join(dir, 'w.duckdb') },
      seeds: { companies: ['https://www.network.example/company/globex'] },
      streams: { companies: {}, jobs: { keywords: ['data engineer'], per_company: false, via: 'calls' } },
    });
    const sync = await runCli(['sync', '--config', config]);
    expect(sync.code, sync.stderr).toBe(1);
    expect(sync.stderr).toMatch(/asked to wait 99999 s \(Retry-After\), more than the 900 s seedline waits/);
    expect(sync.stdout).toMatch(/companies\s+succeeded/);
    expect(sync.stdout).toMatch(/jobs\s+failed/);
    // The lock was freed: the next command opens the warehouse at once.
    const status = await runCliInProcess(['status', '--config', config]);
    expect(status.code, status.stderr).toBe(0);
  });
});

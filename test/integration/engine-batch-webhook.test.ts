import { mkdtemp } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/index.js';
import { parseConfig } from '../../src/config/load-config.js';
import { createDestination } from '../../src/destinations/create-destination.js';
import type { Destination } from '../../src/destinations/destination.js';
import { prepareSync, runSync } from '../../src/engine/pipeline.js';
import type { Reporter } from '../../src/engine/stream-context.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';

const silent: Reporter = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };
const PROFILES = ['https://www.network.example/in/hook-ada', 'https://www.network.example/in/hook-grace'];

/** A loopback endpoint that keeps every body POSTed to it. */
async function listen(bodies: unknown[]): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    req.on('end', () => {
      bodies.push(JSON.parse(raw));
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks` };
}

describe('batch.webhook_url against the sandbox and DuckDB', () => {
  let sandbox: Sandbox;
  let client: ApiClient;
  let destination: Destination;
  let receiver: { server: Server; url: string };
  let dir: string;
  const bodies: unknown[] = [];

  beforeEach(async () => {
    bodies.length = 0;
    receiver = await listen(bodies);
    sandbox = await startSandbox({ seed: 5, rpm: 100_000 });
    client = await ApiClient.connect({ baseUrl: sandbox.url, apiKey: 'svc_test_hook' });
    dir = await mkdtemp(join(tmpdir(), 'seedline-batch-hook-'));
    destination = await createDestination({ type: 'duckdb', path: join(dir, 'w.duckdb'), schema: 'seedline' });
    await destination.lock({ holder: 'test' });
    await destination.ensureSystemTables();
  });
  afterEach(async () => {
    await destination.close();
    await client.close();
    await sandbox.close();
    await new Promise((resolve) => receiver.server.close(resolve));
  });

  it('given batch.webhook_url, when a batch stream runs, then its job carries the URL and the service posts batch.completed there', async () => {
    const config = parseConfig(
      JSON.stringify({
        api: { base_url: sandbox.url, api_key: 'svc_test_hook' },
        destination: { type: 'duckdb', path: 'w.duckdb' },
        batch: { webhook_url: receiver.url },
        seeds: { profiles: PROFILES },
        streams: { profiles: {} },
      }),
      'test',
    );
    const prepared = await prepareSync({ config, baseDir: dir, manifests: await loadManifests(), destination });

    const result = await runSync(prepared, { client, reporter: silent });
    await sandbox.idle();

    expect(result.status).toBe('succeeded');
    const [batch] = await destination.readBatches('profiles');
    expect(JSON.parse(batch!.body)).toMatchObject({ webhook_url: receiver.url });
    expect((await client.getBatch(batch!.jobId!)).data.webhook_url).toBe(receiver.url);
    expect(bodies).toContainEqual(expect.objectContaining({ event: 'batch.completed', job: expect.objectContaining({ job_id: batch!.jobId }) }));
  });

  it('given a batch.webhook_url that is not a URL, when the config is read, then the error names the key', () => {
    const text = JSON.stringify({ api: { base_url: sandbox.url, api_key: 'k' }, destination: { type: 'duckdb', path: 'w.duckdb' }, batch: { webhook_url: 'not a url' }, streams: {} });
    expect(() => parseConfig(text, 'test')).toThrow(/batch\.webhook_url/);
  });
});

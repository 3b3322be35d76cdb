import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load-config.js';
import { prepareSync, runSync } from '../../src/engine/pipeline.js';
import type { Reporter } from '../../src/engine/stream-context.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import { startEngineRig, type EngineRig } from '../helpers/engine.js';

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
  let rig: EngineRig;
  let receiver: { server: Server; url: string };
  const bodies: unknown[] = [];

  beforeEach(async () => {
    bodies.length = 0;
    receiver = await listen(bodies);
    rig = await startEngineRig('svc_test_hook', { seed: 5, rpm: 100_000 });
  });
  afterEach(async () => {
    await rig.close();
    await new Promise((resolve) => receiver.server.close(resolve));
  });

  it('given batch.webhook_url, when a batch stream runs, then its job carries the URL and the service posts batch.completed there', async () => {
    const config = parseConfig(
      JSON.stringify({
        api: { base_url: rig.sandbox.url, api_key: 'svc_test_hook' },
        destination: { type: 'duckdb', path: 'w.duckdb' },
        batch: { webhook_url: receiver.url },
        seeds: { profiles: PROFILES },
        streams: { profiles: {} },
      }),
      'test',
    );
    const prepared = await prepareSync({
      config,
      baseDir: rig.dir,
      manifests: await loadManifests(),
      destination: rig.destination,
    });

    const result = await runSync(prepared, { client: rig.client, reporter: silent });
    await rig.sandbox.idle();

    expect(result.status).toBe('succeeded');
    const [batch] = await rig.destination.readBatches('profiles');
    // The job completed, so its recorded body was emptied: what it was sent with is the service's to tell.
    expect(batch).toMatchObject({ status: 'completed', body: '' });
    expect((await rig.client.getBatch(batch!.jobId!)).data.webhook_url).toBe(receiver.url);
    expect(bodies).toContainEqual(
      expect.objectContaining({ event: 'batch.completed', job: expect.objectContaining({ job_id: batch!.jobId }) }),
    );
  });

  it('given a batch.webhook_url that is not a URL, when the config is read, then the error names the key', () => {
    const text = JSON.stringify({
      api: { base_url: rig.sandbox.url, api_key: 'k' },
      destination: { type: 'duckdb', path: 'w.duckdb' },
      batch: { webhook_url: 'not a url' },
      streams: {},
    });
    expect(() => parseConfig(text, 'test')).toThrow(/batch\.webhook_url/);
  });
});

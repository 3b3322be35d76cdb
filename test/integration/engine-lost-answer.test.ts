import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/index.js';
import { parseConfig } from '../../src/config/load-config.js';
import { createDestination } from '../../src/destinations/create-destination.js';
import { prepareSync, runSync } from '../../src/engine/pipeline.js';
import type { Reporter } from '../../src/engine/stream-context.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import { startSandbox } from '../../src/sandbox/index.js';

const silent: Reporter = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };
const KEY = 'svc_live_engine_lost_answer';

/** A proxy in front of the sandbox that forwards the first request to `dropPath`, lets the service answer (and bill), then drops the connection. */
async function lossyProxy(target: string, dropPath: string): Promise<{ url: string; close(): Promise<void> }> {
  let dropped = false;
  const upstream = new URL(target);
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const out = httpRequest(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          const parts: Buffer[] = [];
          answer.on('data', (c: Buffer) => parts.push(c));
          answer.on('end', () => {
            if (!dropped && req.url?.split('?')[0] === dropPath) {
              dropped = true;
              req.socket.destroy(); // the service has answered (and billed); the answer is lost on the way back
              return;
            }
            res.writeHead(answer.statusCode ?? 500, answer.headers);
            res.end(Buffer.concat(parts));
          });
        },
      );
      out.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('engine: a billed call whose answer is lost', () => {
  it('given max_credits_per_run 2 and one people search (worst case 2), when the first answer is lost after the service billed it, then it is not sent again in that run (at most 2 credits billed, counted at its worst case) and the next run fetches it', async () => {
    const sandbox = await startSandbox({ rpm: 100_000 });
    const proxy = await lossyProxy(sandbox.url, '/v1/search/people');
    const dir = await mkdtemp(join(tmpdir(), 'seedline-lost-answer-'));
    const destination = await createDestination({ type: 'duckdb', path: join(dir, 'w.duckdb'), schema: 'seedline' });
    const client = await ApiClient.connect({ baseUrl: proxy.url, apiKey: KEY, retry: { baseDelayMs: 5 } });
    try {
      await destination.ensureSystemTables();
      const raw = {
        api: { base_url: proxy.url, api_key: KEY },
        destination: { type: 'duckdb', path: 'w.duckdb' },
        streams: {
          people_search: { searches: [{ id: 's1', filters: { keywords: 'engineer' }, max_results: 25 }], via: 'calls' },
        },
        budget: { max_credits_per_run: 2 },
      };
      const prepared = await prepareSync({
        config: parseConfig(JSON.stringify(raw), 'test'),
        baseDir: dir,
        manifests: await loadManifests(),
        destination,
      });
      const balance = ((await client.getAccount()).data as { credits_remaining: number }).credits_remaining;
      const result = await runSync(prepared, { client, reporter: silent, balance });

      const searches = sandbox.ledger.entries.filter(
        (e) => e.billed && e.credits > 0 && e.operation.includes('search'),
      );
      expect(searches).toHaveLength(1);
      expect(sandbox.ledger.totalBilled()).toBeLessThanOrEqual(2);
      expect(result.credits + result.books.atRisk).toBeGreaterThanOrEqual(sandbox.ledger.totalBilled());
      // The books say what the service said: nothing billed, 2 at risk; the balance shows the lost answer was billed.
      expect(result.books).toMatchObject({ billed: 0, atRisk: 2 });
      expect(result.balanceChange).toBe(sandbox.ledger.totalBilled());
      expect(result.status).not.toBe('succeeded');

      const rerun = await runSync(prepared, { client, reporter: silent, balance: balance - 2 });
      expect(rerun.status).toBe('succeeded');
      expect(
        sandbox.ledger.entries.filter((e) => e.billed && e.credits > 0 && e.operation.includes('search')),
      ).toHaveLength(2);
      expect(rerun.streams.find((s) => s.stream === 'people_search')?.records).toBeGreaterThan(0);
    } finally {
      await client.close();
      await destination.close();
      await proxy.close();
      await sandbox.close();
    }
  });
});

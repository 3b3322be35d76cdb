import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from '../../src/client/index.js';
import { createDestination } from '../../src/destinations/create-destination.js';
import type { Destination } from '../../src/destinations/destination.js';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.js';

/** What an engine test runs against: a sandbox, a client connected to it, a locked DuckDB file. */
export interface EngineRig {
  sandbox: Sandbox;
  client: ApiClient;
  /** Locked, with its system tables; the file is `w.duckdb` in {@link dir}. */
  destination: Destination;
  /** Temporary folder of the destination (and of any seed file a test writes). */
  dir: string;
  /** Closes the destination, the client and the sandbox. */
  close(): Promise<void>;
}

/** Starts a sandbox, connects the real client with `apiKey` and opens a fresh DuckDB destination. */
export async function startEngineRig(apiKey: string, options: SandboxOptions = {}): Promise<EngineRig> {
  const sandbox = await startSandbox(options);
  const client = await ApiClient.connect({ baseUrl: sandbox.url, apiKey });
  const dir = await mkdtemp(join(tmpdir(), 'seedline-engine-'));
  const destination = await createDestination({ type: 'duckdb', path: join(dir, 'w.duckdb'), schema: 'seedline' });
  await destination.lock({ holder: 'test' });
  await destination.ensureSystemTables();
  return {
    sandbox,
    client,
    destination,
    dir,
    async close() {
      await destination.close();
      await client.close();
      await sandbox.close();
    },
  };
}

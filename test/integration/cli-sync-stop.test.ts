import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { syncOnce } from '../../src/cli/sync-action.js';
import { createDestination } from '../../src/destinations/create-destination.js';
import { LockWaitAbortedError } from '../../src/destinations/destination-error.js';
import type { Destination } from '../../src/destinations/destination.js';
import { tempWorkspace, writeConfig } from '../helpers/cli.js';

describe('syncOnce with a stop signal, against a DuckDB file another writer holds', () => {
  let dir: string;
  let holder: Destination;
  let configPath: string;

  beforeEach(async () => {
    dir = await tempWorkspace();
    holder = await createDestination({ type: 'duckdb', path: join(dir, 'w.duckdb'), schema: 'seedline' });
    await holder.lock({ holder: 'test (a long sync)' });
    configPath = await writeConfig(dir, {
      api: { base_url: 'sandbox', api_key: 'svc_test_stop' },
      destination: { type: 'duckdb', path: 'w.duckdb' },
      streams: { profiles: {} },
      seeds: { profiles: ['https://www.network.example/in/stop'] },
    });
  });
  afterEach(() => holder.close());

  it('given a sync waiting for the lock (as serve starts its reads), when its stop signal aborts, then the wait ends with LockWaitAbortedError instead of lasting until the lock is free', async () => {
    const stop = new AbortController();
    const sync = syncOnce({ config: configPath, wait: true, resumeOnly: true, stop: stop.signal });
    stop.abort();
    await expect(sync).rejects.toBeInstanceOf(LockWaitAbortedError);
  });
});

import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { DestinationConfig } from '../../src/destinations/destination.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { tempWorkspace, writeConfig } from './cli.js';

/** A sandbox and a config file on it, for the tests of one file. */
export interface SandboxWorkspace {
  readonly sandbox: Sandbox;
  readonly configPath: string;
  /** Where the config loads; undefined when its backend cannot run here (skip the test). */
  readonly destination: DestinationConfig | undefined;
}

/**
 * Starts a sandbox before the file's tests and writes a config on it (`api` and `destination`
 * filled in, a DuckDB file unless `destinationIn` gives one, e.g. an `e2eBackends` entry's
 * `make`; `rest` adds seeds, streams, signals…); closes it after them.
 */
export function useSandboxWorkspace(
  apiKey: string,
  rest: Record<string, unknown>,
  destinationIn: (dir: string) => Promise<DestinationConfig | undefined> = async (dir) => ({
    type: 'duckdb',
    path: join(dir, 'w.duckdb'),
  }),
): SandboxWorkspace {
  const workspace = {} as { sandbox: Sandbox; configPath: string; destination: DestinationConfig | undefined };
  beforeAll(async () => {
    workspace.sandbox = await startSandbox({ rpm: 100_000 });
    const dir = await tempWorkspace();
    workspace.destination = await destinationIn(dir);
    if (workspace.destination)
      workspace.configPath = await writeConfig(dir, {
        api: { base_url: workspace.sandbox.url, api_key: apiKey },
        destination: workspace.destination,
        ...rest,
      });
  });
  afterAll(() => workspace.sandbox?.close());
  return workspace;
}

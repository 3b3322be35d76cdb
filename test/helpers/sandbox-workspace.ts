import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { tempWorkspace, writeConfig } from './cli.js';

/** A sandbox and a config file on it, for the tests of one file. */
export interface SandboxWorkspace {
  readonly sandbox: Sandbox;
  readonly configPath: string;
}

/**
 * Starts a sandbox before the file's tests and writes a config on it (`api` and a DuckDB
 * `destination` filled in; `rest` adds seeds, streams, signals…); closes it after them.
 */
export function useSandboxWorkspace(apiKey: string, rest: Record<string, unknown>): SandboxWorkspace {
  const workspace = {} as { sandbox: Sandbox; configPath: string };
  beforeAll(async () => {
    workspace.sandbox = await startSandbox({ rpm: 100_000 });
    const dir = await tempWorkspace();
    workspace.configPath = await writeConfig(dir, { api: { base_url: workspace.sandbox.url, api_key: apiKey }, destination: { type: 'duckdb', path: join(dir, 'w.duckdb') }, ...rest });
  });
  afterAll(() => workspace.sandbox?.close());
  return workspace;
}

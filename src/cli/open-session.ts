import { resolve } from 'node:path';
import { ApiClient } from '../client/index.js';
import type { SeedlineConfig } from '../config/config-schema.js';
import { loadConfig, type LoadedConfig } from '../config/load-config.js';
import { createDestination } from '../destinations/create-destination.js';
import type { Destination } from '../destinations/destination.js';
import { startSandbox } from '../sandbox/index.js';

/** An open config, destination and (optionally) client: what every command works on. */
export interface Session {
  loaded: LoadedConfig;
  destination: Destination;
  /** Present when the command calls the service. */
  client?: ApiClient;
  /** Closes the client, the embedded sandbox and the destination (releasing its lock). */
  close(): Promise<void>;
}

/** Options of `openSession`. */
export interface SessionOptions {
  /** Connect to the service (sync). Default: false (plan, query, status make no call). */
  connect?: boolean;
  /** Take the writer lock (sync). Default: false. */
  lock?: boolean;
  /** Wait for the lock instead of failing. Default: false. */
  waitForLock?: boolean;
}

/**
 * Loads and validates the config (before anything else, so a bad config costs nothing), opens
 * the destination, and when asked connects the client, starting the embedded sandbox for
 * `api.base_url: sandbox`.
 */
export async function openSession(configPath: string, options: SessionOptions = {}): Promise<Session> {
  const loaded = await loadConfig(configPath);
  const closers: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const closer of closers.reverse()) await closer().catch(() => undefined);
  };
  try {
    const settings = destinationConfig(loaded);
    const destination = await createDestination(settings);
    closers.push(() => destination.close());
    if (options.lock) await destination.lock({ holder: `seedline sync (pid ${process.pid})`, wait: options.waitForLock ?? false });
    await destination.ensureSystemTables();
    let client: ApiClient | undefined;
    if (options.connect) {
      const baseUrl = await serviceUrl(loaded.config, closers);
      client = await ApiClient.connect({ baseUrl, apiKey: loaded.config.api.api_key, auth: loaded.config.api.auth });
      const connected = client;
      closers.push(() => connected.close());
    }
    return { loaded, destination, client, close };
  } catch (error) {
    await close();
    throw error;
  }
}

function destinationConfig({ config, baseDir }: LoadedConfig) {
  const { destination } = config;
  return destination.type === 'duckdb'
    ? { type: 'duckdb' as const, path: resolve(baseDir, destination.path), schema: destination.schema }
    : { type: 'postgres' as const, url: destination.url, schema: destination.schema };
}

async function serviceUrl(config: SeedlineConfig, closers: (() => Promise<void>)[]): Promise<string> {
  if (config.api.base_url !== 'sandbox') return config.api.base_url;
  const sandbox = await startSandbox({
    port: 0,
    seed: config.api.sandbox.seed,
    latencyMs: config.api.sandbox.latency_ms,
    rpm: config.api.sandbox.rpm,
    faults: config.api.sandbox.faults,
  });
  closers.push(() => sandbox.close());
  return sandbox.url;
}

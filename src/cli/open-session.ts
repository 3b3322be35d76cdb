import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ApiClient, type RateLimiter } from '../client/index.js';
import { primaryApiKey, type SeedlineConfig } from '../config/config-schema.js';
import { ConfigError } from '../config/config-errors.js';
import { loadConfig, type LoadedConfig } from '../config/load-config.js';
import { createDestination } from '../destinations/create-destination.js';
import { DestinationLockedError, LockWaitAbortedError } from '../destinations/destination-error.js';
import type { Destination, DestinationConfig } from '../destinations/destination.js';
import { parseDuration } from '../util/duration.js';
import { sleep } from '../util/sleep.js';
import { log } from '../util/log.js';
import { withKeySource } from './api-key-refused-error.js';

/** An open config and destination: what every command works on. */
export interface Session {
  /** The validated config and where it came from. */
  loaded: LoadedConfig;
  /** The open destination (locked when asked). */
  destination: Destination;
  /**
   * Connects to the service (starting the embedded sandbox for `api.base_url: sandbox` once); once
   * per session and key. `apiKey`: one of `api.keys` (default: the primary key); `limiter`: the rate
   * limiter to call through (a worker's shares its key's window; default: a new one).
   */
  connect(options?: { apiKey?: string; limiter?: RateLimiter }): Promise<ApiClient>;
  /** Closes the client, the embedded sandbox and the destination (releasing its lock). */
  close(): Promise<void>;
}

/** Options of `openSession`. */
export interface SessionOptions {
  /** Take the writer lock (sync). Default: false. */
  lock?: boolean;
  /** Take it shared with other workers (`seedline worker`, Postgres only). Default: false. */
  shared?: boolean;
  /** Postgres: sessions idle inside a transaction this long are ended by the server (a worker's lease). Default: never. */
  idleInTransactionTimeoutMs?: number;
  /**
   * Wait while another process holds the destination instead of failing: for the writer lock with
   * `lock`, else until the file opens (DuckDB opens a file in one process at a time). Default: false.
   */
  waitForLock?: boolean;
  /**
   * The run's stop request: ends a wait for the lock early (`LockWaitAbortedError`), and aborts the
   * client's calls in flight (`CallAbortedError`). Default: none.
   */
  signal?: AbortSignal;
  /** Who takes the lock, as shown to a second writer. Default: `seedline sync`. */
  holder?: string;
  /** The command has `--wait`: a busy destination's error suggests it. Default: false. */
  offersWait?: boolean;
  /** The command only reads (status, query): a DuckDB file that does not exist is refused, not created. Default: false. */
  mustExist?: boolean;
}

/**
 * Loads and validates the config (before anything else, so a bad config costs nothing) and opens
 * the destination. The service is reached only when `connect()` is called.
 */
export async function openSession(configPath: string, options: SessionOptions = {}): Promise<Session> {
  const loaded = await loadConfig(configPath);
  const settings = destinationConfig(loaded, options.idleInTransactionTimeoutMs);
  refuseMissingFolder(configPath, settings);
  if (options.mustExist) refuseMissingFile(configPath, settings);
  const { closers, close } = closerList();
  try {
    const destination = await createDestination(settings);
    closers.push(() => destination.close());
    await openDestination(destination, targetOf(settings), options);
    const clients = new Map<string, Promise<ApiClient>>();
    let url: Promise<string> | undefined;
    const connect = (how: { apiKey?: string; limiter?: RateLimiter } = {}) => {
      const apiKey = how.apiKey ?? primaryApiKey(loaded.config);
      url ??= serviceUrl(loaded.config, closers);
      const client = clients.get(apiKey) ?? connectClient(loaded, closers, url, { ...how, apiKey }, options.signal);
      clients.set(apiKey, client);
      return client;
    };
    return { loaded, destination, connect, close };
  } catch (error) {
    await close();
    throw options.offersWait && error instanceof DestinationLockedError
      ? new DestinationLockedError(error.target, error.holder, { cause: error, retry: 'run again with --wait' })
      : error;
  }
}

/** How often a waiting reader tries to open a destination another process holds. */
const OPEN_RETRY_MS = 200;

/**
 * Takes the writer lock when asked, and prepares the system tables. Without the lock, a wait
 * (`waitForLock`) retries the opening until the holder lets go or `signal` aborts.
 */
async function openDestination(destination: Destination, target: string, options: SessionOptions): Promise<void> {
  if (options.lock) {
    await destination.lock({
      holder: `${options.holder ?? 'seedline sync'} (pid ${process.pid})`,
      wait: options.waitForLock ?? false,
      shared: options.shared ?? false,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }
  for (let attempt = 0; ; attempt++) {
    try {
      return await destination.ensureSystemTables();
    } catch (error) {
      if (options.lock || !options.waitForLock || !(error instanceof DestinationLockedError)) throw error;
      if (attempt === 0) log.info(`${target} is held by ${error.holder}: waiting for it (Ctrl-C to stop)`);
      await sleep(OPEN_RETRY_MS, options.signal);
      if (options.signal?.aborted) throw new LockWaitAbortedError(target);
    }
  }
}

/** Refuses a DuckDB path with no file behind it: a read would otherwise create an empty warehouse. */
function refuseMissingFile(configPath: string, settings: DestinationConfig): void {
  if (settings.type !== 'duckdb' || settings.path === ':memory:' || existsSync(settings.path)) return;
  throw new ConfigError(configPath, [
    `destination.path: no DuckDB file at ${settings.path}: check the path (relative paths start at the config file's folder), or run \`seedline sync\` first to create it`,
  ]);
}

/**
 * A DuckDB file whose folder does not exist is a mistyped path far more often than a wish for a
 * new folder: creating it would start an empty warehouse whose ledger knows nothing, and every
 * seed would be bought again. The user creates the folder; seedline never does.
 */
function refuseMissingFolder(configPath: string, settings: DestinationConfig): void {
  if (settings.type !== 'duckdb' || settings.path === ':memory:') return;
  const folder = dirname(settings.path);
  if (existsSync(folder)) return;
  throw new ConfigError(configPath, [
    `destination.path: the folder ${folder} does not exist: check the path (relative paths start at the config file's folder), or create the folder (mkdir -p '${folder}') for a new warehouse`,
  ]);
}

/** What the destination is, as its errors name it. */
function targetOf(settings: DestinationConfig): string {
  return settings.type === 'duckdb'
    ? `DuckDB file ${settings.path}`
    : `Postgres schema ${settings.schema ?? 'seedline'}`;
}

/** A config and a connected client, without the destination. */
export interface ServiceSession {
  /** The validated config and where it came from. */
  loaded: LoadedConfig;
  /** The connected client. */
  client: ApiClient;
  /** Closes the client and the embedded sandbox. */
  close(): Promise<void>;
}

/**
 * Loads the config and connects to the service, leaving the destination alone: for commands that
 * only call the service (`signals pause`, `check-now`, …), so they never wait on a running sync's file.
 */
export async function openServiceSession(configPath: string): Promise<ServiceSession> {
  const loaded = await loadConfig(configPath);
  const { closers, close } = closerList();
  try {
    const client = await connectClient(loaded, closers, serviceUrl(loaded.config, closers), {
      apiKey: primaryApiKey(loaded.config),
    });
    return { loaded, client, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** What a session opened, and a close that undoes it newest first (a failing closer does not stop the rest). */
function closerList(): { closers: (() => Promise<void>)[]; close: () => Promise<void> } {
  const closers: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const closer of closers.reverse()) await closer().catch(() => undefined);
  };
  return { closers, close };
}

function destinationConfig({ config, baseDir }: LoadedConfig, idleInTransactionTimeoutMs?: number): DestinationConfig {
  const { destination } = config;
  return destination.type === 'duckdb'
    ? {
        type: 'duckdb',
        path: resolve(baseDir, destination.path),
        schema: destination.schema,
        ...(destination.settings ? { settings: destination.settings } : {}),
      }
    : {
        type: 'postgres',
        url: destination.url,
        schema: destination.schema,
        ...(idleInTransactionTimeoutMs ? { idleInTransactionTimeoutMs } : {}),
      };
}

async function connectClient(
  { config, path }: LoadedConfig,
  closers: (() => Promise<void>)[],
  baseUrl: Promise<string>,
  how: { apiKey: string; limiter?: RateLimiter | undefined },
  signal?: AbortSignal,
): Promise<ApiClient> {
  try {
    const client = await ApiClient.connect({
      baseUrl: await baseUrl,
      apiKey: how.apiKey,
      auth: config.api.auth,
      maxAnswerBytes: config.api.max_answer_bytes,
      callDeadlineMs: parseDuration(config.api.call_deadline),
      ...(signal ? { signal } : {}),
      ...(how.limiter ? { limiter: how.limiter } : {}),
    });
    closers.push(() => client.close());
    return client;
  } catch (error) {
    const keys = config.api.keys ?? [];
    const index = keys.findIndex((k) => k.api_key === how.apiKey);
    const source = config.api.api_key === how.apiKey || index < 0 ? 'api.api_key' : `api.keys[${index}].api_key`;
    throw withKeySource(error, `${source} in ${path}`);
  }
}

async function serviceUrl(config: SeedlineConfig, closers: (() => Promise<void>)[]): Promise<string> {
  if (config.api.base_url !== 'sandbox') return config.api.base_url;
  // The embedded sandbox (its fixtures, routes, OpenAPI document) loads only for a config that asks for it.
  const { startSandbox } = await import('../sandbox/index.js');
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

import { hostname } from 'node:os';
import { RateLimiter } from '../client/index.js';
import { ConfigError } from '../config/config-errors.js';
import { loadConfig } from '../config/load-config.js';
import { runWorker } from '../engine/fleet/worker-loop.js';
import { loadManifests } from '../manifest/load-manifests.js';
import { parseDuration } from '../util/duration.js';
import { log } from '../util/log.js';
import { sleep } from '../util/sleep.js';
import { keyFingerprint } from '../util/key-fingerprint.js';
import type { FleetStore } from '../destinations/fleet-store.js';
import type { WorkerKey } from '../engine/fleet/worker-key.js';
import { apiKeysOf } from '../config/config-schema.js';
import { loadCostModel } from './load-cost-model.js';
import type { MetricsAddress } from './listen-options.js';
import { startWorkerMetrics, type CommandMetrics } from './metrics-server.js';
import { openSession, type Session } from './open-session.js';
import { createReporter } from './progress-reporter.js';
import { UsageError } from './run-command.js';
import { stopOnSignals } from './stop-on-signals.js';

/** Options of `seedline worker` from the command line. */
export interface WorkerCliOptions {
  config: string;
  untilIdle?: boolean;
  id?: string;
  lease: string;
  shards: string;
  roundEvery: string;
  wait?: boolean;
  /** Serve Prometheus metrics at `/metrics` there. Default: none. */
  metrics?: MetricsAddress;
}

/** Runs a worker until it is stopped (SIGTERM, Ctrl-C) or, with `--until-idle`, until no work is left. */
export async function workerAction(opts: WorkerCliOptions): Promise<void> {
  const settings = workerSettings(opts);
  const loaded = await loadConfig(opts.config);
  if (loaded.config.destination.type !== 'postgres')
    throw new ConfigError(opts.config, [
      'destination.type: seedline worker shares work between processes through a Postgres warehouse; a DuckDB file takes one writer at a time. Run `seedline sync` for DuckDB, or set destination.type: postgres',
    ]);
  const workerId = opts.id ?? `${hostname()}-${process.pid}`;
  const stop = stopOnSignals();
  let metrics: CommandMetrics | undefined;
  try {
    const session = await openSession(opts.config, {
      lock: true,
      shared: true,
      idleInTransactionTimeoutMs: settings.leaseMs,
      holder: `seedline worker ${workerId}`,
      waitForLock: opts.wait ?? false,
      signal: stop.signal,
      offersWait: true,
    });
    try {
      const fleet = session.destination.fleetStore?.();
      if (!fleet) throw new UsageError('this destination has no fleet tables: seedline worker needs Postgres');
      const { keys, baseUrl, limiters } = await connectKeys(session, fleet);
      log.info(
        `worker ${workerId}: started (keys ${keys.map((k) => k.keyId).join(', ')}, lease ${opts.lease}, ${settings.shards} shards a stream)`,
      );
      if (opts.metrics)
        metrics = await startWorkerMetrics(opts.metrics, {
          destination: session.destination,
          fleet,
          workerId,
          keys: keys.map((key) => ({ keyId: key.keyId, limiter: limiters.get(key.keyId)! })),
        });
      const summary = await runWorker({
        workerId,
        host: hostname(),
        config: session.loaded.config,
        baseDir: session.loaded.baseDir,
        manifests: await loadManifests(session.loaded.config),
        destination: session.destination,
        fleet,
        keys,
        costs: await loadCostModel(baseUrl),
        reporter: createReporter(),
        stop: stop.signal,
        ...settings,
        untilIdle: opts.untilIdle ?? false,
        ...(metrics ? { onRun: metrics.metrics.workerRunEnded } : {}),
      });
      log.info(`worker ${workerId}: stopped after ${summary.items} items, ${summary.credits} credits billed`);
    } finally {
      await metrics?.close();
      await session.close();
    }
  } finally {
    stop.dispose();
  }
}

/**
 * Connects every configured key, each through a rate limiter whose window the fleet shares in
 * Postgres. A key the service refuses at the start is left out with a warning; none left fails.
 */
async function connectKeys(
  session: Session,
  fleet: FleetStore,
): Promise<{ keys: WorkerKey[]; baseUrl: string; limiters: Map<string, RateLimiter> }> {
  const { config } = session.loaded;
  const keys: WorkerKey[] = [];
  const limiters = new Map<string, RateLimiter>();
  let baseUrl = '';
  let firstRefusal: unknown;
  for (const [index, key] of apiKeysOf(config).entries()) {
    const keyId = keyFingerprint(key.api_key);
    try {
      const limiter = sharedLimiter(fleet, keyId);
      const client = await session.connect({ apiKey: key.api_key, limiter });
      limiters.set(keyId, limiter);
      baseUrl = client.baseUrl;
      keys.push({
        keyId,
        client,
        primary: index === 0,
        weight: key.weight,
        maxCredits: key.max_credits_per_run,
        keepBalance: key.keep_balance ?? config.budget.keep_balance,
        balance: client.account?.credits_remaining,
        jobSlots: client.limiter.concurrentBatchJobs,
      });
    } catch (error) {
      firstRefusal ??= error;
      log.warn(`key ${keyId}: left out: ${(error as Error).message}`);
    }
  }
  if (keys.length === 0) throw firstRefusal;
  return { keys, baseUrl, limiters };
}

/**
 * Added to the key's window: a start is stamped before its request is sent, and the service counts
 * the request when it arrives, by whole seconds (the sandbox's window is 60 one-second buckets). A
 * request stamped late in one second that arrives in the next is counted a second longer than the
 * stamp says: without the margin a worker measured one 429 in 1,141 calls at 600 rpm (and its
 * Retry-After, up to a minute, doubled the run).
 */
const SEND_MARGIN_MS = 2000;

/** A rate limiter whose sliding window is the key's in the fleet's tables: workers together keep to the key's rate. */
function sharedLimiter(fleet: FleetStore, keyId: string): RateLimiter {
  return new RateLimiter({
    shared: {
      take: async (limit, windowMs, signal) => {
        for (;;) {
          if (signal?.aborted) throw signal.reason;
          const wait = await fleet.takeRequest(keyId, limit, windowMs + SEND_MARGIN_MS);
          if (wait === 0) return;
          await sleep(wait, signal);
        }
      },
    },
  });
}

function workerSettings(opts: WorkerCliOptions) {
  const shards = Number(opts.shards);
  if (!Number.isInteger(shards) || shards < 1 || shards > 1024)
    throw new UsageError(`--shards: expected a whole number from 1 to 1024, got "${opts.shards}"`);
  const duration = (flag: string, text: string) => {
    try {
      return parseDuration(text);
    } catch (error) {
      throw new UsageError(`${flag}: ${(error as Error).message}`);
    }
  };
  const leaseMs = duration('--lease', opts.lease);
  if (leaseMs < 1000) throw new UsageError(`--lease: at least 1s, got "${opts.lease}"`);
  return {
    shards,
    leaseMs,
    roundEveryMs: duration('--round-every', opts.roundEvery),
    claimPollMs: Math.min(1000, leaseMs / 4),
  };
}

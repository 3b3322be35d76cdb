import type { SeedlineConfig } from '../config/config-schema.js';
import { resolve } from 'node:path';
import { ConfigError } from '../config/config-errors.js';
import { loadConfig, type LoadedConfig } from '../config/load-config.js';
import { DestinationLockedError } from '../destinations/destination-error.js';
import type { Destination } from '../destinations/destination.js';
import { loadManifests } from '../manifest/load-manifests.js';
import { firstLine } from '../util/first-line.js';
import { Mutex } from '../util/mutex.js';
import { logLine } from '../util/log.js';
import { WebhookReceiver } from '../webhooks/webhook-receiver.js';
import { WebhookSecrets } from '../webhooks/webhook-secrets.js';
import type { OpenedDestination, SpoolDrainer } from '../webhooks/spool-drainer.js';
import { keyFingerprint } from '../util/key-fingerprint.js';
import { primaryApiKey } from '../config/config-schema.js';
import { explainListenError, type MetricsAddress } from './listen-options.js';
import { startCommandMetrics, warehouseReader } from './metrics-server.js';
import { openSession } from './open-session.js';
import { openSpoolDrainer } from './open-spool-drainer.js';
import { stopOnSignals } from './stop-on-signals.js';
import { buildReport } from './report-action.js';
import { countedRun, type SeedlineMetrics } from './seedline-metrics.js';
import { syncOnce } from './sync-action.js';

/** The metrics runs are counted in, under the fingerprint of the config's key. */
type RunCounting = { metrics: SeedlineMetrics; keyId: string };

/** Days of history the `/report` page shows. */
const REPORT_DAYS = 30;
/** Options of `seedline serve`. */
export interface ServeOptions {
  /** Config file path. */
  config: string;
  /** Port to listen on. Default: `webhooks.port` of the config (8788); 0 picks a free port. */
  port?: number;
  /** Interface to listen on. Default: `127.0.0.1`. */
  host: string;
  /** Serve Prometheus metrics at `/metrics` there (the batch reads serve starts are its runs). Default: none. */
  metrics?: MetricsAddress;
}

/** Serves until SIGINT or SIGTERM, then answers the deliveries under way, loads the spool once more and stops. */
export async function serve(opts: ServeOptions): Promise<void> {
  const loaded = await loadConfig(opts.config);
  const { webhooks } = loaded.config;
  const secrets = webhooks?.secrets.filter((secret) => secret !== '') ?? [];
  if (!webhooks || (secrets.length === 0 && webhooks.secrets_file === undefined)) {
    throw new ConfigError(opts.config, [
      'webhooks.secrets: seedline serve needs the secrets that sign deliveries (each Signal\'s webhook_secret, the account\'s secret); add e.g. webhooks: { secrets: ["${SEEDLINE_WEBHOOK_SECRET}"] } (set, not empty), or name the file of `signals apply --secrets-out` as webhooks.secrets_file',
    ]);
  }
  const log = logLine;
  webhooks.secrets.forEach((secret, i) => {
    if (secret === '')
      log(
        `warning: webhooks.secrets[${i}] is empty (an unset variable?) and is left out: deliveries it should verify are refused 401`,
      );
  });
  // Owned here and handed to every read serve starts, so a read never adds its own signal handlers.
  const stop = stopOnSignals(() => log('stopping: answering the deliveries under way, then loading the spool'));
  try {
    await serveUntil(stop.signal, opts, loaded, log);
  } finally {
    stop.dispose();
  }
}

async function serveUntil(
  stop: AbortSignal,
  opts: ServeOptions,
  loaded: LoadedConfig,
  log: (line: string) => void,
): Promise<void> {
  const webhooks = loaded.config.webhooks!;
  const metrics =
    opts.metrics && (await startCommandMetrics(opts.metrics, { readWarehouse: warehouseReader(opts.config) }));
  try {
    const counting = metrics && { metrics: metrics.metrics, keyId: keyFingerprint(primaryApiKey(loaded.config)) };
    await receiveUntil(stop, opts, loaded, log, counting);
  } finally {
    await metrics?.close();
  }
}

async function receiveUntil(
  stop: AbortSignal,
  opts: ServeOptions,
  loaded: LoadedConfig,
  log: (line: string) => void,
  counting: RunCounting | undefined,
): Promise<void> {
  const webhooks = loaded.config.webhooks!;
  const batchReads = new BatchReads(opts.config, await configuredBatchStreams(loaded.config), log, stop, counting);
  const drainer = (await openSpoolDrainer(loaded, {
    open: () => openLocked(opts.config),
    log,
    onBatchCompleted: (jobIds, destination) => batchReads.completed(jobIds, destination),
  }))!;

  await drainer.spool.check();
  // Reach the destination before listening, so a wrong path or URL fails now; this also loads
  // what a previous serve accepted but had not loaded when it stopped or crashed.
  try {
    const left = await drainer.drainOnce();
    if (left.files > 0) log(`spool: loaded ${left.files} deliveries accepted before this start`);
  } catch (error) {
    if (!(error instanceof DestinationLockedError)) throw error;
    log(`note: ${firstLine(error)}; deliveries are spooled in ${drainer.spool.dir} until it is free`);
  }

  const secrets = new WebhookSecrets({
    fixed: webhooks.secrets.filter((secret) => secret !== ''),
    file: webhooks.secrets_file === undefined ? undefined : resolve(loaded.baseDir, webhooks.secrets_file),
    log,
  });
  await secrets.current();
  const receiver = new WebhookReceiver({
    secrets,
    path: webhooks.path,
    maxInFlight: webhooks.max_in_flight,
    log,
    sink: {
      accept: async (delivery) => {
        const queued = await drainer.spool.put(delivery);
        drainer.kick();
        return queued;
      },
    },
    health: () => spoolHealth(drainer),
    // Made on each request from the destination (read-only); while a sync or a drain holds it, the answer is 503 and the reason.
    pages: {
      '/report': async () => ({
        contentType: 'text/html; charset=utf-8',
        body: await buildReport(opts.config, REPORT_DAYS),
      }),
    },
  });
  const port = opts.port ?? webhooks.port;
  const url = await receiver.listen(port, opts.host).catch((error: unknown) => {
    throw explainListenError(error, opts.host, port);
  });
  process.stdout.write(`listening on ${url}\n`);
  if (!stop.aborted) await new Promise((done) => stop.addEventListener('abort', done, { once: true }));
  await receiver.close();
  await drainer.stop();
  await batchReads.idle();
}

/**
 * Reads the results of batch jobs a sync recorded but did not finish reading (it was stopped or
 * killed) as soon as `batch.completed` says they are done: a `sync --resume-only` of those jobs
 * alone, which submits nothing and waits on no other job. One read at a time; it waits for the
 * destination's lock until serve stops, and reads not started when serve stops are left for the next sync.
 */
class BatchReads {
  private readonly queue = new Mutex();
  private last: Promise<void> = Promise.resolve();

  constructor(
    private readonly configPath: string,
    private readonly streams: readonly string[],
    private readonly log: (line: string) => void,
    private readonly stop: AbortSignal,
    private readonly counting: RunCounting | undefined,
  ) {}

  /** Called by the drainer, lock held, once `batch.completed` events are recorded. */
  async completed(jobIds: readonly string[], destination: Destination): Promise<void> {
    const wanted = new Set(jobIds);
    const streams: string[] = [];
    const awaited: string[] = [];
    for (const stream of this.streams) {
      const jobs = (await destination.readBatches(stream)).flatMap((b) =>
        b.status === 'submitted' && b.jobId && wanted.has(b.jobId) ? [b.jobId] : [],
      );
      if (jobs.length > 0) streams.push(stream);
      awaited.push(...jobs);
    }
    if (streams.length === 0) {
      this.log(
        `batch.completed: job ${jobIds.join(', ')} is not awaiting a read by this destination's streams: recorded only`,
      );
      return;
    }
    this.log(`batch.completed: reading the results of job ${awaited.join(', ')} (streams ${streams.join(', ')})`);
    // Run after the drain has released the lock: the read takes it itself. Only the completed jobs
    // are read: waiting on other open jobs would hold the lock (and the spool) for hours.
    this.last = this.queue.run(async () => {
      if (this.stop.aborted) {
        this.log(`batch.completed: serve is stopping; job ${awaited.join(', ')} is left for the next sync`);
        return;
      }
      try {
        // The stop ends the read after its page commits, or its wait for the lock.
        await countedRun(this.counting?.metrics, this.counting?.keyId ?? '', (limiter) =>
          syncOnce({
            config: this.configPath,
            streams: streams.join(','),
            wait: true,
            resumeOnly: true,
            resumeJobs: awaited,
            stop: this.stop,
            ...(limiter ? { limiter } : {}),
          }),
        );
      } catch (error) {
        this.log(`batch.completed: reading the results failed (${firstLine(error)}); the next sync reads them`);
      }
    });
  }

  /** Resolves once every read asked for has finished. */
  async idle(): Promise<void> {
    await this.last;
  }
}

/** What `/healthz` tells about the spool: how many deliveries wait, the oldest's age, and why the last drain failed. */
async function spoolHealth(drainer: SpoolDrainer): Promise<Record<string, unknown>> {
  const health: Record<string, unknown> = { last_drain_problem: drainer.problem };
  try {
    const { count, oldestAt } = await drainer.spool.stats();
    return {
      spooled: count,
      oldest_spooled_age_s:
        oldestAt === null ? null : Math.max(0, Math.round((Date.now() - oldestAt.getTime()) / 1000)),
      ...health,
    };
  } catch (error) {
    return { spooled: null, spool_problem: firstLine(error), ...health };
  }
}

async function configuredBatchStreams(config: SeedlineConfig): Promise<string[]> {
  const streams = config.streams;
  return [...(await loadManifests(config)).values()]
    .filter((m) => m.type === 'batch' && streams[m.name] !== undefined)
    .map((m) => m.name);
}

/** Opens the destination and takes its writer lock for one drain, without waiting: a busy destination leaves the deliveries spooled. */
async function openLocked(configPath: string): Promise<OpenedDestination> {
  const session = await openSession(configPath);
  try {
    await session.destination.lock({ holder: `seedline serve (pid ${process.pid})` });
    return session;
  } catch (error) {
    await session.close();
    throw error;
  }
}

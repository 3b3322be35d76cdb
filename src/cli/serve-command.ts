import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { ConfigError } from '../config/config-errors.js';
import { loadConfig } from '../config/load-config.js';
import { DestinationLockedError } from '../destinations/destination-error.js';
import { TableShaper } from '../engine/table-shaper.js';
import { loadManifests, ManifestError } from '../manifest/load-manifests.js';
import { sleep } from '../util/sleep.js';
import { TriggerLoader } from '../webhooks/trigger-loader.js';
import { WebhookReceiver } from '../webhooks/webhook-receiver.js';
import { openSession, type Session } from './open-session.js';
import { runCommand } from './run-command.js';

/**
 * How long a delivery waits for another writer (a sync) to release the destination before it is
 * answered 503. The service wants an answer within 10 s and delivers again later on a 5xx.
 */
const LOCK_WAIT_MS = 8_000;

/** Options of `seedline serve`. */
export interface ServeOptions {
  /** Config file path. */
  config: string;
  /** Port to listen on. Default: `webhooks.port` of the config (8788); 0 picks a free port. */
  port?: number;
  /** Interface to listen on. Default: `127.0.0.1`. */
  host: string;
}

function port(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0 || parsed > 65535) throw new InvalidArgumentError('expected a port from 0 to 65535');
  return parsed;
}

/** `seedline serve`: receives signed webhooks and keeps the `triggers` table fresh by push. */
export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('Receive signed webhooks and load each Signal Trigger into the triggers table as it happens (until stopped)')
    .requiredOption('-c, --config <file>', 'config file (YAML) with a webhooks: section')
    .option('--port <port>', 'port to listen on (default webhooks.port, 8788; 0 picks a free one)', port)
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .action((opts: ServeOptions) => runCommand(() => serve(opts)));
}

/** Serves until SIGINT or SIGTERM, then finishes the deliveries under way and stops. */
export async function serve(opts: ServeOptions): Promise<void> {
  const { config } = await loadConfig(opts.config);
  if (!config.webhooks) {
    throw new ConfigError(opts.config, [
      'webhooks.secrets: seedline serve needs the secrets that sign deliveries (each Signal\'s webhook_secret, the account\'s secret); add e.g. webhooks: { secrets: ["${SEEDLINE_WEBHOOK_SECRET}"] }',
    ]);
  }
  const manifest = (await loadManifests()).get('triggers');
  if (!manifest) throw new ManifestError('streams/triggers.stream.yaml is missing: serve loads Triggers with its table definition');
  const startedAt = new Date();
  const runId = `serve_${startedAt.toISOString().replace(/[-:.TZ]/g, '').slice(0, 14)}_${randomUUID().slice(0, 8)}`;
  const shaper = new TableShaper(manifest.table, { options: config.streams.triggers ?? {}, run: { id: runId, started_at: startedAt.toISOString() } });
  const loader = new TriggerLoader({ open: () => openLocked(opts.config), shaper, runId });

  // Reach the destination once before listening, so a wrong path or URL fails now rather than per delivery.
  await openLocked(opts.config).then(
    (session) => session.close(),
    (error: unknown) => {
      if (!(error instanceof DestinationLockedError)) throw error;
      process.stderr.write(`note: ${error.message.split('\n')[0]}; deliveries wait for it\n`);
    },
  );

  const receiver = new WebhookReceiver({ secrets: config.webhooks.secrets, path: config.webhooks.path, sink: loader });
  const url = await receiver.listen(opts.port ?? config.webhooks.port, opts.host);
  process.stdout.write(`listening on ${url}\n`);
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      process.stderr.write('stopping: finishing the deliveries under way\n');
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await receiver.close();
  await loader.idle();
}

/**
 * Opens the destination and takes its writer lock for one burst of deliveries, waiting up to
 * {@link LOCK_WAIT_MS} for a sync that holds it (DuckDB refuses even to open a file another
 * process holds, so opening is retried too).
 */
async function openLocked(configPath: string): Promise<Session> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    let session: Session | undefined;
    try {
      session = await openSession(configPath);
      await session.destination.lock({ holder: `seedline serve (pid ${process.pid})` });
      return session;
    } catch (error) {
      await session?.close();
      if (!(error instanceof DestinationLockedError) || Date.now() >= deadline) throw error;
      await sleep(200);
    }
  }
}

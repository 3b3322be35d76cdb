import type { Command } from 'commander';
import type { ApiClient } from '../client/index.js';
import { listTaggedSignals } from '../signals/signal-apply.js';
import { formatTable } from './format-table.js';
import { openServiceSession } from './open-session.js';
import { runCommand, UsageError } from './run-command.js';

/** Options shared by the day-to-day Signal commands. */
interface OpsOptions {
  /** Config file path (for `api:`; the destination is not opened). */
  config: string;
  /** Act on every Signal carrying this tag instead of one id. Default: none. */
  tag?: string;
}

/**
 * `seedline signals pause|resume|check-now|test-webhook`: the day-to-day calls on Signals, by id or
 * (pause, resume) by tag. They call the service only; the destination is not opened.
 */
export function registerSignalsOpsCommand(signals: Command): void {
  signals
    .command('pause [id]')
    .description('Pause one Signal, or with --tag every Signal carrying the tag (POST /v1/signals/{id}/pause, /v1/signals/pause). Free; a paused Signal bills nothing')
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .option('--tag <tag>', 'pause every Signal carrying this tag')
    .action((id: string | undefined, opts: OpsOptions) =>
      withClient(opts, async (client) => {
        if (idOrTag(id, opts, 'pause') === 'tag') {
          const { data } = await client.pauseSignalsByTag(opts.tag!);
          return `paused ${data.paused} Signals tagged "${opts.tag}"`;
        }
        const { data } = await client.pauseSignal(id!);
        return `paused ${data.id} (${data.status}${data.paused_reason ? `, reason ${data.paused_reason}` : ''})`;
      }),
    );
  signals
    .command('resume [id]')
    .description(
      'Resume one paused Signal (POST /v1/signals/{id}/resume), or with --tag each paused Signal carrying the tag, one call each ' +
        '(the service shows no resume-by-tag call). The next check diffs against the last snapshot',
    )
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .option('--tag <tag>', 'resume every paused Signal carrying this tag')
    .action((id: string | undefined, opts: OpsOptions) =>
      withClient(opts, async (client) => {
        if (idOrTag(id, opts, 'resume') === 'id') {
          const { data } = await client.resumeSignal(id!);
          return `resumed ${data.id} (${data.status}); next check at ${data.next_check_at ?? 'unknown'}`;
        }
        return resumeTagged(client, opts.tag!);
      }),
    );
  signals
    .command('check-now <id>')
    .description('Run one real check of a Signal now (POST /v1/signals/{id}/check-now): billed like a scheduled check (1 credit for a profile), failed checks free')
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .action((id: string, opts: OpsOptions) =>
      withClient(opts, async (client) => {
        const { data } = await client.checkSignalNow(id);
        const row = {
          signal: data.signal_id,
          check: data.check_number,
          status: data.is_baseline ? `${data.status} (baseline)` : data.status,
          credits: data.credits_used,
          trigger: data.trigger_id ?? '',
          changed: Object.keys(data.diff).join(', '),
        };
        const failure = data.error_type ? `\ncheck failed (not billed): ${data.error_type}${data.error_message ? `: ${data.error_message}` : ''}` : '';
        return `${formatTable([row])}${failure}`;
      }),
    );
  signals
    .command('test-webhook <id>')
    .description('Send a signed signal.test delivery to the Signal\'s webhook (POST /v1/signals/{id}/test-webhook). Free; no check, no Trigger')
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .action((id: string, opts: OpsOptions) =>
      withClient(opts, async (client) => {
        const { data } = await client.testSignalWebhook(id);
        return `${formatTable([{ delivery: data.delivery_id, event: data.event, url: data.url, status: data.status, attempts: data.attempts }])}\n` +
          '`seedline serve` acknowledges signal.test deliveries and keeps them apart from real Triggers';
      }),
    );
}

/** What a command prints, and its exit code (default 0). */
type Outcome = string | { text: string; code: number };

function withClient(opts: OpsOptions, body: (client: ApiClient) => Promise<Outcome>): Promise<void> {
  return runCommand(async () => {
    const session = await openServiceSession(opts.config);
    try {
      const outcome = await body(session.client);
      const { text, code } = typeof outcome === 'string' ? { text: outcome, code: 0 } : outcome;
      process.stdout.write(`${text}\n`);
      return code;
    } finally {
      await session.close();
    }
  });
}

/** Exactly one of an id and `--tag`. */
function idOrTag(id: string | undefined, opts: OpsOptions, verb: string): 'id' | 'tag' {
  if ((id === undefined) === (opts.tag === undefined)) {
    throw new UsageError(`signals ${verb}: give a Signal id or --tag TAG (one of them), e.g. seedline signals ${verb} --config seedline.yaml --tag watch`);
  }
  return id === undefined ? 'tag' : 'id';
}

/** Resumes the tag's paused Signals one by one; a failure is reported and the rest go on. */
async function resumeTagged(client: ApiClient, tag: string): Promise<Outcome> {
  const paused = (await listTaggedSignals(client, tag)).filter((s) => s.status === 'paused');
  const failures: { signal: string; error: string }[] = [];
  for (const signal of paused) {
    await client.resumeSignal(signal.id).catch((error: Error) => failures.push({ signal: signal.id, error: error.message }));
  }
  const line = `resumed ${paused.length - failures.length} of ${paused.length} paused Signals tagged "${tag}"`;
  if (failures.length === 0) return line;
  return { text: `${line}\n\n${formatTable(failures)}`, code: 1 };
}

import type { Command } from 'commander';
import { jsonOption } from './json-output.js';
import { runCommand } from './run-command.js';
import type { OpsOptions } from './signals-ops-action.js';
import { helpExamples } from './help-examples.js';

/**
 * `seedline signals list|pause|resume|check-now|test-webhook|delivery`: the day-to-day calls on Signals, by id or
 * (pause, resume) by tag. They call the service only; the destination is not opened.
 */
export function registerSignalsOpsCommand(signals: Command): void {
  signals
    .command('list')
    .description(
      "List the account's Signals: id, name, target, status, next check, tags (GET /v1/signals, page by page). Free",
    )
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .option('--tag <tag>', 'only the Signals carrying this tag')
    .option('--status <status>', 'only active or paused Signals')
    .option('--limit <count>', 'list at most this many (default 100)')
    .addOption(jsonOption())
    .addHelpText(
      'after',
      helpExamples(
        'signals list --config seedline.yaml',
        'signals list --config seedline.yaml --tag seedline-watch --status paused --json',
      ),
    )
    .action((opts: OpsOptions) => runCommand(async () => (await import('./signals-ops-action.js')).listSignals(opts)));
  signals
    .command('pause [id]')
    .description(
      'Pause one Signal, or with --tag every Signal carrying the tag (POST /v1/signals/{id}/pause, /v1/signals/pause). Free; a paused Signal bills nothing',
    )
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .addOption(jsonOption())
    .option('--tag <tag>', 'pause every Signal carrying this tag')
    .addHelpText(
      'after',
      helpExamples(
        'signals pause --config seedline.yaml sig_4f2a9c1e7b3d5a6e8c0f',
        'signals pause --config seedline.yaml --tag seedline-watch',
      ),
    )
    .action((id: string | undefined, opts: OpsOptions) =>
      runCommand(async () => (await import('./signals-ops-action.js')).pauseSignals(id, opts)),
    );
  signals
    .command('resume [id]')
    .description(
      'Resume one paused Signal (POST /v1/signals/{id}/resume), or with --tag each paused Signal carrying the tag, one call each ' +
        '(the service shows no resume-by-tag call). The next check diffs against the last snapshot',
    )
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .addOption(jsonOption())
    .option('--tag <tag>', 'resume the Signals carrying this tag that were paused by hand (paused_reason user)')
    .option(
      '--all',
      'with --tag, also resume Signals the service paused (insufficient_credits, webhook_failing, webhook_gone): fix the cause first',
      false,
    )
    .addHelpText(
      'after',
      helpExamples(
        'signals resume --config seedline.yaml sig_4f2a9c1e7b3d5a6e8c0f',
        'signals resume --config seedline.yaml --tag seedline-watch --all',
      ),
    )
    .action((id: string | undefined, opts: OpsOptions) =>
      runCommand(async () => (await import('./signals-ops-action.js')).resumeSignals(id, opts)),
    );
  signals
    .command('check-now <id>')
    .description(
      'Run one real check of a Signal now (POST /v1/signals/{id}/check-now): billed like a scheduled check (1 credit for a profile), failed checks free',
    )
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .addOption(jsonOption())
    .addHelpText(
      'after',
      helpExamples(
        'signals check-now --config seedline.yaml sig_4f2a9c1e7b3d5a6e8c0f',
        'signals check-now --config seedline.yaml sig_4f2a9c1e7b3d5a6e8c0f --json',
      ),
    )
    .action((id: string, opts: OpsOptions) =>
      runCommand(async () => (await import('./signals-ops-action.js')).checkSignalNow(id, opts)),
    );
  signals
    .command('test-webhook <id>')
    .description(
      "Send a signed signal.test delivery to the Signal's webhook (POST /v1/signals/{id}/test-webhook), then follow it until it is delivered or failed " +
        '(GET /v1/webhook-deliveries/{id}). Free; no check, no Trigger. Exit code 0 delivered, 1 failed, 3 not final when --wait ran out',
    )
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .option('--wait <seconds>', 'follow the delivery for at most this long; 0 does not follow (default 60)')
    .addOption(jsonOption())
    .addHelpText(
      'after',
      helpExamples(
        'signals test-webhook --config seedline.yaml sig_4f2a9c1e7b3d5a6e8c0f',
        'signals test-webhook --config seedline.yaml sig_4f2a9c1e7b3d5a6e8c0f --wait 300',
      ),
    )
    .action((id: string, opts: OpsOptions) =>
      runCommand(async () => (await import('./signals-ops-action.js')).testSignalWebhook(id, opts)),
    );
  signals
    .command('delivery <delivery_id>')
    .description(
      'Show a webhook delivery: status, attempts, last error (GET /v1/webhook-deliveries/{id}). Free. ' +
        'Exit code 0 delivered, 1 failed, 3 not final (still retrying)',
    )
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .option(
      '--wait <seconds>',
      'follow it until it is delivered or failed, for at most this long (default 0: show it once)',
    )
    .addOption(jsonOption())
    .addHelpText(
      'after',
      helpExamples(
        'signals delivery --config seedline.yaml wh_5d1c0e9a7b3f2a4c6e8d',
        'signals delivery --config seedline.yaml wh_5d1c0e9a7b3f2a4c6e8d --wait 600 --json',
      ),
    )
    .action((id: string, opts: OpsOptions) =>
      runCommand(async () => (await import('./signals-ops-action.js')).showDelivery(id, opts)),
    );
}

import type { Command } from 'commander';
import { jsonOption } from './json-output.js';
import { runCommand } from './run-command.js';
import type { SignalsOptions } from './signals-action.js';
import { registerSignalsOpsCommand } from './signals-ops-command.js';
import { helpExamples } from './help-examples.js';

/** `seedline signals plan|apply`: Signals declared in the config, kept in step like Terraform keeps monitors. */
export function registerSignalsCommand(program: Command): void {
  const signals = program
    .command('signals')
    .description(
      'Manage the Signals declared under `signals:` in the config (only those carrying its tag), and pause, resume, check or test them',
    )
    .addHelpText(
      'after',
      helpExamples(
        'signals plan --config seedline.yaml',
        'signals apply --config seedline.yaml --secrets-out signal-secrets.jsonl',
      ),
    );
  signals
    .command('plan')
    .description(
      'Show what apply would create, update and prune, and the monthly credits of the new Signals; changes nothing',
    )
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .option('--prune', 'plan to delete tagged Signals whose target is no longer declared', false)
    .addOption(jsonOption())
    .addHelpText(
      'after',
      helpExamples('signals plan --config seedline.yaml', 'signals plan --config seedline.yaml --prune --json'),
    )
    .action((opts: SignalsOptions) => runCommand(async () => (await import('./signals-action.js')).planSignals(opts)));
  signals
    .command('apply')
    .description(
      'Create missing Signals (bulk, idempotent), PATCH differing ones, and with --prune delete unwanted ones',
    )
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .option('--prune', 'delete tagged Signals whose target is no longer declared', false)
    .option(
      '--secrets-out <file>',
      "append each created Signal's one-time webhook secret to this file (JSON lines, mode 0600; default: webhooks.secrets_file)",
    )
    .option(
      '--discard-secrets',
      'create Signals without keeping their one-time webhook secrets (`seedline serve` then cannot verify their deliveries)',
      false,
    )
    .addOption(jsonOption())
    .addHelpText(
      'after',
      helpExamples(
        'signals apply --config seedline.yaml --secrets-out signal-secrets.jsonl',
        'signals apply --config seedline.yaml --prune',
      ),
    )
    .action((opts: SignalsOptions) => runCommand(async () => (await import('./signals-action.js')).applySignals(opts)));
  registerSignalsOpsCommand(signals);
}

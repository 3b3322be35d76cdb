import type { Command } from 'commander';
import { jsonOption } from './json-output.js';
import type { RejectedOptions } from './rejected-action.js';
import { runCommand } from './run-command.js';
import { helpExamples } from './help-examples.js';

/**
 * `seedline rejected list|retry`: the records kept in `_seedline_rejected`, and loading them again
 * with today's code and contract, without calling the service (they were paid for once).
 */
export function registerRejectedCommand(program: Command): void {
  const rejected = program
    .command('rejected')
    .description('List the records kept in _seedline_rejected, or load them again without calling the service')
    .addHelpText(
      'after',
      helpExamples('rejected list --config seedline.yaml', 'rejected retry --config seedline.yaml --stream profiles'),
    );
  const common = (command: Command) =>
    command
      .requiredOption('-c, --config <file>', 'config file (YAML)')
      .option('--stream <name>', 'only records of this stream')
      .option('--reason <text>', 'only records whose reason contains this text')
      .option('--wait', 'wait while a sync holds the destination instead of failing (Ctrl-C ends the wait)', false)
      .addOption(jsonOption());
  common(rejected.command('list').description('Count the kept records by stream, table and reason'))
    .addHelpText(
      'after',
      helpExamples(
        'rejected list --config seedline.yaml',
        'rejected list --config seedline.yaml --stream profiles --json',
      ),
    )
    .action((opts: RejectedOptions) =>
      runCommand(async () => (await import('./rejected-action.js')).listRejectedAction(opts)),
    );
  common(
    rejected
      .command('retry')
      .description(
        "Shape the kept records again with today's code and each stream's schema_contract and load what fits, in one unit per stream with their removal; no call, no credit",
      ),
  )
    .addHelpText(
      'after',
      helpExamples(
        'rejected retry --config seedline.yaml',
        'rejected retry --config seedline.yaml --stream profiles --reason "data_type: freeze"',
      ),
    )
    .action((opts: RejectedOptions) =>
      runCommand(async () => (await import('./rejected-action.js')).retryRejectedAction(opts)),
    );
}

import type { Command } from 'commander';
import { jsonOption } from './json-output.js';
import { runCommand } from './run-command.js';
import type { StateOptions } from './state-action.js';
import { helpExamples } from './help-examples.js';

/**
 * `seedline state show|reset`, as Meltano users expect: what the ledgers and cursors say per
 * stream, and making a stream (or one seed of it) due at the next run. Nothing is deleted from
 * the data tables.
 */
export function registerStateCommand(program: Command): void {
  const state = program
    .command('state')
    .description('Show the per-stream seed ledger and cursors, or make a stream or one seed due at the next run')
    .addHelpText(
      'after',
      helpExamples('state show --config seedline.yaml', 'state reset --config seedline.yaml --streams profiles'),
    );
  state
    .command('show')
    .description('Seeds by status, partitions with a cursor, and the last change, per stream')
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .option('--streams <names>', 'only these streams, comma-separated (default: every configured stream)')
    .option(
      '--cursors [count]',
      'also list the latest changed partitions of each stream with their cursors (default 20, at most 1000)',
    )
    .option('--wait', 'wait while a sync holds the destination instead of failing (Ctrl-C ends the wait)', false)
    .addOption(jsonOption())
    .addHelpText(
      'after',
      helpExamples(
        'state show --config seedline.yaml',
        'state show --config seedline.yaml --streams activity --cursors 5',
        'state show --config seedline.yaml --streams profiles,companies --json',
      ),
    )
    .action((opts: StateOptions) => runCommand(async () => (await import('./state-action.js')).showStateAction(opts)));
  state
    .command('reset')
    .description(
      'Make the streams due at the next run (or only --seed): ledger rows lose their fetch time, cursors are deleted; data tables are left as they are',
    )
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .requiredOption('--streams <names>', 'the streams to reset, comma-separated')
    .option('--seed <seed>', 'only this seed (a profile or company URL or slug, a search id)')
    .option('--wait', 'wait for another writer to release the destination instead of failing', false)
    .addOption(jsonOption())
    .addHelpText(
      'after',
      helpExamples(
        'state reset --config seedline.yaml --streams profiles',
        'state reset --config seedline.yaml --streams profiles --seed jane-doe',
      ),
    )
    .action((opts: StateOptions) => runCommand(async () => (await import('./state-action.js')).resetStateAction(opts)));
}

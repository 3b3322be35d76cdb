import type { Command } from 'commander';
import { jsonOption } from './json-output.js';
import { runCommand } from './run-command.js';
import type { StatusOptions } from './status-action.js';
import { helpExamples } from './help-examples.js';

/**
 * `seedline status`: recent runs and the seed ledger by stream and status. A DuckDB file that does
 * not exist is refused, not created; `--wait` waits out a running sync.
 */
export function registerStatusCommand(program: Command): void {
  program
    .command('status')
    .description('Show recent runs, the seed ledger by status, and open batch jobs')
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .option(
      '--run <id>',
      'show this run alone, stream by stream: requests, seconds, rows, failures, credits, stop reason',
    )
    .option('--wait', 'wait while a sync holds the destination instead of failing (Ctrl-C ends the wait)', false)
    .addOption(jsonOption())
    .addHelpText(
      'after',
      helpExamples(
        'status --config seedline.yaml',
        'status --config seedline.yaml --run run_20261128021011_d4b4e869',
        'status --config seedline.yaml --wait --json',
      ),
    )
    .action((opts: StatusOptions) => runCommand(async () => (await import('./status-action.js')).statusAction(opts)));
}

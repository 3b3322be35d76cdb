import type { Command } from 'commander';
import { jsonOption } from './json-output.js';
import type { PlanOptions } from './plan-action.js';
import { runCommand } from './run-command.js';
import { helpExamples } from './help-examples.js';

/** `seedline plan`: what a sync would fetch, its calls and credits, and whether it fits the budget; spends nothing. */
export function registerPlanCommand(program: Command): void {
  program
    .command('plan')
    .description(
      'Show what a sync would fetch now, its worst-case and expected credits, and whether it fits the budget (spends nothing)',
    )
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .option('--streams <names>', 'only these streams, comma-separated')
    .option('--full-refresh', 'plan a full refresh', false)
    .addOption(jsonOption())
    .option('--wait', 'wait while a sync holds the destination instead of failing (Ctrl-C ends the wait)', false)
    .addHelpText(
      'after',
      helpExamples(
        'plan --config seedline.yaml',
        'plan --config seedline.yaml --streams profiles,companies --full-refresh --json',
      ),
    )
    .action((opts: PlanOptions) => runCommand(async () => (await import('./plan-action.js')).planAction(opts)));
}

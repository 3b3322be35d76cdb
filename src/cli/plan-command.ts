import type { Command } from 'commander';
import { jsonOption } from './json-output.js';
import type { PlanOptions } from './plan-action.js';
import { runCommand, UsageError } from './run-command.js';
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
    .option(
      '--baseline <file>',
      'also print what changed against a plan saved with --json (streams, to fetch, credits)',
    )
    .option('--fail-over <credits>', 'exit 4 when the worst case is over this many credits (a gate for pull requests)')
    .addHelpText(
      'after',
      helpExamples(
        'plan --config seedline.yaml',
        'plan --config seedline.yaml --streams profiles,companies --full-refresh --json',
        'plan --config seedline.yaml --baseline plan-main.json --fail-over 5000',
      ),
    )
    .action((opts: Omit<PlanOptions, 'failOver'> & { failOver?: string }) =>
      runCommand(async () => {
        const { planAction } = await import('./plan-action.js');
        return planAction({ ...opts, failOver: credits(opts.failOver) });
      }),
    );
}

/** `--fail-over`'s value: a whole number of credits. */
function credits(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(value))
    throw new UsageError(`--fail-over must be a whole number of credits, not "${text}"`);
  return value;
}

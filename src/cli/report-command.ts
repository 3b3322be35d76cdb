import type { Command } from 'commander';
import { runCommand, UsageError } from './run-command.js';
import { helpExamples } from './help-examples.js';

/** Options of `seedline report`. */
interface ReportOptions {
  config: string;
  out: string;
  days: string;
  wait: boolean;
}

/**
 * `seedline report`: one self-contained HTML page of spend, balance, freshness, failures,
 * Triggers and the last runs, read from the destination only (read-only, like `query`).
 */
export function registerReportCommand(program: Command): void {
  program
    .command('report')
    .description(
      'Write a self-contained HTML report of credits, balance, freshness, failures, Triggers and runs (reads the destination only)',
    )
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .option('--out <file>', 'where to write the page', 'seedline-report.html')
    .option('--days <n>', 'days of history to show', '30')
    .option('--wait', 'wait while a sync holds the destination instead of failing (Ctrl-C ends the wait)', false)
    .addHelpText(
      'after',
      helpExamples('report --config seedline.yaml', 'report --config seedline.yaml --days 7 --out weekly-report.html'),
    )
    .action((opts: ReportOptions) =>
      runCommand(async () => {
        const days = Number(opts.days);
        if (!Number.isInteger(days) || days < 1 || days > 3660)
          throw new UsageError(`--days must be a whole number of days from 1 to 3660, not "${opts.days}"`);
        const { reportAction } = await import('./report-action.js');
        await reportAction({ ...opts, days });
      }),
    );
}

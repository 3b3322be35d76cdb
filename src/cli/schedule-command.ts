import type { Command } from 'commander';
import { metricsOption } from './listen-options.js';
import { runCommand } from './run-command.js';
import type { ScheduleOptions } from './schedule-action.js';
import { helpExamples } from './help-examples.js';

/** `seedline schedule`: keeps the tables fresh by running the config's stream groups on cron schedules. */
export function registerScheduleCommand(program: Command): void {
  program
    .command('schedule')
    .description(
      "Run the stream groups of the config's `schedule:` section on their cron expressions until stopped. One run per group and tick, " +
        'also across processes on one destination; SIGTERM or Ctrl-C lets the page under way commit, then exits',
    )
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .option(
      '--cron <expression>',
      'instead of `schedule:`, one group "cli-<hash of expression, zone and streams>" on this expression, e.g. "0 */6 * * *"',
    )
    .option('--timezone <zone>', 'IANA time zone of --cron', 'UTC')
    .option('--streams <names>', 'streams of --cron, comma-separated (default: every configured stream)')
    .option('--run-now', 'run every group once at start as well', false)
    .addOption(metricsOption())
    .addHelpText(
      'after',
      helpExamples(
        'schedule --config seedline.yaml',
        'schedule --config seedline.yaml --cron "0 */6 * * *" --timezone Europe/Berlin --streams profiles --run-now',
      ),
    )
    .action((opts: ScheduleOptions) =>
      runCommand(async () => (await import('./schedule-action.js')).scheduleAction(opts)),
    );
}

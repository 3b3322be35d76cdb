import type { Command } from 'commander';
import { loadConfig } from '../config/load-config.js';
import { CronRunner } from '../scheduler/cron-runner.js';
import { runCommand } from './run-command.js';
import { syncOnce } from './sync-command.js';

/** `seedline schedule`: keeps the tables fresh by running a sync on a cron schedule. */
export function registerScheduleCommand(program: Command): void {
  program
    .command('schedule')
    .description('Run a sync on a cron schedule until stopped (one run at a time; Ctrl-C waits for the run to end)')
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .requiredOption('--cron <expression>', 'cron expression, e.g. "0 */6 * * *" for every six hours')
    .option('--timezone <zone>', 'IANA time zone of the expression', 'UTC')
    .option('--streams <names>', 'only these streams, comma-separated')
    .option('--run-now', 'run once at start as well', false)
    .action((opts: { config: string; cron: string; timezone: string; streams?: string; runNow: boolean }) =>
      runCommand(async () => {
        // Validate before the first tick so a bad config fails now, not hours later.
        await loadConfig(opts.config);
        const runner = new CronRunner({
          cron: opts.cron,
          timezone: opts.timezone,
          job: async () => {
            // A second writer (another schedule, a manual sync) holds the lock: wait for it rather than skip.
            await syncOnce({ config: opts.config, streams: opts.streams, wait: true });
          },
        });
        runner.start();
        if (opts.runNow) await runner.tick();
        await new Promise<void>((resolve) => {
          const stop = () => {
            process.stderr.write('stopping: waiting for the run under way to end\n');
            void runner.stop().then(resolve);
          };
          process.once('SIGINT', stop);
          process.once('SIGTERM', stop);
        });
      }),
    );
}

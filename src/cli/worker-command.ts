import type { Command } from 'commander';
import { helpExamples } from './help-examples.js';
import { metricsOption } from './listen-options.js';
import { runCommand } from './run-command.js';
import type { WorkerCliOptions } from './worker-action.js';

/**
 * `seedline worker`: one of any number of processes sharing a Postgres warehouse's work: rounds
 * of items leased in Postgres, the key's request window, batch job slots and credits shared.
 */
export function registerWorkerCommand(program: Command): void {
  program
    .command('worker')
    .description('Work with other workers on one Postgres warehouse: take due items, share the key’s limits and budget')
    .requiredOption('-c, --config <file>', 'config file (YAML); its destination must be Postgres')
    .option(
      '--until-idle',
      'exit once the round this worker joined is done and no other is open (cron, orchestrators)',
      false,
    )
    .option('--id <name>', 'worker id shown by status and /metrics (default: host-pid)')
    .option(
      '--lease <duration>',
      'how long an item stays this worker’s without a heartbeat (renewed every third)',
      '30s',
    )
    .option('--shards <n>', 'items each stream of seeds or parent rows is cut into', '8')
    .option('--round-every <duration>', 'a new round opens at most this often (without --until-idle)', '15m')
    .option('--wait', 'wait while a sync holds the warehouse instead of failing (Ctrl-C ends the wait)', false)
    .addOption(metricsOption())
    .addHelpText(
      'after',
      helpExamples(
        'worker --config seedline.yaml --until-idle',
        'worker --config seedline.yaml --id worker-a --lease 1m --round-every 1h',
        'worker --config seedline.yaml --metrics 0.0.0.0:9464',
      ),
    )
    .action((opts: WorkerCliOptions) =>
      runCommand(async () => (await import('./worker-action.js')).workerAction(opts)),
    );
}

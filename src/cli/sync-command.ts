import type { Command } from 'commander';
import { jsonOption } from './json-output.js';
import { runCommand } from './run-command.js';
import type { SyncRunOptions } from './sync-action.js';
import { helpExamples } from './help-examples.js';

/** `seedline sync`: the main job. */
export function registerSyncCommand(program: Command): void {
  program
    .command('sync')
    .description('Fetch what is stale or new for each configured stream and load it into the destination')
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .option('--streams <names>', 'only these streams, comma-separated (dependencies are not added)')
    .option('--full-refresh', 'ignore freshness and incremental cursors: fetch everything again', false)
    .option('--wait', 'wait for another writer to release the destination instead of failing', false)
    .option(
      '--resume-only',
      'only read the results of batch jobs earlier runs submitted (what serve does on batch.completed); submit nothing new',
      false,
    )
    .option('--sample-query', 'print a sample query of the loaded profiles afterwards', false)
    .addOption(jsonOption())
    .addHelpText(
      'after',
      helpExamples('sync --config seedline.yaml', 'sync --config seedline.yaml --streams profiles --json'),
    )
    .action((opts: SyncRunOptions) =>
      runCommand(async () => {
        const { syncOnce } = await import('./sync-action.js');
        const result = await syncOnce(opts);
        return result.status === 'failed' ? 1 : 0;
      }),
    );
}

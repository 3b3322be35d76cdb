import type { Command } from 'commander';
import { metricsOption, parsePort } from './listen-options.js';
import { runCommand } from './run-command.js';
import type { ServeOptions } from './serve-action.js';
import { helpExamples } from './help-examples.js';

/** `seedline serve`: receives signed webhooks and keeps the `triggers` table fresh by push. */
export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description(
      'Receive signed webhooks into a durable spool and load each Signal Trigger into the triggers table within seconds (until stopped)',
    )
    .requiredOption('-c, --config <file>', 'config file (YAML) with a webhooks: section')
    .option('--port <port>', 'port to listen on (default webhooks.port, 8788; 0 picks a free one)', parsePort)
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .addOption(metricsOption())
    .addHelpText(
      'after',
      helpExamples('serve --config seedline.yaml', 'serve --config seedline.yaml --host 0.0.0.0 --port 8788'),
    )
    .action((opts: ServeOptions) => runCommand(async () => (await import('./serve-action.js')).serve(opts)));
}

import type { Command } from 'commander';
import { Option } from 'commander';
import { runCommand } from './run-command.js';
import { helpExamples } from './help-examples.js';

/**
 * `seedline schema`: the tables a sync of the config creates (child tables included), with their
 * columns in the destination's own SQL types; `--format sql` as the create statements. Reads the
 * config and the stream manifests only: no destination is opened, no call is made.
 */
export function registerSchemaCommand(program: Command): void {
  program
    .command('schema')
    .description(
      "Print the tables a sync of the config creates, with the destination's SQL types (no destination is opened)",
    )
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .addOption(new Option('--format <format>', 'json or sql').choices(['json', 'sql']).default('json'))
    .addHelpText(
      'after',
      helpExamples('schema --config seedline.yaml', 'schema --config seedline.yaml --format sql > tables.sql'),
    )
    .action((opts: { config: string; format: 'json' | 'sql' }) =>
      runCommand(async () => (await import('./schema-action.js')).schemaAction(opts)),
    );
}

import type { Command } from 'commander';
import { runProtocol } from './airbyte-protocol.js';
import { helpExamples } from './help-examples.js';

/**
 * `seedline airbyte spec|check|discover|read`: seedline as an Airbyte source. The Airbyte config is
 * the seedline config as JSON; everything goes to stdout as protocol messages (seedline's own log
 * lines as LOG messages). The config's destination is the connector's working store; the STATE
 * messages carry each stream's ledger and cursors, so a sync in a fresh container buys nothing twice.
 */
export function registerAirbyteCommand(program: Command): void {
  const airbyte = program
    .command('airbyte')
    .description('Run as an Airbyte source: spec, check, discover, read (protocol messages on stdout)')
    .addHelpText(
      'after',
      helpExamples(
        'airbyte check --config secrets/config.json',
        'airbyte read --config secrets/config.json --catalog configured_catalog.json --state state.json',
      ),
    );
  airbyte
    .command('spec')
    .description('Print the connector specification (the config JSON Schema)')
    .addHelpText('after', helpExamples('airbyte spec'))
    .action(() => runProtocol(async () => (await import('./airbyte-action.js')).airbyteSpec()));
  airbyte
    .command('check')
    .description('Check the config and that the service answers with its key (GET /v1/account, free)')
    .requiredOption('--config <file>', 'the config (JSON or YAML)')
    .addHelpText('after', helpExamples('airbyte check --config secrets/config.json'))
    .action((opts: { config: string }) =>
      runProtocol(async () => (await import('./airbyte-action.js')).airbyteCheck(opts)),
    );
  airbyte
    .command('discover')
    .description('Print the catalog: one stream per table a sync creates, with its JSON Schema, primary key and cursor')
    .requiredOption('--config <file>', 'the config (JSON or YAML)')
    .addHelpText('after', helpExamples('airbyte discover --config secrets/config.json'))
    .action((opts: { config: string }) =>
      runProtocol(async () => (await import('./airbyte-action.js')).airbyteDiscover(opts)),
    );
  airbyte
    .command('read')
    .description(
      "Sync the catalog's streams and emit their new rows as RECORD messages, then STATE and stream statuses",
    )
    .requiredOption('--config <file>', 'the config (JSON or YAML)')
    .requiredOption('--catalog <file>', 'the configured catalog (JSON)')
    .option('--state <file>', 'the state Airbyte kept from the last read (JSON)')
    .addHelpText(
      'after',
      helpExamples(
        'airbyte read --config secrets/config.json --catalog configured_catalog.json',
        'airbyte read --config secrets/config.json --catalog configured_catalog.json --state state.json',
      ),
    )
    .action((opts: { config: string; catalog: string; state?: string }) =>
      runProtocol(async () => (await import('./airbyte-action.js')).airbyteRead(opts)),
    );
}

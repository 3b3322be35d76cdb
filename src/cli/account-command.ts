import { Option } from 'commander';
import type { Command } from 'commander';
import { log } from '../util/log.js';
import type { AccountCommandIo, AccountOptions } from './account-action.js';
import { jsonOption } from './json-output.js';
import { helpExamples } from './help-examples.js';

/**
 * Adds `seedline account --base-url URL --api-key KEY [--json]`: prints the account
 * (balance, tier, limits, Signal spend). The key defaults to `SEEDLINE_API_KEY`, the URL to
 * `SEEDLINE_BASE_URL`; like `api.base_url` in a config, it must be https (plain http only to
 * localhost), checked before anything is sent. Known failures print one line without a stack
 * trace and set exit code 1 (2 for a refused URL).
 *
 * @example
 * ```ts
 * const program = new Command();
 * registerAccountCommand(program);
 * await program.parseAsync(['node', 'seedline', 'account', '--base-url', 'http://127.0.0.1:4010']);
 * ```
 */
export function registerAccountCommand(program: Command, io: AccountCommandIo = defaultIo): void {
  program
    .command('account')
    .description('Show the account: balance, volume band, rate limits and Signal spend (free call).')
    .option('--base-url <url>', 'service base URL (default: $SEEDLINE_BASE_URL)')
    .option('--api-key <key>', 'API key (default: $SEEDLINE_API_KEY)')
    .addOption(
      new Option('--format <format>', 'output format (--json is --format json)')
        .choices(['table', 'json'])
        .default('table'),
    )
    .addOption(jsonOption())
    .addHelpText(
      'after',
      helpExamples('account --base-url http://127.0.0.1:8787 --api-key svc_live_sandbox') +
        '  $ SEEDLINE_BASE_URL=http://127.0.0.1:8787 SEEDLINE_API_KEY=svc_live_sandbox seedline account --json\n',
    )
    .action(async (options: AccountOptions) => (await import('./account-action.js')).showAccount(options, io));
}

const defaultIo: AccountCommandIo = {
  out: (text) => void process.stdout.write(text),
  err: (message) => log.error(message),
};

import type { Command } from 'commander';
import { formatCsv, formatTable } from './format-table.js';
import { jsonOption, writeJson } from './json-output.js';
import { runCommand, UsageError } from './run-command.js';
import { helpExamples } from './help-examples.js';

/**
 * `seedline query`: SQL over the loaded tables (the destination schema is the default search path).
 * A DuckDB file that does not exist is refused, not created; `--wait` waits out a running sync.
 */
export function registerQueryCommand(program: Command): void {
  program
    .command('query')
    .description('Run SQL on the destination and print the rows')
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .option('-f, --format <format>', 'table, json or csv', 'table')
    .addOption(jsonOption().default(undefined))
    .option('--wait', 'wait while a sync holds the destination instead of failing (Ctrl-C ends the wait)', false)
    .argument('<sql>', 'the query, e.g. "select full_name from seedline.profiles"')
    .addHelpText(
      'after',
      helpExamples(
        'query --config seedline.yaml "select full_name, headline from seedline.profiles limit 10"',
        'query --config seedline.yaml --format csv "select * from seedline.companies" > companies.csv',
      ),
    )
    .action((sql: string, opts: { config: string; format: string; json?: boolean; wait: boolean }, command: Command) =>
      runCommand(async () => {
        const format = outputFormat(opts, command);
        const { openSession } = await import('./open-session.js');
        const session = await openSession(opts.config, { mustExist: true, waitForLock: opts.wait, offersWait: true });
        try {
          const rows = await session.destination.readQuery(sql);
          if (format === 'json') writeJson(rows, { keys: 'as-is' });
          else process.stdout.write(`${format === 'csv' ? formatCsv(rows) : formatTable(rows)}\n`);
        } finally {
          await session.close();
        }
      }),
    );
}

/** `--json` is `--format json`; with another `--format` given too, the two contradict each other. */
function outputFormat(opts: { format: string; json?: boolean }, command: Command): 'table' | 'json' | 'csv' {
  if (!['table', 'json', 'csv'].includes(opts.format))
    throw new UsageError(`--format must be table, json or csv, not "${opts.format}"`);
  if (!opts.json) return opts.format as 'table' | 'json' | 'csv';
  if (command.getOptionValueSource('format') === 'cli' && opts.format !== 'json')
    throw new UsageError(`--json and --format ${opts.format} contradict each other: give one of them`);
  return 'json';
}

import type { Command } from 'commander';
import { formatCsv, formatTable } from './format-table.js';
import { openSession } from './open-session.js';
import { runCommand, UsageError } from './run-command.js';

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
    .option('--wait', 'wait while a sync holds the destination instead of failing (Ctrl-C ends the wait)', false)
    .argument('<sql>', 'the query, e.g. "select full_name from seedline.profiles"')
    .action((sql: string, opts: { config: string; format: string; wait: boolean }) =>
      runCommand(async () => {
        if (!['table', 'json', 'csv'].includes(opts.format)) throw new UsageError(`--format must be table, json or csv, not "${opts.format}"`);
        const session = await openSession(opts.config, { mustExist: true, waitForLock: opts.wait, offersWait: true });
        try {
          const rows = await session.destination.readQuery(sql);
          const text = opts.format === 'json' ? JSON.stringify(rows, null, 2) : opts.format === 'csv' ? formatCsv(rows) : formatTable(rows);
          process.stdout.write(`${text}\n`);
        } finally {
          await session.close();
        }
      }),
    );
}

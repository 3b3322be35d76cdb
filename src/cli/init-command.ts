import type { Command } from 'commander';
import { Option } from 'commander';
import { runCommand } from './run-command.js';
import { helpExamples } from './help-examples.js';

/** Options of `seedline init`. */
interface InitCommandOptions {
  destination?: string;
  postgresUrl?: string;
}

/**
 * `seedline init [DIR]`: a starter project (config, seed CSVs, `.env` example) that syncs against
 * the embedded sandbox at once. Asks which warehouse on a terminal; without one it asks nothing.
 */
export function registerInitCommand(program: Command): void {
  program
    .command('init')
    .description('Write a starter config, seed CSVs and a .env example that run at once against the embedded sandbox')
    .argument('[dir]', 'folder to write into (made when missing)', '.')
    .addOption(
      new Option('--destination <type>', 'the warehouse: a DuckDB file or Postgres (asked on a terminal)').choices([
        'duckdb',
        'postgres',
      ]),
    )
    .option('--postgres-url <url>', 'the Postgres to load into (implies --destination postgres)')
    .addHelpText(
      'after',
      helpExamples(
        'init my-project',
        'init my-project --destination postgres --postgres-url postgres://127.0.0.1:5432/dw',
      ),
    )
    .action((dir: string, opts: InitCommandOptions) =>
      runCommand(async () => {
        const { initAction } = await import('./init-action.js');
        for (const line of await initAction(dir, opts)) process.stdout.write(`${line}\n`);
      }),
    );
}

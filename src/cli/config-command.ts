import type { Command } from 'commander';
import { configJsonSchema } from '../config/config-json-schema.js';
import { runCommand } from './run-command.js';

/** `seedline config schema`: the JSON Schema of the config file, for editors and CI checks. */
export function registerConfigCommand(program: Command): void {
  const config = program.command('config').description('About the config file');
  config
    .command('schema')
    .description('Print the JSON Schema of the config file (what schemas/seedline.config.schema.json holds), for editor completion')
    .action(() =>
      runCommand(async () => {
        process.stdout.write(`${JSON.stringify(configJsonSchema(), null, 2)}\n`);
      }),
    );
}

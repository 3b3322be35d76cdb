import { resolve } from 'node:path';
import type { Command } from 'commander';
import { runCommand } from './run-command.js';
import { helpExamples } from './help-examples.js';

/** `seedline config schema`: the JSON Schema of the config file, for editors and CI checks. */
export function registerConfigCommand(program: Command): void {
  const config = program
    .command('config')
    .description('About the config file')
    .addHelpText('after', helpExamples('config schema > seedline.config.schema.json'));
  config
    .command('schema')
    .description(
      'Print the JSON Schema of the config file (what schemas/seedline.config.schema.json holds), for editor completion',
    )
    .option('--streams-dir <dir>', 'add the options of your own stream manifests in this folder (as streams_dir does)')
    .addHelpText(
      'after',
      helpExamples(
        'config schema > seedline.config.schema.json',
        'config schema --streams-dir ./my-streams > seedline.config.schema.json',
      ),
    )
    .action((opts: { streamsDir?: string }) =>
      runCommand(async () => {
        const { configJsonSchema } = await import('../config/config-json-schema.js');
        const { loadManifests } = await import('../manifest/load-manifests.js');
        const manifests = await loadManifests(opts.streamsDir === undefined ? undefined : resolve(opts.streamsDir));
        process.stdout.write(`${JSON.stringify(configJsonSchema(manifests), null, 2)}\n`);
      }),
    );
}

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, Option } from 'commander';
import { registerAccountCommand } from './account-command.js';
import { registerAirbyteCommand } from './airbyte-command.js';
import { registerConfigCommand } from './config-command.js';
import { registerInitCommand } from './init-command.js';
import { registerPlanCommand } from './plan-command.js';
import { registerQueryCommand } from './query-command.js';
import { registerReportCommand } from './report-command.js';
import { registerRejectedCommand } from './rejected-command.js';
import { registerSandboxCommand } from './sandbox-command.js';
import { registerScheduleCommand } from './schedule-command.js';
import { registerSchemaCommand } from './schema-command.js';
import { registerServeCommand } from './serve-command.js';
import { registerSignalsCommand } from './signals-command.js';
import { registerStateCommand } from './state-command.js';
import { registerStatusCommand } from './status-command.js';
import { registerSyncCommand } from './sync-command.js';
import { registerWorkerCommand } from './worker-command.js';
import { configureLog, LOG_LEVELS } from '../util/log.js';
import { packageRoot } from '../util/package-root.js';
import { helpExamples } from './help-examples.js';

/**
 * Builds the `seedline` command line; each command lives in its own file and registers itself here.
 * A `*-command.ts` file imports only commander and light helpers, and loads what the command does
 * (`*-action.ts`: DuckDB, pg, kysely, zod, undici, the sandbox…) in its action, so `--help` and
 * `--version` load only commander and pino: about twice a bare Node start.
 * @param exit ends the process with a code when commander refuses the command line or prints help
 *   (tests running a command in-process pass one that throws instead). Default: `process.exit`.
 */
export function buildProgram(exit: (code: number) => never = process.exit): Command {
  const program = new Command();
  program
    .name('seedline')
    .description('Warehouse connector for a live professional-network data service: seeds in, typed tables out.')
    .version(packageVersion(), '-V, --version', 'print the version of seedline')
    .addOption(
      new Option(
        '--log-format <format>',
        'log lines on stderr: plain for people, json (one pino object per line) for machines',
      )
        .choices(['plain', 'json'])
        .env('SEEDLINE_LOG_FORMAT')
        .default('plain'),
    )
    .addOption(
      new Option('--log-level <level>', 'least severe log lines shown')
        .choices(LOG_LEVELS)
        .env('SEEDLINE_LOG_LEVEL')
        .default(process.env.SEEDLINE_DEBUG ? 'debug' : 'info'),
    )
    .hook('preAction', (command) => configureLog({ format: command.opts().logFormat, level: command.opts().logLevel }))
    .addHelpText('after', helpExamples('plan --config seedline.yaml', 'sync --config seedline.yaml --sample-query'))
    .showHelpAfterError()
    // A command line commander itself refuses (an unknown option, a bad --port) is a usage error: exit 2, like every other.
    .exitOverride((error) => exit(error.exitCode === 0 ? 0 : 2));
  for (const register of [
    registerInitCommand,
    registerSyncCommand,
    registerWorkerCommand,
    registerPlanCommand,
    registerQueryCommand,
    registerStatusCommand,
    registerReportCommand,
    registerRejectedCommand,
    registerStateCommand,
    registerSchemaCommand,
    registerScheduleCommand,
    registerServeCommand,
    registerSignalsCommand,
    registerAccountCommand,
    registerConfigCommand,
    registerAirbyteCommand,
    registerSandboxCommand,
  ]) {
    register(program);
  }
  return program;
}

/** The version in seedline's package.json. */
function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

import { log } from '../util/log.js';

/** A command used wrongly (a bad option value): says what is expected. Exit code 2, like a bad config. */
export class UsageError extends Error {
  readonly code = 'SEEDLINE_USAGE';
}

/** Codes of failures found before any call: the command line or the config is wrong (exit code 2). */
export const USAGE_CODES: ReadonlySet<string> = new Set([
  'SEEDLINE_CONFIG_INVALID',
  'SEEDLINE_USAGE',
  'SEEDLINE_DESTINATION_SETTING_INVALID',
  'SEEDLINE_QUERY_NOT_READ_ONLY',
  'SEEDLINE_QUERY_OUTSIDE_WAREHOUSE',
  'SEEDLINE_UNKNOWN_STREAM',
  'SEEDLINE_CRON_INVALID',
  'SEEDLINE_SEEDS_FILE_INVALID',
]);

/**
 * Runs a command body and turns failures into one clear line and an exit code. Known failures
 * (errors with a `SEEDLINE_*` code) never show a stack trace; others show it at `--log-level debug`.
 * Exit codes: 2 for a bad command line or config, 1 for any other failure.
 */
export async function runCommand(body: () => Promise<number | void>): Promise<void> {
  try {
    const code = await body();
    process.exitCode = code ?? 0;
  } catch (error) {
    const err = error as Error & { code?: unknown };
    const known = typeof err.code === 'string' && err.code.startsWith('SEEDLINE_');
    log.error(`${err.message}${known ? ` (${String(err.code)})` : ''}`, known ? { code: err.code } : {});
    if (!known) log.debug(err.stack ?? '');
    process.exitCode = known && USAGE_CODES.has(err.code as string) ? 2 : 1;
  }
}

/** A command used wrongly (a bad option value): says what is expected. */
export class UsageError extends Error {
  readonly code = 'SEEDLINE_USAGE';
}

/**
 * Runs a command body and turns failures into one clear line and an exit code. Known failures
 * (errors with a `SEEDLINE_*` code) never show a stack trace; others show it with SEEDLINE_DEBUG=1.
 */
export async function runCommand(body: () => Promise<number | void>): Promise<void> {
  try {
    const code = await body();
    process.exitCode = code ?? 0;
  } catch (error) {
    const err = error as Error & { code?: unknown };
    const known = typeof err.code === 'string' && err.code.startsWith('SEEDLINE_');
    process.stderr.write(`error: ${err.message}${known ? ` (${String(err.code)})` : ''}\n`);
    if (!known && process.env.SEEDLINE_DEBUG) process.stderr.write(`${err.stack ?? ''}\n`);
    process.exitCode = known && err.code === 'SEEDLINE_CONFIG_INVALID' ? 2 : 1;
  }
}

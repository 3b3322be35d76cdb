import { emit, errorTrace, logMessages } from '../airbyte/airbyte-messages.js';
import { configureLog, redact } from '../util/log.js';
import { USAGE_CODES } from './run-command.js';

/**
 * Runs an `airbyte` command: log lines become LOG messages on stdout, and a failure an ERROR trace
 * (`config_error` for a bad config or catalog, `system_error` otherwise) with exit code 1. The
 * command's modules load inside `body`, so a failure to load them is reported the same way.
 */
export async function runProtocol(body: () => Promise<void>): Promise<void> {
  configureLog({ format: 'json', destination: logMessages as unknown as NodeJS.WritableStream });
  try {
    await body();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    emit(
      errorTrace(
        redact((error as Error).message),
        typeof code === 'string' && USAGE_CODES.has(code) ? 'config_error' : 'system_error',
      ),
    );
    process.exitCode = 1;
  }
}

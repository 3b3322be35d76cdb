import { ApiClient } from '../client/api-client.js';
import { redactSecrets, SeedlineClientError } from '../client/errors.js';
import { ApiKeyRefusedError, withKeySource } from './api-key-refused-error.js';
import { checkBaseUrl } from './check-base-url.js';
import type { UsageError } from './run-command.js';

/** Where the command writes; injectable for tests. */
export interface AccountCommandIo {
  /** Standard output. Default `process.stdout.write`. */
  out: (text: string) => void;
  /** One error message, secrets already redacted. Default: the log, at level error (`error: …` on stderr). */
  err: (message: string) => void;
}

/** Options of `seedline account`. */
export interface AccountOptions {
  /** Service base URL. Default: `$SEEDLINE_BASE_URL`. */
  baseUrl?: string;
  /** API key. Default: `$SEEDLINE_API_KEY`. */
  apiKey?: string;
  /** Output format. Default: `table`. */
  format: 'table' | 'json';
  /** Same as `format: 'json'`. Default: false. */
  json: boolean;
}

/**
 * Prints the account (GET /v1/account, free) without its secret-bearing fields. A known failure is
 * one line through `io.err` and exit code 1; a refused URL exit code 2.
 */
export async function showAccount(options: AccountOptions, io: AccountCommandIo): Promise<void> {
  const inputs = accountInputs(options);
  if ('problem' in inputs) return failWith(io, inputs.problem, [], inputs.exitCode);
  const { baseUrl, apiKey } = inputs;
  let client: ApiClient;
  try {
    // A one-off read: fail fast instead of the sync's long retry budget.
    client = new ApiClient({ baseUrl, apiKey, retry: { maxAttempts: 2, maxTotalWaitMs: 5_000 }, timeoutMs: 30_000 });
  } catch (error) {
    return failWith(io, error instanceof Error ? error.message : String(error), [apiKey]);
  }
  try {
    const { data } = await client.getAccount();
    const shown = withoutSecrets(data);
    io.out(options.json || options.format === 'json' ? `${JSON.stringify(shown, null, 2)}\n` : formatTable(shown));
  } catch (error) {
    const explained = withKeySource(error, options.apiKey !== undefined ? '--api-key' : 'SEEDLINE_API_KEY');
    const known = explained instanceof SeedlineClientError || explained instanceof ApiKeyRefusedError;
    failWith(
      io,
      known
        ? explained.message
        : `Unexpected failure: ${explained instanceof Error ? explained.message : String(explained)}`,
      [apiKey],
    );
  } finally {
    await client.close();
  }
}

/** The URL and key to use, or why there are none (a refused URL is a usage error, exit code 2). */
function accountInputs(
  options: AccountOptions,
): { baseUrl: string; apiKey: string } | { problem: string; exitCode: 1 | 2 } {
  const baseUrl = options.baseUrl ?? process.env.SEEDLINE_BASE_URL;
  const apiKey = options.apiKey ?? process.env.SEEDLINE_API_KEY;
  if (!baseUrl) return { problem: 'No service URL: pass --base-url URL or set SEEDLINE_BASE_URL.', exitCode: 1 };
  if (!apiKey) return { problem: 'No API key: pass --api-key KEY or set SEEDLINE_API_KEY.', exitCode: 1 };
  try {
    checkBaseUrl(baseUrl, options.baseUrl !== undefined ? '--base-url' : 'SEEDLINE_BASE_URL');
  } catch (error) {
    return { problem: (error as UsageError).message, exitCode: 2 };
  }
  return { baseUrl, apiKey };
}

/** Prints one error line without the secrets; exit code 2 for a bad command line, else 1. */
function failWith(io: AccountCommandIo, message: string, secrets: string[] = [], exitCode: 1 | 2 = 1): void {
  io.err(redactSecrets(message, secrets));
  process.exitCode = exitCode;
}

/** Drops secret-bearing fields (the account-level `webhook_secret`) before printing. */
function withoutSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutSecrets);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([key]) => !/secret|token|api_?key/i.test(key))
        .map(([key, inner]) => [key, withoutSecrets(inner)]),
    );
  }
  return value;
}

/** Two columns, nested objects flattened to dotted keys. */
function formatTable(value: unknown): string {
  const rows: [string, string][] = [];
  const walk = (prefix: string, inner: unknown) => {
    if (inner && typeof inner === 'object' && !Array.isArray(inner)) {
      for (const [key, child] of Object.entries(inner)) walk(prefix ? `${prefix}.${key}` : key, child);
    } else {
      rows.push([
        prefix,
        inner === null || inner === undefined ? '' : Array.isArray(inner) ? JSON.stringify(inner) : String(inner),
      ]);
    }
  };
  walk('', value);
  const width = Math.max(...rows.map(([key]) => key.length), 5);
  return `${rows.map(([key, text]) => `${key.padEnd(width)}  ${text}`).join('\n')}\n`;
}

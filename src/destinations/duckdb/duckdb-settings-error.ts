import { DuckDBInstance } from '@duckdb/node-api';
import { DestinationSettingError } from '../destination-error.js';

// DuckDB says only "Failed to set config" for a bad value, or lists unknown names without the value's problem.
const SETTINGS_FAILURE = /failed to set config|options were not recognized/i;

// A value may be a credential under any name (a connection string, a proxy URL with user:pass@):
// it is never echoed, and taken out of DuckDB's complaint when long enough to be told apart.
const ECHOED_VALUE_MIN = 4;

/**
 * When opening a DuckDB file failed because of its settings, finds the setting DuckDB refused and
 * why, by trying each one alone on an in-memory database. Returns the error naming
 * `destination.settings.<name>` and DuckDB's reason, or undefined when the failure is another one
 * or no single setting explains it.
 *
 * @example
 * ```ts
 * DuckDBInstance.create(path, settings).catch(async (error) => { throw (await duckDbSettingsError(path, settings, error)) ?? error; });
 * ```
 */
export async function duckDbSettingsError(
  target: string,
  settings: Readonly<Record<string, string>> | undefined,
  failure: unknown,
): Promise<DestinationSettingError | undefined> {
  if (!settings || !SETTINGS_FAILURE.test(failure instanceof Error ? failure.message : String(failure)))
    return undefined;
  for (const [name, value] of Object.entries(settings)) {
    const refusal = await refusalOf(name, value);
    if (refusal === undefined) continue;
    const problem = oneLine(value.length >= ECHOED_VALUE_MIN ? withoutValue(refusal, value) : refusal);
    return new DestinationSettingError(target, name, problem, { cause: failure });
  }
  return undefined;
}

/** DuckDB's complaint about one setting, or undefined when it takes it. */
async function refusalOf(name: string, value: string): Promise<string | undefined> {
  try {
    (await DuckDBInstance.create(':memory:', { [name]: value })).closeSync();
    return undefined;
  } catch (error) {
    // `SET` explains what `create` does not ("Memory must have a number (e.g. 1GB)").
    return (await setFailure(name, value)) ?? (error instanceof Error ? error.message : String(error));
  }
}

async function setFailure(name: string, value: string): Promise<string | undefined> {
  if (!/^[a-z_]{1,64}$/.test(name)) return undefined;
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    await connection.run(`SET ${name} = '${value.replace(/'/g, "''")}'`);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** `text` with every occurrence of `value` taken out, in any letter case (DuckDB repeats some values lowercased). */
function withoutValue(text: string, value: string): string {
  return text.replace(new RegExp(value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gi'), '(the value)');
}

function oneLine(text: string): string {
  return text
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[.\s]+$/, '');
}

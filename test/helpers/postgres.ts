import pg from 'pg';
import { postgresConnection } from '../../src/destinations/postgres/postgres-connection.js';

/** URL of the test server (trust auth). */
export const testPostgresUrl = process.env.SEEDLINE_TEST_PG_URL ?? 'postgres://127.0.0.1:5432/test';

let checked: Promise<boolean> | null = null;

/**
 * Whether the test Postgres answers. When it does not, Postgres cases are skipped with a visible
 * message, except under `CI=true`, where an unreachable server fails the run.
 */
export function postgresAvailable(): Promise<boolean> {
  checked ??= (async () => {
    const client = new pg.Client({ ...postgresConnection(testPostgresUrl), connectionTimeoutMillis: 3000 });
    try {
      await client.connect();
      await client.query('select 1');
      return true;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      if (process.env.CI === 'true') {
        throw new Error(
          `Postgres at ${testPostgresUrl} is unreachable (${reason}) and CI=true: Postgres tests must run in CI. Start the server.`,
        );
      }
      console.warn(
        `\n⚠ Postgres at ${testPostgresUrl} is unreachable (${reason}): SKIPPING the Postgres destination tests. Set SEEDLINE_TEST_PG_URL or start the server.\n`,
      );
      return false;
    } finally {
      await client.end().catch(() => undefined);
    }
  })();
  return checked;
}

/** Drops a test schema (and everything in it). */
export async function dropPostgresSchema(schema: string): Promise<void> {
  const client = new pg.Client(postgresConnection(testPostgresUrl));
  await client.connect();
  try {
    await client.query(`drop schema if exists "${schema.replace(/"/g, '')}" cascade`);
  } finally {
    await client.end();
  }
}

/** Runs one statement on a connection of its own (to act behind a destination's back). */
export async function runOnPostgres(sqlText: string): Promise<void> {
  const client = new pg.Client(postgresConnection(testPostgresUrl));
  await client.connect();
  try {
    await client.query(sqlText);
  } finally {
    await client.end();
  }
}

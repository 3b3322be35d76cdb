import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import pg from 'pg';
import type { Destination } from '../../src/destinations/destination.js';
import type { TableDefinition } from '../../src/normalize/table-definition.js';
import { postgresConnection } from '../../src/destinations/postgres/postgres-connection.js';
import { backendAvailable, makeTestTarget } from '../helpers/destinations.js';
import type { TestTarget } from '../helpers/destinations.js';
import { testPostgresUrl } from '../helpers/postgres.js';

const items: TableDefinition = {
  name: 'items',
  schema: z.object({ id: z.string() }),
  primaryKey: ['id'],
  writeMode: 'merge',
};

/**
 * Terminates the server sessions matching `where` (e.g. idle_session_timeout, a failover, an admin
 * killing sessions) and returns how many. The server answers once each session has ended, and it
 * sends the dying session's FATAL message to its client before that: on loopback the client's
 * socket holds it before this answer arrives, so the client has seen the drop when this returns.
 */
async function terminateSessions(where: string, params: unknown[]): Promise<number> {
  const admin = new pg.Client(postgresConnection(testPostgresUrl));
  await admin.connect();
  try {
    const result = await admin.query<{ ended: boolean }>(
      `select pg_terminate_backend(pid, 10000) as ended from pg_stat_activity where ${where}`,
      params,
    );
    expect(result.rows.every((row) => row.ended)).toBe(true);
    return result.rows.length;
  } finally {
    await admin.end();
  }
}

/** The messages of uncaught exceptions while `fn` runs (a dropped connection without an 'error' listener throws one). */
async function uncaughtDuring(fn: () => Promise<void>): Promise<string[]> {
  const uncaught: string[] = [];
  const onUncaught = (error: Error): void => {
    uncaught.push(error.message);
  };
  process.on('uncaughtException', onUncaught);
  try {
    await fn();
  } finally {
    process.off('uncaughtException', onUncaught);
  }
  return uncaught;
}

/** What a promise settles to: `committed`, or the error's code and message. */
function outcome(promise: Promise<unknown>): Promise<{ code: string; message: string } | 'committed'> {
  return promise.then(
    () => 'committed' as const,
    (error: { code?: string; message?: string }) => ({ code: String(error.code), message: String(error.message) }),
  );
}

describe('postgres destination: connection loss', () => {
  let available = false;
  let target: TestTarget | null = null;
  beforeAll(async () => {
    available = await backendAvailable('postgres');
  });
  afterEach(async () => {
    await target?.dispose();
    target = null;
  });

  async function open(): Promise<Destination> {
    target ??= makeTestTarget('postgres');
    const destination = await target.open();
    await destination.ensureSystemTables();
    await destination.ensureTable(items);
    return destination;
  }

  function terminateLockOf(holder: string): Promise<number> {
    return terminateSessions('application_name = $1', [`seedline lock: ${holder}`]);
  }

  it('given a writer holding the lock with a unit open, when the lock connection drops, then the unit is rolled back with a lock-lost error and nothing is thrown outside the unit', async (ctx) => {
    if (!available) return ctx.skip();
    const first = await open();
    let commit: Awaited<ReturnType<typeof outcome>> | null = null;
    const uncaught = await uncaughtDuring(async () => {
      await first.lock({ holder: 'writer A' });
      const unit = await first.beginUnit('run_a');
      await unit.write('items', [{ id: 'written-after-the-lock-was-lost' }]);

      expect(await terminateLockOf('writer A')).toBe(1);
      commit = await outcome(unit.commit());
      await unit.rollback();
    });

    expect(uncaught).toEqual([]);
    expect(commit).toEqual({
      code: 'SEEDLINE_DESTINATION_LOCK_LOST',
      message: `The writer lock on Postgres schema ${first.schema} was lost (its connection dropped: terminating connection due to administrator command), so another writer may hold it now: this load unit was rolled back and nothing of it was committed. Run again; if the lock keeps dropping, check the server's idle_session_timeout and the connection to the database.`,
    });
    expect(await first.query(`select count(*)::int as n from ${first.schema}.items`)).toEqual([{ n: 0 }]);
  });

  it("given a writer whose lock connection dropped, when a second writer takes the lock, then the first neither claims the lock again nor commits, and only the second writer's rows are loaded", async (ctx) => {
    if (!available) return ctx.skip();
    const first = await open();
    await first.lock({ holder: 'writer A' });
    expect(await terminateLockOf('writer A')).toBe(1);

    const second = await target!.open();
    await second.lock({ holder: 'writer B' });
    await second.ensureTable(items);
    const relock = await outcome(first.lock({ holder: 'writer A' }));
    const unit = await first.beginUnit('run_a');
    await unit.write('items', [{ id: 'from-writer-a' }]);
    const commit = await outcome(unit.commit());
    await unit.rollback();
    const secondUnit = await second.beginUnit('run_b');
    await secondUnit.write('items', [{ id: 'from-writer-b' }]);
    await secondUnit.commit();

    expect(relock).toMatchObject({
      code: 'SEEDLINE_DESTINATION_LOCK_LOST',
      message: expect.stringContaining('this destination writes nothing more'),
    });
    expect(commit).toMatchObject({ code: 'SEEDLINE_DESTINATION_LOCK_LOST' });
    expect(await second.query(`select id from ${second.schema}.items`)).toEqual([{ id: 'from-writer-b' }]);
  });

  it('given a destination that never took the lock, when a unit commits, then it commits as before', async (ctx) => {
    if (!available) return ctx.skip();
    const dest = await open();
    const unit = await dest.beginUnit('run_1');
    await unit.write('items', [{ id: 'a' }]);
    await unit.commit();

    expect(await dest.query(`select id from ${dest.schema}.items`)).toEqual([{ id: 'a' }]);
  });

  it('given an open unit, when its connection drops while idle in transaction, then commit fails with a write error, nothing is thrown outside the unit, and the next unit commits', async (ctx) => {
    if (!available) return ctx.skip();
    const dest = await open();
    let commit: Awaited<ReturnType<typeof outcome>> | null = null;
    const uncaught = await uncaughtDuring(async () => {
      const unit = await dest.beginUnit('run_1');
      await unit.write('items', [{ id: 'a' }]);
      await unit.saveState([{ stream: 'items', partition: '*', cursor: 'page-2' }]);

      const ended = await terminateSessions(
        `datname = current_database() and pid <> pg_backend_pid() and state = 'idle in transaction' and query like $1`,
        // The unit's last statement is its write's: the state upsert is held until COMMIT.
        [`%"${dest.schema}"%`],
      );
      expect(ended).toBe(1);
      commit = await outcome(unit.commit());
      await unit.rollback();
    });

    expect(uncaught).toEqual([]);
    expect(commit).toMatchObject({
      code: 'SEEDLINE_DESTINATION_WRITE_FAILED',
      message: expect.stringContaining('terminating connection due to administrator command'),
    });
    expect(await dest.query(`select count(*)::int as n from ${dest.schema}.items`)).toEqual([{ n: 0 }]);
    const next = await dest.beginUnit('run_2');
    await next.write('items', [{ id: 'b' }]);
    await next.commit();
    expect(await dest.query(`select id from ${dest.schema}.items`)).toEqual([{ id: 'b' }]);
  });
});

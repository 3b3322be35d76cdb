import { afterEach, describe, expect, it } from 'vitest';
import type { Destination } from '../../src/destinations/destination.js';
import { backendAvailable, destinationKinds, makeTestTarget, type TestTarget } from '../helpers/destinations.js';

describe.each(destinationKinds)('system tables of an earlier version (%s)', (kind) => {
  let target: TestTarget | undefined;
  afterEach(async () => {
    await target?.dispose();
    target = undefined;
  });

  /** A fresh target with its system tables, written by a locked destination (as an earlier release left it), and its schema. */
  async function earlierRelease(): Promise<{ warehouse: TestTarget; destination: Destination; schema: string }> {
    const warehouse = makeTestTarget(kind);
    target = warehouse;
    const destination = await warehouse.open();
    await destination.lock({ holder: 'test', wait: false });
    await destination.ensureSystemTables();
    return { warehouse, destination, schema: kind === 'duckdb' ? 'seedline' : warehouse.where };
  }

  it('given a _seedline_runs without schedule_group, when the upgraded release ensures the system tables (two processes at once on Postgres), then the column is added once and a group run round-trips', async ({
    skip,
  }) => {
    if (!(await backendAvailable(kind))) skip();
    // What an earlier seedline created: the same table without the column added since.
    const { warehouse, destination, schema } = await earlierRelease();
    await destination.query(`alter table "${schema}"._seedline_runs drop column schedule_group`);
    await destination
      .saveRun({ runId: 'old', startedAt: new Date('2026-01-01T00:00:00Z'), status: 'succeeded' })
      .catch(() => undefined);

    await destination.close();

    // The upgraded release starting: two processes at once (serve and a schedule tick), each adding the column.
    const starting = [await warehouse.open(), ...(kind === 'postgres' ? [await warehouse.open()] : [])];
    await Promise.all(starting.map((d) => d.ensureSystemTables()));
    await Promise.all(starting.slice(1).map((d) => d.close()));
    const upgraded = starting[0]!;
    await upgraded.lock({ holder: 'test', wait: false });
    await upgraded.saveRun({
      runId: 'r1',
      startedAt: new Date('2026-01-02T00:00:00Z'),
      status: 'succeeded',
      scheduleGroup: 'nightly',
    });
    const runs = await upgraded.readRuns(10);
    expect(runs.find((r) => r.runId === 'r1')?.scheduleGroup).toBe('nightly');
  });

  it('given batch rows an earlier release kept whole after their jobs completed, when the upgraded release ensures the system tables, then completed bodies are emptied and open ones kept', async ({
    skip,
  }) => {
    if (!(await backendAvailable(kind))) skip();
    const { warehouse, destination, schema } = await earlierRelease();
    // Written as an earlier release wrote them: every body kept, whatever the status.
    for (const [key, status] of [
      ['k-done', 'completed'],
      ['k-open', 'submitted'],
    ])
      await destination.query(
        `insert into "${schema}"._seedline_batches (idempotency_key, stream, body_hash, body, job_id, status, item_count, created_at, updated_at)
         values ('${key}', 'profiles', 'h', '{"items":[{"ref":"a"}]}', 'job-${key}', '${status}', 1, now(), now())`,
      );
    await destination.close();

    const upgraded = await warehouse.open();
    await upgraded.ensureSystemTables();
    const bodies = new Map((await upgraded.readBatches('profiles')).map((b) => [b.idempotencyKey, b.body]));
    expect(Object.fromEntries(bodies)).toEqual({ 'k-done': '', 'k-open': '{"items":[{"ref":"a"}]}' });
  });
});

import { describe, expect, it } from 'vitest';
import type { Destination } from '../../src/destinations/destination.js';
import { destinationKinds, useBackend } from '../helpers/destinations.js';

// SQL a user writes (`seedline query`, `seeds.*.sql`, `signals.targets.sql`) runs read-only by
// construction: one select, or nothing runs at all.
for (const kind of destinationKinds) {
  describe(`${kind}: SQL a user wrote runs read-only`, () => {
    const backend = useBackend(kind);

    async function open(): Promise<{ dest: Destination; schema: string }> {
      const dest = await backend.open();
      await dest.saveRun({
        runId: 'run_1',
        startedAt: new Date('2026-11-01T00:00:00Z'),
        status: 'succeeded',
        creditsUsed: 60,
      });
      return { dest, schema: `"${dest.schema}"` };
    }

    const hostile = (schema: string) => [
      `select 1; drop table ${schema}._seedline_runs`,
      `drop table ${schema}._seedline_runs`,
      `delete from ${schema}._seedline_runs`,
      `insert into ${schema}._seedline_runs (run_id, started_at, status) values ('x', now(), 'x')`,
      `create table ${schema}.intruder (a int)`,
      `commit; drop table ${schema}._seedline_runs`,
      `update ${schema}._seedline_runs set credits_used = 0`,
      ...(kind === 'duckdb'
        ? [
            `explain analyze delete from ${schema}._seedline_runs`,
            `copy ${schema}._seedline_runs to '/tmp/seedline-leak.csv'`,
            'pragma disable_checkpoint_on_shutdown',
          ]
        : []),
    ];

    it('given statements that write, or more than one statement, when run as a user query, then each is refused as not read-only and the tables are intact', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const { dest, schema } = await open();
      for (const sql of hostile(schema)) {
        await expect(dest.readQuery(sql), sql).rejects.toMatchObject({ code: 'SEEDLINE_QUERY_NOT_READ_ONLY' });
      }
      const runs = await dest.readQuery(`select run_id, credits_used from ${schema}._seedline_runs`);
      expect(runs.map((r) => [r.run_id, Number(r.credits_used)])).toEqual([['run_1', 60]]);
      const tables = await dest.readQuery(
        `select table_name from information_schema.tables where table_name = 'intruder'`,
      );
      expect(tables).toEqual([]);
    });

    it('given one select (a CTE too), when run as a user query, then its rows come back', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const { dest, schema } = await open();
      const rows = await dest.readQuery(
        `with r as (select run_id from ${schema}._seedline_runs) select count(*) as n from r`,
      );
      expect(rows.map((r) => Number(r.n))).toEqual([1]);
    });

    it('given a select that fails, when run as a user query, then it fails as a query error, not a refusal', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const { dest, schema } = await open();
      await expect(dest.readQuery(`select no_such_column from ${schema}._seedline_runs`)).rejects.toMatchObject({
        code: 'SEEDLINE_DESTINATION_QUERY_FAILED',
      });
    });
  });
}

import { describe, expect, it } from 'vitest';
import { SeedList, SeedSourceError, SeedSqlRefusedError } from '../../src/config/seed-list.js';
import type { Destination } from '../../src/destinations/destination.js';
import { destinationKinds, useBackend } from '../helpers/destinations.js';

const SEEDS = 5_000;

for (const kind of destinationKinds) {
  describe(`${kind}: a { sql } seed source read through a cursor`, () => {
    const backend = useBackend(kind);

    async function withCrmTable(): Promise<Destination> {
      const dest = await backend.open();
      const numbers = kind === 'postgres' ? `generate_series(0, ${SEEDS - 1}) as t(i)` : `range(${SEEDS}) as t(i)`;
      await dest.query(
        `create table ${dest.schema}.crm as select 'https://www.network.example/in/crm-' || cast(i as varchar) as url, i from ${numbers}`,
      );
      return dest;
    }
    const open = (dest: Destination, sql: string) =>
      SeedList.open('seeds.profiles', { sql }, '.', (text, size) => dest.readQueryChunks(text, size));

    it('given a query of 5,000 seeds, when read in chunks of 1,000 twice, then each pass yields every seed once, in order, a bounded chunk at a time', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await withCrmTable();
      const list = await open(dest, `select url from ${dest.schema}.crm order by i`);
      for (let pass = 0; pass < 2; pass++) {
        const chunks: string[][] = [];
        for await (const chunk of list.chunks(1000)) chunks.push(chunk);
        expect(chunks.length).toBeGreaterThan(1);
        // DuckDB answers in its own vectors of 2,048 rows; Postgres fetches what is asked.
        expect(Math.max(...chunks.map((c) => c.length))).toBeLessThanOrEqual(kind === 'postgres' ? 1000 : 2048);
        expect(chunks.flat()).toEqual(
          Array.from({ length: SEEDS }, (_, i) => `https://www.network.example/in/crm-${i}`),
        );
      }
    });

    it('given a table with a JSON column, when read in chunks, then its values come as the one-shot read gives them, the JSON parsed', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await backend.open();
      await dest.query(`create table ${dest.schema}.parents (url varchar, meta json)`);
      await dest.query(
        `insert into ${dest.schema}.parents values ('https://x.example/company/a', '{"tier": 1, "tags": ["b2b"]}')`,
      );
      const chunks: unknown[][][] = [];
      for await (const chunk of dest.readQueryChunks(`select url, meta from ${dest.schema}.parents`, 10))
        chunks.push(chunk);
      const [whole] = await dest.readQuery(`select url, meta from ${dest.schema}.parents`);
      expect(chunks.flat()).toEqual([['https://x.example/company/a', { tier: 1, tags: ['b2b'] }]]);
      expect(whole).toEqual({ url: 'https://x.example/company/a', meta: { tier: 1, tags: ['b2b'] } });
    });

    it('given passes stopped after their first chunk, when the destination is used after, then every connection went back and no read stays open', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await withCrmTable();
      const list = await open(dest, `select url from ${dest.schema}.crm`);
      // More stopped passes than a pool has connections: a connection kept by one would leave the next waiting forever.
      for (let pass = 0; pass < 6; pass++) for await (const chunk of list.chunks(100)) if (chunk.length > 0) break;
      const unit = await dest.beginUnit('run_1');
      await unit.commit();
      const [row] = await dest.query<{ n: unknown }>(`select count(*) as n from ${dest.schema}.crm`);
      expect(Number(row!.n)).toBe(SEEDS);
      if (kind === 'postgres') {
        const open = await dest.query<{ n: unknown }>(
          `select count(*) as n from pg_stat_activity where state like 'idle in transaction%' and query like '%seedline_user_read%'`,
        );
        expect(Number(open[0]!.n)).toBe(0);
      }
    });

    it('given statements that write or are more than one, when opened, then each is refused before it runs and the table is unchanged', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await withCrmTable();
      for (const sql of [
        `drop table ${dest.schema}.crm`,
        `select url from ${dest.schema}.crm; drop table ${dest.schema}.crm`,
        `delete from ${dest.schema}.crm`,
        `create table ${dest.schema}.intruder (a int)`,
      ]) {
        const error = await open(dest, sql).catch((e: Error) => e);
        expect(error, sql).toBeInstanceOf(SeedSqlRefusedError);
        expect((error as Error).message, sql).toMatch(/^seeds\.profiles\.sql: /);
      }
      expect(await dest.hasTable('intruder')).toBe(false);
      const [row] = await dest.query<{ n: unknown }>(`select count(*) as n from ${dest.schema}.crm`);
      expect(Number(row!.n)).toBe(SEEDS);
    });

    it('given a query with a typo, when opened, then it fails as unreadable with the warehouse message', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await withCrmTable();
      const error = await open(dest, `select url from ${dest.schema}.no_such_table`).catch((e: Error) => e);
      expect(error).toBeInstanceOf(SeedSourceError);
      expect((error as Error).message).toMatch(/seeds\.profiles\.sql failed on the warehouse: .*no_such_table/);
    });
  });
}

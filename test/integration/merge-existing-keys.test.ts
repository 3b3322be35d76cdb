import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { KeyFilter } from '../../src/destinations/sql/key-filter.js';
import { MergeKeyFilters } from '../../src/destinations/sql/merge-key-filters.js';
import { Profile } from '../../schemas/profile.js';
import type { Destination } from '../../src/destinations/destination.js';
import type { TableDefinition } from '../../src/normalize/table-definition.js';
import type { SqlSession } from '../../src/destinations/sql/sql-session.js';
import { destinationKinds, profileRecord, useBackend } from '../helpers/destinations.js';

const profiles: TableDefinition = { name: 'profiles', schema: Profile, primaryKey: ['url'], writeMode: 'merge' };

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** A record of person n as written by `run`: one position titled after the run (two before any rewrite). */
const rewritten = (n: number, run: string) =>
  profileRecord(n, { headline: `${run} #${n}`, positions: [{ title: run, company: 'Acme' }] });

for (const kind of destinationKinds) {
  describe(`${kind} merge of keys already in the table`, () => {
    const backend = useBackend(kind);

    async function open(): Promise<Destination> {
      const destination = await backend.open();
      await destination.ensureTable(profiles);
      return destination;
    }

    async function merge(
      dest: Destination,
      run: string,
      records: Record<string, unknown>[],
      commit = true,
    ): Promise<void> {
      const unit = await dest.beginUnit(run);
      await unit.write('profiles', records);
      if (commit) await unit.commit();
      else await unit.rollback();
    }

    /** Per url, once the destination settled: [headline, number of positions, number of education rows]. */
    async function tableByUrl(dest: Destination): Promise<Map<string, [string, number, number]>> {
      await dest.settle();
      const s = dest.schema;
      const rows = await dest.query<{
        url: string;
        headline: string;
        parents: number;
        positions: number;
        education: number;
      }>(
        `select p.url, p.headline, (select count(*) from ${s}.profiles q where q.url = p.url) as parents,
           (select count(*) from ${s}.profiles__positions c where c._parent_url = p.url) as positions,
           (select count(*) from ${s}.profiles__education e where e._parent_url = p.url) as education
         from ${s}.profiles p order by p.url`,
      );
      for (const row of rows) expect(Number(row.parents), row.url).toBe(1);
      return new Map(rows.map((row) => [row.url, [row.headline, Number(row.positions), Number(row.education)]]));
    }

    it('given 40 keys loaded by another writer, when units mix new and existing keys, then every key has one row with the last values and children', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const first = await open();
      await merge(
        first,
        'run_1',
        range(1, 40).map((n) => profileRecord(n)),
      );
      const second = await open();
      // 10 existing keys and 10 new ones; then 3 existing keys through what the first unit left behind.
      await merge(
        second,
        'run_2',
        range(31, 50).map((n) => rewritten(n, 'run_2')),
      );
      await merge(
        second,
        'run_3',
        range(1, 3).map((n) => rewritten(n, 'run_3')),
      );
      // A destination that has written little into a large table probes it directly.
      const third = await open();
      await merge(third, 'run_4', [rewritten(4, 'run_4'), rewritten(60, 'run_4')]);

      const table = await tableByUrl(third);
      expect(table.size).toBe(51);
      const url = (n: number) => `https://network.example/in/person-${n}`;
      expect(table.get(url(1))).toEqual(['run_3 #1', 1, 1]);
      expect(table.get(url(4))).toEqual(['run_4 #4', 1, 1]);
      expect(table.get(url(5))).toEqual(['Engineer #5', 2, 1]);
      expect(table.get(url(31))).toEqual(['run_2 #31', 1, 1]);
      expect(table.get(url(50))).toEqual(['run_2 #50', 1, 1]);
      expect(table.get(url(60))).toEqual(['run_4 #60', 1, 1]);
    });

    // DuckDB only: Postgres merges through its key index, with no filter.
    if (kind === 'duckdb')
      it('given one destination merging units of new and existing keys, when each unit asks its key filter, then the table is never scanned again and the rows are right', async (ctx) => {
        if (!backend.available) return ctx.skip();
        // Observed, not replaced: a filter rebuilt from the table (the row count was not the one it expected) adds every key of the table again.
        const added = vi.spyOn(KeyFilter.prototype, 'add');
        const asked = vi.spyOn(MergeKeyFilters.prototype, 'candidates');
        try {
          const dest = await open();
          await merge(
            dest,
            'run_1',
            range(1, 20).map((n) => profileRecord(n)),
          );
          await merge(
            dest,
            'run_2',
            range(11, 30).map((n) => rewritten(n, 'run_2')),
          );
          await merge(
            dest,
            'run_3',
            range(25, 40).map((n) => rewritten(n, 'run_3')),
          );
          await merge(
            dest,
            'run_4',
            range(1, 5).map((n) => rewritten(n, 'run_4')),
          );
          // Only the keys each unit brings new, 20 + 10 + 10 + 0 (a key the filter may hold already is not added
          // again), none read back from the table after its first (empty) scan.
          expect(added).toHaveBeenCalledTimes(40);
          const answers = await Promise.all(asked.mock.results.map((r) => r.value as Promise<number[] | null>));
          expect(answers[1]).toEqual(range(0, 9));
          const table = await tableByUrl(dest);
          expect(table.size).toBe(40);
          expect(table.get('https://network.example/in/person-1')).toEqual(['run_4 #1', 1, 1]);
          expect(table.get('https://network.example/in/person-12')).toEqual(['run_2 #12', 1, 1]);
          expect(table.get('https://network.example/in/person-30')).toEqual(['run_3 #30', 1, 1]);
        } finally {
          added.mockRestore();
          asked.mockRestore();
        }
      });

    it('given a destination that merged keys, when another writer adds keys to the same table, then the first still replaces those keys', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const first = await open();
      await merge(
        first,
        'run_1',
        range(1, 10).map((n) => profileRecord(n)),
      );
      const other = await open();
      await merge(
        other,
        'run_2',
        range(11, 12).map((n) => rewritten(n, 'run_2')),
      );
      await merge(
        first,
        'run_3',
        range(10, 12).map((n) => rewritten(n, 'run_3')),
      );

      const table = await tableByUrl(first);
      expect(table.size).toBe(12);
      for (const n of [10, 11, 12])
        expect(table.get(`https://network.example/in/person-${n}`)).toEqual([`run_3 #${n}`, 1, 1]);
    });

    it('given a unit rolled back, when the same keys are merged again, then each key has one row', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      await merge(
        dest,
        'run_1',
        range(1, 5).map((n) => profileRecord(n)),
      );
      await merge(
        dest,
        'run_2',
        range(4, 8).map((n) => rewritten(n, 'run_2')),
        false,
      );
      await merge(
        dest,
        'run_3',
        range(4, 8).map((n) => rewritten(n, 'run_3')),
      );

      const table = await tableByUrl(dest);
      expect(table.size).toBe(8);
      expect(table.get('https://network.example/in/person-3')).toEqual(['Engineer #3', 2, 1]);
      for (const n of range(4, 8))
        expect(table.get(`https://network.example/in/person-${n}`)).toEqual([`run_3 #${n}`, 1, 1]);
    });
  });
}

describe('duckdb merge of keys already in the table, deferred to the settle', () => {
  const backend = useBackend('duckdb');
  const url = (n: number) => `https://network.example/in/person-${n}`;

  /** A destination with the profiles table whose sessions report every statement they run. */
  async function watched(statements: string[]): Promise<Destination> {
    const destination = await backend.open();
    await destination.ensureTable(profiles);
    const target = destination as unknown as { openSession(): Promise<SqlSession> };
    const open = target.openSession.bind(target);
    target.openSession = async () => {
      const session = await open();
      const [run, all] = [session.run.bind(session), session.all.bind(session)];
      session.run = (statement) => (statements.push(statement.sql), run(statement));
      session.all = (statement) => (statements.push(statement.sql), all(statement));
      return session;
    };
    return destination;
  }

  async function merge(dest: Destination, run: string, records: Record<string, unknown>[]): Promise<void> {
    const unit = await dest.beginUnit(run);
    await unit.write('profiles', records);
    await unit.commit();
  }

  /** Rows per url in the parent table, and positions per url, as they are (no settle). */
  async function counts(dest: Destination): Promise<{ parents: Map<string, number>; positions: Map<string, number> }> {
    const per = async (sql: string) =>
      new Map((await dest.query<{ k: string; n: number }>(sql)).map((row) => [row.k, Number(row.n)]));
    return {
      parents: await per(`select url as k, count(*) as n from ${dest.schema}.profiles group by url`),
      positions: await per(
        `select _parent_url as k, count(*) as n from ${dest.schema}.profiles__positions group by _parent_url`,
      ),
    };
  }

  it('given 200 keys in the table, when units merge existing keys, then no statement of a unit deletes or reads the data tables, and after the settle every key has one row with its last values', async () => {
    const statements: string[] = [];
    const first = await watched(statements);
    await merge(
      first,
      'run_1',
      range(1, 200).map((n) => profileRecord(n)),
    );
    // A writer that has merged little into the table keeps no key filter: every key of its units is pending.
    const second = await watched(statements);
    statements.length = 0;
    await merge(
      second,
      'run_2',
      range(1, 20).map((n) => rewritten(n, 'run_2')),
    );
    await merge(
      second,
      'run_2',
      range(11, 30).map((n) => rewritten(n, 'run_3')),
    );
    const inUnits = statements.filter((s) => !/^(BEGIN TRANSACTION|COMMIT)$/.test(s));
    expect(inUnits.filter((s) => /^\s*(delete|update)\b/i.test(s))).toEqual([]);
    // What names a data table: its row count (DuckDB answers from its statistics) and the pending table's creation (`limit 0`).
    const reads = inUnits.filter((s) =>
      /"profiles(__[a-z_]+)?"(?!_)/.test(s.replace(/"_seedline_pending__profiles"/g, '')),
    );
    expect(reads.length).toBeGreaterThan(0);
    for (const statement of reads)
      expect(statement).toMatch(/^select count\(\*\) as "n" from "[a-z0-9_]+"\."profiles"$|limit 0$/);

    // Before the settle, keys 1-30 hold their earlier rows beside the new ones.
    const unsettled = await counts(second);
    expect(unsettled.parents.get(url(15))).toBe(3);
    expect(unsettled.parents.get(url(31))).toBe(1);

    await second.settle();
    const settled = await counts(second);
    expect([...settled.parents.values()].every((n) => n === 1)).toBe(true);
    expect(settled.parents.size).toBe(200);
    expect(settled.positions.get(url(5))).toBe(1);
    expect(settled.positions.get(url(15))).toBe(1);
    expect(settled.positions.get(url(31))).toBe(2);
    const headlines = await second.query<{ url: string; headline: string }>(
      `select url, headline from ${second.schema}.profiles where url in ($1, $2, $3)`,
      [url(5), url(15), url(31)],
    );
    expect(Object.fromEntries(headlines.map((row) => [row.url, row.headline]))).toEqual({
      [url(5)]: 'run_2 #5',
      [url(15)]: 'run_3 #15',
      [url(31)]: 'Engineer #31',
    });
    expect(await second.hasTable('_seedline_pending__profiles')).toBe(false);
  });

  it('given merges a process left unsettled when it stopped, when the file opens again, then the replaced rows are gone', async () => {
    const first = await backend.open();
    await first.ensureTable(profiles);
    await merge(
      first,
      'run_1',
      range(1, 10).map((n) => profileRecord(n)),
    );
    await merge(
      first,
      'run_2',
      range(6, 12).map((n) => rewritten(n, 'run_2')),
    );
    expect((await counts(first)).parents.get(url(8))).toBe(2);
    await first.close();

    const reopened = await backend.open();
    const after = await counts(reopened);
    expect(after.parents.size).toBe(12);
    expect([...after.parents.values()].every((n) => n === 1)).toBe(true);
    expect(after.positions.get(url(8))).toBe(1);
    expect(after.positions.get(url(3))).toBe(2);
    expect(await reopened.hasTable('_seedline_pending__profiles')).toBe(false);
  });

  it('given more pending keys of a two-column key than one part holds, when the destination settles, then each part goes in a transaction of its own and every key pair keeps its last rows', async () => {
    const statements: string[] = [];
    const dest = await watched(statements);
    const schema = z.object({
      org: z.string(),
      n: z.number().int(),
      label: z.string(),
      parts: z.array(z.object({ p: z.string() })),
    });
    await dest.ensureTable({ name: 'pairs', schema, primaryKey: ['org', 'n'], writeMode: 'merge' });
    // 120,000 key pairs: more than the 100,000 a part of the settle holds.
    const records = (label: string, parts: number) =>
      Array.from({ length: 120_000 }, (_, i) => ({
        org: i % 2 === 0 ? 'a' : 'b',
        n: i >> 1,
        label,
        parts: Array.from({ length: parts }, (_, p) => ({ p: `${label}${p}` })),
      }));
    for (const [run, label, parts] of [
      ['run_1', 'first', 2],
      ['run_2', 'second', 1],
    ] as const) {
      const unit = await dest.beginUnit(run);
      await unit.write('pairs', records(label, parts));
      await unit.commit();
    }
    statements.length = 0;
    await dest.settle();
    expect(statements.filter((s) => /^delete from "[a-z0-9_]+"\."_seedline_pending__pairs"/.test(s))).toHaveLength(2);
    const [row] = await dest.query<{ rows: number; keys: number; second: number; parts: number; stale: number }>(
      `select (select count(*) from ${dest.schema}.pairs) as rows, (select count(distinct (org, n)) from ${dest.schema}.pairs) as keys,
         (select count(*) from ${dest.schema}.pairs where label = 'second') as second, (select count(*) from ${dest.schema}.pairs__parts) as parts,
         (select count(*) from ${dest.schema}.pairs__parts where p <> 'second0') as stale`,
    );
    expect(Object.fromEntries(Object.entries(row!).map(([k, v]) => [k, Number(v)]))).toEqual({
      rows: 120_000,
      keys: 120_000,
      second: 120_000,
      parts: 120_000,
      stale: 0,
    });
  });

  it('given a filter built by one writer, when another writer adds keys and the first settles, then the first still replaces those keys', async () => {
    const first = await backend.open();
    await first.ensureTable(profiles);
    await merge(
      first,
      'run_1',
      range(1, 10).map((n) => profileRecord(n)),
    );
    const other = await backend.another();
    await other.ensureTable(profiles);
    await merge(other, 'run_2', [rewritten(5, 'run_2'), rewritten(11, 'run_2')]);
    await first.settle();
    await merge(first, 'run_3', [rewritten(11, 'run_3')]);
    await first.settle();
    const after = await counts(first);
    expect(after.parents.get(url(11))).toBe(1);
    expect(after.parents.get(url(5))).toBe(1);
    const [row] = await first.query<{ headline: string }>(
      `select headline from ${first.schema}.profiles where url = $1`,
      [url(11)],
    );
    expect(row!.headline).toBe('run_3 #11');
  });

  it('given a destination holding the writer lock with a unit under way, when another destination of the process opens the file, then it leaves the pending keys to the writer and the unit commits', async () => {
    const writer = await backend.open();
    await writer.lock({ holder: 'test writer' });
    await writer.ensureTable(profiles);
    await merge(
      writer,
      'run_1',
      range(1, 5).map((n) => profileRecord(n)),
    );
    const unit = await writer.beginUnit('run_2');
    await unit.write(
      'profiles',
      range(1, 5).map((n) => rewritten(n, 'run_2')),
    );
    const reader = await backend.another();
    await reader.ensureSystemTables();
    await reader.settle();
    await unit.commit();
    expect((await counts(reader)).parents.get(url(3))).toBe(2);
    await writer.settle();
    expect((await counts(reader)).parents.get(url(3))).toBe(1);
  });

  it('given a view named like a child table, when the destination settles, then the view is left alone and the child rows are replaced', async () => {
    const dest = await backend.open();
    await dest.ensureTable(profiles);
    await dest.query(
      `create view ${dest.schema}.profiles__recent as select _parent_url, _loaded_at from ${dest.schema}.profiles__positions`,
    );
    await merge(
      dest,
      'run_1',
      range(1, 3).map((n) => profileRecord(n)),
    );
    await merge(
      dest,
      'run_2',
      range(1, 3).map((n) => rewritten(n, 'run_2')),
    );
    await dest.settle();
    const after = await counts(dest);
    expect(after.parents.get(url(2))).toBe(1);
    expect(after.positions.get(url(2))).toBe(1);
  });

  it('given a merge table whose name leaves no room for the pending prefix, when its keys are merged again and settled, then each key keeps its last row', async () => {
    const dest = await backend.open();
    const name = 'accounts_we_follow_closely_in_emea_and_the_americas';
    const schema = z.object({ id: z.string(), label: z.string(), parts: z.array(z.object({ p: z.string() })) });
    await dest.ensureTable({ name, schema, primaryKey: ['id'], writeMode: 'merge' });
    for (const label of ['first', 'second']) {
      const unit = await dest.beginUnit(`run_${label}`);
      await unit.write(
        name,
        range(1, 4).map((n) => ({ id: `k${n}`, label, parts: [{ p: label }] })),
      );
      await unit.commit();
    }
    await dest.settle();
    expect(await dest.query(`select id, label from ${dest.schema}.${name} order by id`)).toEqual(
      range(1, 4).map((n) => ({ id: `k${n}`, label: 'second' })),
    );
    expect(await dest.query(`select p from ${dest.schema}.${name}__parts`)).toEqual(
      range(1, 4).map(() => ({ p: 'second' })),
    );
  });

  it('given pending keys of a table dropped since, when the destination settles, then the pending list goes and nothing fails', async () => {
    const dest = await backend.open();
    await dest.ensureTable(profiles);
    await merge(
      dest,
      'run_1',
      range(1, 3).map((n) => profileRecord(n)),
    );
    await merge(
      dest,
      'run_2',
      range(1, 3).map((n) => rewritten(n, 'run_2')),
    );
    for (const table of ['profiles__positions', 'profiles__education', 'profiles'])
      await dest.query(`drop table ${dest.schema}.${table}`);
    await dest.settle();
    expect(await dest.hasTable('_seedline_pending__profiles')).toBe(false);
  });
});

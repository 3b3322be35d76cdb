import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Timestamp } from '../../schemas/common.js';
import { Profile } from '../../schemas/profile.js';
import { shapeForWrite } from '../../src/normalize/record-shaper.js';
import { type Destination } from '../../src/destinations/destination.js';
import { type TableDefinition } from '../../src/normalize/table-definition.js';
import { DuckDbDestination } from '../../src/destinations/duckdb/duckdb-destination.js';
import { destinationKinds, profileRecord, useBackend } from '../helpers/destinations.js';

const profiles: TableDefinition = { name: 'profiles', schema: Profile, primaryKey: ['url'], writeMode: 'merge' };

/** A JSON column as an object, whether the backend returns it parsed (Postgres jsonb) or as text (DuckDB). */
const jsonOf = (value: unknown) =>
  (typeof value === 'string' ? JSON.parse(value) : value) as Record<string, unknown> | null;

for (const kind of destinationKinds) {
  describe(`${kind} destination contract`, () => {
    const backend = useBackend(kind);
    const open = () => backend.open();

    it('given system tables, when state, seeds, batches and runs are saved, then they read back as saved', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      await dest.ensureSystemTables();
      const at = new Date('2024-05-01T10:00:00.000Z');
      const unit = await dest.beginUnit('run_1');
      await unit.saveState([{ stream: 'profiles', partition: '*', cursor: '{"page":2}', updatedAt: at }]);
      await unit.saveState([{ stream: 'profiles', partition: '*', cursor: '{"page":3}', updatedAt: at }]);
      await unit.saveSeeds([
        {
          stream: 'profiles',
          seedKey: 'a',
          seed: 'https://x/in/a',
          status: 'fetched',
          jobId: 'job_1',
          credits: 1,
          fetchedAt: at,
          updatedAt: at,
        },
        { stream: 'profiles', seedKey: 'b', seed: 'https://x/in/b', status: 'pending', updatedAt: at },
      ]);
      await unit.saveBatches([
        {
          idempotencyKey: 'k1',
          stream: 'profiles',
          bodyHash: 'h',
          body: '{"urls":["a"]}',
          status: 'intent',
          itemCount: 1,
          createdAt: at,
          updatedAt: at,
        },
      ]);
      await unit.saveBatches([
        {
          idempotencyKey: 'k1',
          stream: 'profiles',
          bodyHash: 'h',
          body: '{"urls":["a"]}',
          status: 'submitted',
          jobId: 'job_1',
          resultsCursor: 'c2',
          itemCount: 1,
          updatedAt: at,
        },
      ]);
      await unit.commit();

      expect(await dest.readState('profiles')).toEqual(
        new Map([['*', { stream: 'profiles', partition: '*', cursor: '{"page":3}', updatedAt: at }]]),
      );
      const seeds = await dest.readSeeds('profiles');
      expect(seeds.get('a')).toEqual({
        stream: 'profiles',
        seedKey: 'a',
        seed: 'https://x/in/a',
        status: 'fetched',
        canonicalUrl: null,
        jobId: 'job_1',
        credits: 1,
        fetchedAt: at,
        error: null,
        updatedAt: at,
      });
      expect(seeds.get('b')?.status).toBe('pending');
      const batches = await dest.readBatches('profiles');
      expect(batches).toHaveLength(1);
      expect(batches[0]).toMatchObject({
        idempotencyKey: 'k1',
        status: 'submitted',
        jobId: 'job_1',
        resultsCursor: 'c2',
        itemCount: 1,
        createdAt: at,
      });

      const started = new Date('2024-05-01T09:00:00.000Z');
      await dest.saveRun({ runId: 'run_1', startedAt: started, status: 'running' });
      await dest.saveRun({
        runId: 'run_1',
        startedAt: started,
        finishedAt: at,
        status: 'partial',
        streams: '{"profiles":{"rows":2}}',
        creditsEstimated: 3,
        creditsUsed: 2,
        stopReason: 'budget_exhausted',
        scheduleGroup: 'nightly',
      });
      await dest.saveRun({
        runId: 'run_0',
        startedAt: new Date('2024-04-01T00:00:00Z'),
        status: 'failed',
        error: 'boom',
      });
      const runs = await dest.readRuns(10);
      expect(runs.map((r) => r.runId)).toEqual(['run_1', 'run_0']);
      expect(runs[0]).toEqual({
        runId: 'run_1',
        startedAt: started,
        finishedAt: at,
        status: 'partial',
        streams: '{"profiles":{"rows":2}}',
        creditsEstimated: 3,
        creditsUsed: 2,
        error: null,
        stopReason: 'budget_exhausted',
        scheduleGroup: 'nightly',
        creditsAtRisk: 0,
        creditsSettledEarlier: 0,
        balanceChange: null,
      });
      expect(runs[1]?.stopReason).toBeNull();
      expect(runs[1]?.scheduleGroup).toBeNull();
    });

    it('given a _seedline_runs table of an older release without stop_reason, when the system tables are ensured, then the column is added and old rows read back', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      const started = new Date('2024-05-01T09:00:00.000Z');
      await dest.saveRun({ runId: 'run_old', startedAt: started, status: 'succeeded', creditsUsed: 4 });
      await dest.query(`alter table "${dest.schema}"."_seedline_runs" drop column stop_reason`);
      await dest.close();

      // The upgraded release opens it (ensureSystemTables runs once per opened destination).
      const upgraded = await open();
      await upgraded.saveRun({
        runId: 'run_new',
        startedAt: new Date('2024-05-02T09:00:00.000Z'),
        status: 'partial',
        stopReason: 'budget_exhausted',
      });

      const runs = await upgraded.readRuns(10);
      expect(runs.map((r) => [r.runId, r.stopReason, r.creditsUsed])).toEqual([
        ['run_new', 'budget_exhausted', 0],
        ['run_old', null, 4],
      ]);
    });

    it('given a merge table, when a record is written again with fewer positions, then the parent is updated and its children replaced', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      await dest.ensureTable(profiles);
      let unit = await dest.beginUnit('run_1');
      const first = await unit.write('profiles', [profileRecord(1), profileRecord(2, { unknown_field: { a: 1 } })]);
      await unit.commit();
      expect(first).toEqual({ records: 2, rows: 2 + 4 + 2, rejected: 0 });

      unit = await dest.beginUnit('run_2');
      await unit.write('profiles', [
        profileRecord(1, { headline: 'Staff engineer', positions: [{ title: 'Staff', company: 'Acme' }] }),
      ]);
      await unit.commit();
      // DuckDB deletes the replaced rows when it settles (Destination.settle), as the engine does after each stream.
      await dest.settle();

      const rows = await dest.query(
        'select url, headline, location__city, current_company__headcount, skills, _extra, _run_id, _loaded_at from seedline_placeholder order by url'.replace(
          'seedline_placeholder',
          `${dest.schema}.profiles`,
        ),
      );
      expect(rows).toHaveLength(2);
      expect(rows[0]).toMatchObject({
        url: 'https://network.example/in/person-1',
        headline: 'Staff engineer',
        location__city: 'Lyon',
        current_company__headcount: 120,
        skills: ['typescript', 'postgres'],
        _extra: null,
        _run_id: 'run_2',
      });
      expect(rows[1]).toMatchObject({ _extra: { unknown_field: { a: 1 } }, _run_id: 'run_1' });
      expect(typeof rows[0]!._loaded_at).toBe('string');
      const positions = await dest.query(
        `select _parent_url, _index, title, skills from ${dest.schema}.profiles__positions order by _parent_url, _index`,
      );
      expect(positions).toEqual([
        { _parent_url: 'https://network.example/in/person-1', _index: 0, title: 'Staff', skills: null },
        { _parent_url: 'https://network.example/in/person-2', _index: 0, title: 'Engineer', skills: ['ts', 'sql'] },
        { _parent_url: 'https://network.example/in/person-2', _index: 1, title: 'Intern', skills: null },
      ]);
      const education = await dest.query(`select count(*) as n from ${dest.schema}.profiles__education`);
      expect(education).toEqual([{ n: 2 }]);
    });

    it('given a merge table, when one batch holds the same key twice, then the last record wins', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      await dest.ensureTable(profiles);
      const unit = await dest.beginUnit('run_1');
      const outcome = await unit.write('profiles', [
        profileRecord(1, { headline: 'old' }),
        profileRecord(1, { headline: 'new' }),
      ]);
      await unit.commit();
      expect(outcome.records).toBe(1);
      expect(await dest.query(`select headline from ${dest.schema}.profiles`)).toEqual([{ headline: 'new' }]);
    });

    it('given an append table, when the same records are written twice, then both copies are kept', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      await dest.ensureTable({
        name: 'events',
        schema: z.object({ id: z.string(), n: z.number().int() }),
        primaryKey: [],
        writeMode: 'append',
      });
      for (const run of ['run_1', 'run_2']) {
        const unit = await dest.beginUnit(run);
        await unit.write('events', [
          { id: 'a', n: 1 },
          { id: 'b', n: 2 },
        ]);
        await unit.commit();
      }
      expect(await dest.query(`select id, count(*) as n from ${dest.schema}.events group by id order by id`)).toEqual([
        { id: 'a', n: 2 },
        { id: 'b', n: 2 },
      ]);
    });

    it("given a replace table, when a new run writes, then only that run's rows remain, across its units", async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      await dest.ensureTable({ ...profiles, writeMode: 'replace' });
      let unit = await dest.beginUnit('run_1');
      await unit.write('profiles', [profileRecord(1), profileRecord(2), profileRecord(3)]);
      await unit.commit();

      const reader = await open();
      unit = await dest.beginUnit('run_2');
      await unit.write('profiles', [profileRecord(4)]);
      // Before commit, another session still sees the complete previous table.
      expect(await reader.query(`select count(*) as n from ${dest.schema}.profiles`)).toEqual([{ n: 3 }]);
      await unit.commit();
      unit = await dest.beginUnit('run_2');
      await unit.write('profiles', [profileRecord(5)]);
      await unit.commit();

      expect(await dest.query(`select public_identifier, _run_id from ${dest.schema}.profiles order by 1`)).toEqual([
        { public_identifier: 'person-4', _run_id: 'run_2' },
        { public_identifier: 'person-5', _run_id: 'run_2' },
      ]);
      expect(await dest.query(`select count(*) as n from ${dest.schema}.profiles__positions`)).toEqual([{ n: 4 }]);
    });

    it('given a history table, when a record is unchanged then changed, then only the change adds a version', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      await dest.ensureTable({ ...profiles, writeMode: 'history' });
      for (const [run, headline] of [
        ['run_1', 'Engineer'],
        ['run_2', 'Engineer'],
        ['run_3', 'Manager'],
      ] as const) {
        const unit = await dest.beginUnit(run);
        await unit.write('profiles', [profileRecord(1, { headline })]);
        await unit.commit();
      }
      const versions = await dest.query<{
        headline: string;
        _valid_from: string;
        _valid_to: string | null;
        _run_id: string;
      }>(
        `select headline, _valid_from, _valid_to, _run_id, _row_hash from ${dest.schema}.profiles order by _valid_from`,
      );
      expect(versions.map((v) => [v.headline, v._run_id, v._valid_to === null])).toEqual([
        ['Engineer', 'run_1', false],
        ['Manager', 'run_3', true],
      ]);
      expect(versions[0]!._valid_to).toBe(versions[1]!._valid_from);
      const children = await dest.query(
        `select _parent_valid_from, count(*) as n from ${dest.schema}.profiles__positions group by 1 order by 1`,
      );
      expect(children).toEqual([
        { _parent_valid_from: versions[0]!._valid_from, n: 2 },
        { _parent_valid_from: versions[1]!._valid_from, n: 2 },
      ]);
    });

    it('given a history table, when the same record comes back with its JSON keys in another order, after the schema gained a field and a child list, and with a field moved from _extra to a column, then no version is added', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      const v1 = z.object({ id: z.string(), title: z.string(), tags: z.record(z.string(), z.unknown()) });
      const v2 = v1.extend({
        nickname: z.string().optional(),
        badges: z.array(z.object({ name: z.string() })).optional(),
        city: z.string().optional(),
      });
      const write = async (run: string, record: Record<string, unknown>): Promise<void> => {
        const unit = await dest.beginUnit(run);
        await unit.write('people', [record]);
        await unit.commit();
      };
      await dest.ensureTable({ name: 'people', schema: v1, primaryKey: ['id'], writeMode: 'history' });
      await write('run_1', { id: 'a', title: 'Engineer', tags: { x: 1, y: 2 }, city: 'Lyon' });
      await write('run_2', { city: 'Lyon', tags: { y: 2, x: 1 }, title: 'Engineer', id: 'a' });
      await dest.ensureTable({ name: 'people', schema: v2, primaryKey: ['id'], writeMode: 'history' });
      await write('run_3', { id: 'a', title: 'Engineer', tags: { x: 1, y: 2 }, city: 'Lyon', nickname: null });
      await write('run_4', { id: 'a', title: 'Manager', tags: { x: 1, y: 2 }, city: 'Lyon' });
      const versions = await dest.query(`select title, _run_id from ${dest.schema}.people order by _valid_from`);
      expect(versions).toEqual([
        { title: 'Engineer', _run_id: 'run_1' },
        { title: 'Manager', _run_id: 'run_4' },
      ]);
    });

    it('given history writes prepared in one order, when their units write them in the other, then versions follow the order of the writes', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      await dest.ensureTable({ ...profiles, writeMode: 'history' });
      const engineer = dest.prepareWrite('profiles', [profileRecord(1, { headline: 'Engineer' })], 'run_1');
      const manager = dest.prepareWrite('profiles', [profileRecord(1, { headline: 'Manager' })], 'run_1');
      for (const prepared of [manager, engineer]) {
        const unit = await dest.beginUnit('run_1');
        expect(await unit.write('profiles', prepared)).toMatchObject({ records: 1, rejected: 0 });
        await unit.commit();
      }
      const versions = await dest.query<{ headline: string; _valid_from: string; _valid_to: string | null }>(
        `select headline, _valid_from, _valid_to from ${dest.schema}.profiles order by _valid_from`,
      );
      expect(versions.map((v) => [v.headline, v._valid_to === null])).toEqual([
        ['Manager', false],
        ['Engineer', true],
      ]);
      expect(versions[0]!._valid_to).toBe(versions[1]!._valid_from);
      const children = await dest.query(
        `select _parent_valid_from, count(*) as n from ${dest.schema}.profiles__positions group by 1 order by 1`,
      );
      expect(children).toEqual(versions.map((v) => ({ _parent_valid_from: v._valid_from, n: 2 })));
    });

    it('given a write prepared before its table gained a field, when written, then it loads into the new column', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      const v1 = z.object({ id: z.string(), name: z.string() });
      await dest.ensureTable({ name: 'things', schema: v1, primaryKey: ['id'], writeMode: 'merge' });
      const prepared = dest.prepareWrite('things', [{ id: 'a', name: 'A', score: 3 }], 'run_1');
      await dest.ensureTable({
        name: 'things',
        schema: v1.extend({ score: z.number().int().optional() }),
        primaryKey: ['id'],
        writeMode: 'merge',
      });
      const unit = await dest.beginUnit('run_1');
      expect(await unit.write('things', prepared)).toMatchObject({ records: 1, rows: 1 });
      await unit.commit();
      expect(await dest.query(`select id, score, _extra from ${dest.schema}.things`)).toEqual([
        { id: 'a', score: 3, _extra: null },
      ]);
    });

    it('given rows shaped elsewhere (a worker thread) for the write, when adopted and written, then they load as prepared ones do; written after the table gained a field, they are shaped again from their records', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      const v1 = z.object({ id: z.string(), name: z.string() });
      await dest.ensureTable({ name: 'things', schema: v1, primaryKey: ['id'], writeMode: 'merge' });
      const shapedElsewhere = (records: Record<string, unknown>[]) => {
        const shaping = structuredClone(dest.writeShaping('things')!);
        return dest.adoptWrite(
          dest.writeShaping('things')!,
          structuredClone(shapeForWrite(shaping, records, 'run_1')),
          records.length,
          () => records,
          'run_1',
        );
      };
      const before = shapedElsewhere([{ id: 'a', name: 'A' }]);
      const evolving = shapedElsewhere([{ id: 'b', name: 'B', score: 3 }]);
      await dest.ensureTable({
        name: 'things',
        schema: v1.extend({ score: z.number().int().optional() }),
        primaryKey: ['id'],
        writeMode: 'merge',
      });
      for (const write of [before, evolving]) {
        const unit = await dest.beginUnit('run_1');
        expect(await unit.write('things', write)).toMatchObject({ records: 1, rows: 1, rejected: 0 });
        await unit.commit();
      }
      expect(await dest.query(`select id, name, score, _extra from ${dest.schema}.things order by id`)).toEqual([
        { id: 'a', name: 'A', score: null, _extra: null },
        { id: 'b', name: 'B', score: 3, _extra: null },
      ]);
      expect(dest.writeShaping('nowhere')).toBeUndefined();
    });

    it('given rows shaped elsewhere, when their table is ensured again unchanged before they load, then they load as shaped, not shaped again', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      await dest.ensureTable(profiles);
      const records = [profileRecord(1), profileRecord(2)];
      const shaping = dest.writeShaping('profiles')!;
      const shaped = structuredClone(shapeForWrite(structuredClone(shaping), records, 'run_1'));
      // Another stream (or a later run of the same writer) ensures the same table.
      await dest.ensureTable(profiles);
      let shapedAgain = 0;
      const unit = await dest.beginUnit('run_1');
      const write = dest.adoptWrite(
        shaping,
        shaped,
        records.length,
        () => {
          shapedAgain++;
          return records;
        },
        'run_1',
      );
      expect(await unit.write('profiles', write)).toMatchObject({ records: 2, rejected: 0 });
      await unit.commit();
      expect(shapedAgain).toBe(0);
      expect(await dest.query(`select count(*) as n from ${dest.schema}.profiles`)).toEqual([{ n: 2 }]);
    });

    it('given a write prepared for one table and run, when another table or run writes it, then it is refused with both named and nothing is written', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      await dest.ensureTable(profiles);
      await dest.ensureTable({
        name: 'things',
        schema: z.object({ id: z.string() }),
        primaryKey: ['id'],
        writeMode: 'merge',
      });
      const prepared = dest.prepareWrite('profiles', [profileRecord(1)], 'run_1');
      for (const [table, run] of [
        ['things', 'run_1'],
        ['profiles', 'run_2'],
      ] as const) {
        const unit = await dest.beginUnit(run);
        await expect(unit.write(table, prepared)).rejects.toThrow(
          `prepared for table profiles in run run_1 cannot be written to table ${table} in run ${run}`,
        );
        await unit.rollback();
      }
      expect(() => dest.prepareWrite('nowhere', [], 'run_1')).toThrow(/nowhere/);
      expect(await dest.query(`select count(*) as n from ${dest.schema}.profiles`)).toEqual([{ n: 0 }]);
    });

    it('given a write prepared ahead, when its unit writes it, then its rows carry the time of the write, and it cannot be written again', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      await dest.ensureTable(profiles);
      const prepared = dest.prepareWrite('profiles', [profileRecord(1)], 'run_1');
      await new Promise((resolve) => setTimeout(resolve, 20));
      const writtenAfter = Date.now();
      const unit = await dest.beginUnit('run_1');
      await unit.write('profiles', prepared);
      await unit.commit();
      const times = await dest.query<{ t: string }>(
        `select _loaded_at as t from ${dest.schema}.profiles union all select _loaded_at as t from ${dest.schema}.profiles__positions`,
      );
      expect(times.length).toBe(3);
      for (const { t } of times) expect(Date.parse(t)).toBeGreaterThanOrEqual(writtenAfter);
      const again = await dest.beginUnit('run_1');
      await expect(again.write('profiles', prepared)).rejects.toThrow('was already written');
      await again.rollback();
    });

    it('given a table, when the schema gains a field, then a nullable column is added and old rows keep null', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      const v1 = z.object({ id: z.string(), name: z.string() });
      await dest.ensureTable({ name: 'things', schema: v1, primaryKey: ['id'], writeMode: 'merge' });
      let unit = await dest.beginUnit('run_1');
      await unit.write('things', [{ id: 'a', name: 'A', score: 3 }]);
      await unit.commit();
      const v2 = v1.extend({
        score: z.number().int().optional(),
        tags: z.array(z.object({ tag: z.string() })).optional(),
      });
      await dest.ensureTable({ name: 'things', schema: v2, primaryKey: ['id'], writeMode: 'merge' });
      await dest.ensureTable({ name: 'things', schema: v2, primaryKey: ['id'], writeMode: 'merge' });
      unit = await dest.beginUnit('run_2');
      await unit.write('things', [{ id: 'b', name: 'B', score: 4, tags: [{ tag: 'x' }] }]);
      await unit.commit();
      expect(await dest.query(`select id, score, _extra from ${dest.schema}.things order by id`)).toEqual([
        { id: 'a', score: null, _extra: { score: 3 } },
        { id: 'b', score: 4, _extra: null },
      ]);
      expect(await dest.query(`select _parent_id, _index, tag from ${dest.schema}.things__tags`)).toEqual([
        { _parent_id: 'b', _index: 0, tag: 'x' },
      ]);
    });

    it('given values that do not fit their columns, when written, then every record loads with those columns NULL and the values as received in _extra, counted per field', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      await dest.ensureTable(profiles);
      // The column stays BIGINT when the schema later says string: a string no longer fits it.
      const loosened = Profile.extend({ connections_count: z.string().optional() });
      await dest.ensureTable({ ...profiles, schema: loosened });
      const unit = await dest.beginUnit('run_1');
      const outcome = await unit.write('profiles', [
        profileRecord(1),
        profileRecord(2, { connections_count: '500+' }),
        profileRecord(3, { scraped_at: 'yesterday-ish' }),
        profileRecord(4, { positions: [{ title: 'x', company_headcount: 'many' }] }),
      ]);
      await unit.reject([
        { runId: 'run_1', stream: 'profiles', table: 'profiles', record: '{"url":5}', reason: 'url: expected string' },
      ]);
      await unit.commit();
      expect(outcome).toMatchObject({ records: 4, rejected: 0 });
      expect(outcome.repairs).toEqual(
        expect.arrayContaining([
          { table: 'profiles', field: 'connections_count', change: 'kept_in_extra', count: 1 },
          { table: 'profiles', field: 'scraped_at', change: 'kept_in_extra', count: 1 },
          { table: 'profiles', field: 'positions[].company_headcount', change: 'kept_in_extra', count: 1 },
        ]),
      );
      const rows = await dest.query<{
        public_identifier: string;
        connections_count: unknown;
        scraped_at: unknown;
        _extra: unknown;
      }>(
        `select public_identifier, connections_count, scraped_at, _extra from ${dest.schema}.profiles order by public_identifier`,
      );
      expect(rows.map((r) => r.public_identifier)).toEqual(['person-1', 'person-2', 'person-3', 'person-4']);
      expect([rows[1]!.connections_count, jsonOf(rows[1]!._extra)]).toEqual([null, { connections_count: '500+' }]);
      expect([rows[2]!.scraped_at, jsonOf(rows[2]!._extra)]).toEqual([null, { scraped_at: 'yesterday-ish' }]);
      const positions = await dest.query<{ company_headcount: unknown; _extra: unknown }>(
        `select company_headcount, _extra from ${dest.schema}.profiles__positions`,
      );
      expect(positions.map((p) => [p.company_headcount, jsonOf(p._extra)])).toContainEqual([
        null,
        { company_headcount: 'many' },
      ]);
      const rejected = await dest.query<{ reason: string }>(`select reason from ${dest.schema}._seedline_rejected`);
      expect(rejected.map((r) => r.reason)).toEqual(['url: expected string']);
    });

    it('given text or JSON with an unpaired surrogate, or a timestamp that is not an ISO 8601 instant, when written, then only a bad key rejects its record; the rest load with the misfit NULL and kept in _extra', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      await dest.ensureTable({
        name: 'events',
        schema: z.object({ id: z.string(), at: Timestamp.optional() }),
        primaryKey: ['id'],
        writeMode: 'merge',
      });
      // What JSON.parse makes of an emoji cut in half: two keys that UTF-8 would both turn into "ann\uFFFD".
      const halfEmoji = JSON.parse('"truncated \\ud83d"') as string;
      const unit = await dest.beginUnit('run_1');
      const outcome = await unit.write('events', [
        { id: 'utc', at: '2024-05-01T12:00:00.250Z' },
        { id: 'offset', at: '2024-05-01T14:00:00+02:00' },
        { id: 'no-zone', at: '2024-05-01T12:00:00' },
        { id: 'ann\ud800' },
        { id: 'ann\udc00' },
        { id: 'extra', note: halfEmoji },
        { id: 'feb30', at: '2024-02-30T00:00:00Z' },
        { id: 'twelve', at: '12' },
        { id: 'slashes', at: '1/2/3' },
      ]);
      await unit.commit();
      expect(outcome).toMatchObject({ records: 7, rejected: 2 });
      const rows = await dest.query<{ id: string; at: unknown; _extra: unknown }>(
        `select id, "at", _extra from ${dest.schema}.events order by id`,
      );
      expect(rows.map((r) => [r.id, r.at, jsonOf(r._extra)])).toEqual([
        // The half emoji is kept with its escape written out: the warehouse cannot store the lone surrogate itself.
        ['extra', null, { note: 'truncated \\ud83d' }],
        ['feb30', null, { at: '2024-02-30T00:00:00Z' }],
        ['no-zone', '2024-05-01T12:00:00.000Z', null],
        ['offset', '2024-05-01T12:00:00.000Z', null],
        ['slashes', null, { at: '1/2/3' }],
        ['twelve', null, { at: '12' }],
        ['utc', '2024-05-01T12:00:00.250Z', null],
      ]);
      const reasons = await dest.query<{ reason: string }>(
        `select reason from ${dest.schema}._seedline_rejected order by reason`,
      );
      expect(reasons.map((r) => r.reason)).toEqual([
        'column id: text contains an unpaired UTF-16 surrogate (half of an emoji or other character), which UTF-8 cannot store',
        'column id: text contains an unpaired UTF-16 surrogate (half of an emoji or other character), which UTF-8 cannot store',
      ]);
    });

    it('given a field named __proto__ outside the schema and a double -0, when written in merge and history mode, then _extra keeps the field and -0 keeps its sign', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      const schema = z.object({ id: z.string(), delta: z.number() });
      for (const mode of ['merge', 'history'] as const)
        await dest.ensureTable({ name: `m_${mode}`, schema, primaryKey: ['id'], writeMode: mode });
      // What JSON.parse gives for a response body: "__proto__" is an ordinary own property.
      const record = JSON.parse('{"id":"a","delta":-0,"__proto__":{"paid":"data"}}') as Record<string, unknown>;
      const unit = await dest.beginUnit('run_1');
      for (const mode of ['merge', 'history'])
        expect(await unit.write(`m_${mode}`, [record])).toMatchObject({ records: 1, rejected: 0 });
      await unit.commit();
      for (const mode of ['merge', 'history']) {
        const [row] = await dest.query<{ delta: number; _extra: unknown }>(
          `select delta, _extra from ${dest.schema}.m_${mode}`,
        );
        expect(Object.is(row!.delta, -0)).toBe(true);
        expect(JSON.stringify(row!._extra)).toBe('{"__proto__":{"paid":"data"}}');
      }
    });

    it('given a unit with state and 300k staged rows, when a later write fails inside the bulk load, then nothing of the unit is committed', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      const slim = z.object({ id: z.string(), n: z.number().int() });
      await dest.ensureTable({ name: 'big', schema: slim, primaryKey: ['id'], writeMode: 'merge' });
      await dest.ensureTable({ name: 'small', schema: slim, primaryKey: ['id'], writeMode: 'append' });
      // Someone narrows a column behind our back: 2^40 no longer fits, and only the database can tell.
      await dest.query(
        kind === 'duckdb'
          ? `alter table ${dest.schema}.small alter column n type integer`
          : `alter table ${dest.schema}.small alter column n type integer`,
      );
      const unit = await dest.beginUnit('run_1');
      await unit.saveState([{ stream: 'big', partition: '*', cursor: 'page-2' }]);
      const rows = Array.from({ length: 300_000 }, (_, i) => ({ id: `r${i}`, n: i }));
      expect((await unit.write('big', rows)).rows).toBe(300_000);
      await expect(
        unit.write('small', [
          { id: 'ok', n: 1 },
          { id: 'too-big', n: 2 ** 40 },
        ]),
      ).rejects.toMatchObject({ code: 'SEEDLINE_DESTINATION_WRITE_FAILED' });
      await expect(unit.commit()).rejects.toMatchObject({ code: 'SEEDLINE_UNIT_CLOSED' });
      await unit.rollback();

      expect(await dest.query(`select count(*) as n from ${dest.schema}.big`)).toEqual([{ n: 0 }]);
      expect(await dest.query(`select count(*) as n from ${dest.schema}.small`)).toEqual([{ n: 0 }]);
      expect((await dest.readState('big')).size).toBe(0);

      const next = await dest.beginUnit('run_2');
      await next.write('small', [{ id: 'ok', n: 1 }]);
      await next.saveState([{ stream: 'small', partition: '*', cursor: 'done' }]);
      await next.commit();
      expect(await dest.query(`select id, n from ${dest.schema}.small`)).toEqual([{ id: 'ok', n: 1 }]);
    });

    it('given a unit, when a record throws while being read, then the unit rolls back cleanly', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      await dest.ensureTable(profiles);
      const unit = await dest.beginUnit('run_1');
      await unit.write('profiles', [profileRecord(1)]);
      const exploding = profileRecord(2);
      Object.defineProperty(exploding, 'headline', {
        enumerable: true,
        get: () => {
          throw new Error('upstream stream broke');
        },
      });
      await expect(unit.write('profiles', [profileRecord(3), exploding])).rejects.toThrow(/upstream stream broke/);
      await unit.rollback();
      expect(await dest.query(`select count(*) as n from ${dest.schema}.profiles`)).toEqual([{ n: 0 }]);
    });

    it('given a writer holding the lock, when a second writer locks, then it gets an error naming the holder, and with wait it proceeds after release', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const first = await open();
      await first.lock({ holder: 'seedline sync (run r_first)' });
      const second = await backend.another();
      await expect(second.lock({ holder: 'seedline sync (run r_second)' })).rejects.toMatchObject({
        code: 'SEEDLINE_DESTINATION_LOCKED',
        message: expect.stringContaining('seedline sync (run r_first)'),
      });
      let acquired = false;
      const waiting = second.lock({ holder: 'seedline sync (run r_second)', wait: true }).then(() => {
        acquired = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(acquired).toBe(false);
      await first.close();
      await waiting;
      expect(acquired).toBe(true);
      const third = await backend.another();
      await expect(third.lock({ holder: 'third' })).rejects.toMatchObject({
        message: expect.stringContaining('seedline sync (run r_second)'),
      });
    });

    it('given hostile values, when written and read back, then every byte survives', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      const schema = z.object({
        id: z.string(),
        text: z.string(),
        data: z.record(z.string(), z.unknown()),
        at: z.string().meta({ sqlType: 'timestamp' }),
      });
      await dest.ensureTable({ name: 'hostile', schema, primaryKey: ['id'], writeMode: 'merge' });
      const nasty = `'; drop table x; -- "quoted" \\ back\\slash \\N \t tab \n newline \r\n crlf ${'é漢字🙂\u202e'} \\.`;
      const big = 'x'.repeat(1024 * 1024 - 3) + '🙂';
      const oddKeys = {
        '': 'empty',
        'a.b': 1,
        'with "quotes"': ['\\'],
        'tab\tkey': { 'new\nline': true },
        '🙂': null,
        $1: '$2',
      };
      const records = [
        { id: 'nasty', text: nasty, data: oddKeys, at: '2024-02-29T23:59:59.999+02:00', 'extra "field"': nasty },
        { id: 'big', text: big, data: { big }, at: '2024-01-01T00:00:00Z' },
        { id: "it's", text: '', data: {}, at: '2024-01-01T00:00:00Z' },
      ];
      const unit = await dest.beginUnit('run_1');
      expect((await unit.write('hostile', records)).records).toBe(3);
      await unit.commit();
      const rows = await dest.query<{ id: string; text: string; data: unknown; at: string; _extra: unknown }>(
        `select id, text, data, "at", _extra from ${dest.schema}.hostile order by id`,
      );
      expect(rows.map((r) => r.id)).toEqual(['big', "it's", 'nasty']);
      expect(rows[0]!.text).toBe(big);
      expect(rows[0]!.data).toEqual({ big });
      expect(rows[1]!.text).toBe('');
      expect(rows[2]!.text).toBe(nasty);
      expect(rows[2]!.data).toEqual(oddKeys);
      expect(rows[2]!.at).toBe('2024-02-29T21:59:59.999Z');
      expect(rows[2]!._extra).toEqual({ 'extra "field"': nasty });
      expect(await dest.query('select $1 as v, $2 as w', [nasty, "x'); drop table y; --"])).toEqual([
        { v: nasty, w: "x'); drop table y; --" },
      ]);
    });

    it('given 5,000 rows of every column type with repeats, nulls and strings around 12 bytes, when bulk-loaded, then every value reads back exactly', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      const schema = z.object({
        id: z.number().int(),
        text: z.string().nullable(),
        count: z.number().int().nullable(),
        ratio: z.number().nullable(),
        flag: z.boolean().nullable(),
        at: z.string().meta({ sqlType: 'timestamp' }).nullable(),
      });
      await dest.ensureTable({ name: 'typed', schema, primaryKey: ['id'], writeMode: 'append' });
      const texts = [
        '',
        'a',
        'exactly12byt',
        'thirteen byte',
        'é',
        '漢字🙂',
        'ascii then é',
        `long repeated value ${'r'.repeat(40)}`,
        'short',
        null,
      ];
      const counts = [
        0,
        -1,
        1,
        2 ** 31,
        -(2 ** 31) - 1,
        Number.MAX_SAFE_INTEGER,
        Number.MIN_SAFE_INTEGER,
        4_294_967_296,
        null,
      ];
      const ats = [
        '1960-01-01T00:00:00.123Z',
        '1970-01-01T00:00:00.000Z',
        '2024-02-29T23:59:59.999Z',
        '9999-12-31T23:59:59.999Z',
        null,
      ];
      const records = Array.from({ length: 5000 }, (_, i) => ({
        id: i,
        // Runs of equal values, values repeated far apart, and a unique long string every few rows.
        text: i % 7 === 3 ? `unique long value number ${i}` : texts[Math.floor(i / 3) % texts.length]!,
        count: counts[i % counts.length]!,
        ratio: i % 11 === 0 ? null : i / 8 - 300,
        flag: i % 5 === 0 ? null : i % 2 === 0,
        at: ats[i % ats.length]!,
      }));
      const unit = await dest.beginUnit('run_1');
      expect((await unit.write('typed', records)).records).toBe(5000);
      await unit.commit();
      const rows = await dest.query<Record<string, unknown>>(
        `select id, text, count, ratio, flag, "at" from ${dest.schema}.typed order by id`,
      );
      expect(rows).toEqual(records);
      // Equal strings must also compare equal inside the engine (an inlined string's unused bytes are zero).
      const distinct = await dest.query<{ n: number }>(`select count(distinct text) as n from ${dest.schema}.typed`);
      expect(distinct[0]!.n).toBe(new Set(records.map((r) => r.text).filter((t) => t !== null)).size);
    });

    it('given 29 MB of long strings in one write mixed with short and non-ASCII ones, when bulk-loaded, then each reads back on its own row', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      await dest.ensureTable({
        name: 'wide',
        schema: z.object({ id: z.number().int(), text: z.string() }),
        primaryKey: ['id'],
        writeMode: 'append',
      });
      // DuckDB copies a chunk's long strings 16 MB at a time: 1 MB strings make several copies in one chunk.
      const textOf = (i: number): string =>
        i % 3 === 0 ? `${String(i).padStart(6, '0')}${'é漢x'.repeat(120_000)}` : i % 3 === 1 ? `s${i}` : `ünïcode ${i}`;
      const records = Array.from({ length: 120 }, (_, i) => ({ id: i, text: textOf(i) }));
      const unit = await dest.beginUnit('run_1');
      expect((await unit.write('wide', records)).records).toBe(120);
      await unit.commit();
      // Read back as a user would (`seedline query`): the sort of 29 MB outgrows the pool a load of new keys runs in.
      const rows = await dest.readQuery<{ id: number; text: string }>(
        `select id, text from ${dest.schema}.wide order by id`,
      );
      expect(rows.length).toBe(120);
      for (const row of rows) expect(row.text === textOf(row.id), `row ${row.id}`).toBe(true);
    });

    it('given a string with U+0000, when written, then its column is NULL and the value is kept in _extra with the escape written out, never truncated', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      await dest.ensureTable({
        name: 'nul',
        schema: z.object({ id: z.string(), v: z.string() }),
        primaryKey: ['id'],
        writeMode: 'append',
      });
      const unit = await dest.beginUnit('run_1');
      const outcome = await unit.write('nul', [
        { id: 'a', v: 'a\u0000b' },
        { id: 'b', v: 'fine' },
      ]);
      await unit.commit();
      expect(outcome).toMatchObject({ records: 2, rejected: 0 });
      const rows = await dest.query<{ id: string; v: unknown; _extra: unknown }>(
        `select id, v, _extra from ${dest.schema}.nul order by id`,
      );
      expect(rows.map((r) => [r.id, r.v, jsonOf(r._extra)])).toEqual([
        ['a', null, { v: 'a\\u0000b' }],
        ['b', 'fine', null],
      ]);
    });

    it('given hostile names, when used as table, column or schema names, then they are refused with SEEDLINE_INVALID_IDENTIFIER', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      const ok = z.object({ id: z.string() });
      for (const name of ['Profiles', 'x; drop table y', 'a"b', 'a'.repeat(64), '1abc', 'profiles-2', 'é']) {
        await expect(
          dest.ensureTable({ name, schema: ok, primaryKey: ['id'], writeMode: 'merge' }),
        ).rejects.toMatchObject({ code: 'SEEDLINE_INVALID_IDENTIFIER' });
      }
      await expect(
        dest.ensureTable({
          name: 'cols',
          schema: z.object({ id: z.string(), 'x"; drop table y; --': z.string() }),
          primaryKey: ['id'],
          writeMode: 'merge',
        }),
      ).rejects.toMatchObject({ code: 'SEEDLINE_INVALID_IDENTIFIER' });
      const { createDestination } = await import('../../src/destinations/create-destination.js');
      await expect(createDestination({ type: 'duckdb', path: ':memory:', schema: 'bad"schema' })).rejects.toMatchObject(
        { code: 'SEEDLINE_INVALID_IDENTIFIER' },
      );
      const unit = await dest.beginUnit('run_1');
      await expect(unit.write('not_ensured', [{ id: 'a' }])).rejects.toMatchObject({ code: 'SEEDLINE_UNKNOWN_TABLE' });
      await unit.rollback();
    });

    it('given a merge table with a two-column key, when records are written again, then only rows of the same key pair are replaced', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      const schema = z.object({
        org: z.string(),
        n: z.number().int(),
        label: z.string(),
        parts: z.array(z.object({ p: z.string() })).optional(),
      });
      await dest.ensureTable({ name: 'pairs', schema, primaryKey: ['org', 'n'], writeMode: 'merge' });
      let unit = await dest.beginUnit('run_1');
      await unit.write('pairs', [
        { org: 'a', n: 1, label: 'a1', parts: [{ p: 'x' }, { p: 'y' }] },
        { org: 'a', n: 2, label: 'a2', parts: [{ p: 'z' }] },
        { org: 'b', n: 1, label: 'b1', parts: [{ p: 'w' }] },
      ]);
      await unit.commit();
      unit = await dest.beginUnit('run_2');
      await unit.write('pairs', [{ org: 'a', n: 1, label: 'a1 again', parts: [{ p: 'v' }] }]);
      await unit.commit();
      await dest.settle();
      expect(await dest.query(`select org, n, label from ${dest.schema}.pairs order by org, n`)).toEqual([
        { org: 'a', n: 1, label: 'a1 again' },
        { org: 'a', n: 2, label: 'a2' },
        { org: 'b', n: 1, label: 'b1' },
      ]);
      expect(
        await dest.query(
          `select _parent_org, _parent_n, p from ${dest.schema}.pairs__parts order by _parent_org, _parent_n, _index`,
        ),
      ).toEqual([
        { _parent_org: 'a', _parent_n: 1, p: 'v' },
        { _parent_org: 'a', _parent_n: 2, p: 'z' },
        { _parent_org: 'b', _parent_n: 1, p: 'w' },
      ]);
    });

    it('given any backend, when querying, then values come back as plain JS of the same shapes', async (ctx) => {
      if (!backend.available) return ctx.skip();
      const dest = await open();
      const rows = await dest.query(
        `select cast(42 as bigint) as small, cast(9007199254740993 as bigint) as big, cast('2024-05-01T12:00:00.123Z' as timestamptz) as at,
                cast(1.5 as double precision) as d, true as b, cast(null as text) as nothing, cast($1 as text) as param`,
        ['p'],
      );
      expect(rows).toEqual([
        {
          small: 42,
          big: '9007199254740993',
          at: '2024-05-01T12:00:00.123Z',
          d: 1.5,
          b: true,
          nothing: null,
          param: 'p',
        },
      ]);
    });
  });
}

describe('duckdb destination file', () => {
  it('given a path in folders that do not exist, when the destination locks, then it fails and creates no folder (a mistyped path never starts an empty warehouse)', async () => {
    const root = mkdtempSync(join(tmpdir(), 'seedline-mkdir-'));
    const path = join(root, 'data', 'nested', 'warehouse.duckdb');
    const dest = new DuckDbDestination({ path });
    try {
      await expect(dest.lock({ holder: 'test' })).rejects.toThrow();
      expect(existsSync(join(root, 'data'))).toBe(false);
    } finally {
      await dest.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});

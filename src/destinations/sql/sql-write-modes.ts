import { sql } from 'kysely';
import type { RawBuilder } from 'kysely';
import type { CellValue, ShapedBatch, ShapedRows } from '../../normalize/record-shaper.js';
import type { KeyColumnSource } from './merge-key-filters.js';
import { MergeKeyFilters } from './merge-key-filters.js';
import { PendingReplacements } from './pending-replacements.js';
import type { BulkTarget, SqlContext, SqlSession } from './sql-session.js';
import type { PhysicalColumn, TableLayout, TableShape } from '../../normalize/table-layout.js';
import { childKeyColumns } from '../../normalize/table-layout.js';

/**
 * The write modes of a SQL destination: how a shaped batch goes into its data tables inside a
 * unit's transaction (append, replace, merge with a bound key array, a staged key table or a
 * pending list and the key filters, history through staging tables), the bulk loads they are made
 * of, and the settle of the pending lists.
 */
export class SqlWriteModes {
  private stagingCounter = 0;
  private readonly keyFilters = new MergeKeyFilters();
  private readonly pending: PendingReplacements;

  /**
   * @param physical Column names of each data table in their physical order, kept up to date by
   *   the destination as it ensures tables.
   */
  constructor(
    private readonly context: SqlContext,
    private readonly physical: ReadonlyMap<string, readonly string[]>,
  ) {
    this.pending = new PendingReplacements(context);
  }

  /** Whether merges of a deferred-merge backend left rows to delete (see `PendingReplacements`). */
  async unsettled(session: SqlSession): Promise<boolean> {
    return this.context.traits.deferredMerge && (await this.pending.any(session));
  }

  /**
   * Deletes the rows that merges of a deferred-merge backend replaced (see `PendingReplacements`),
   * on a session outside any unit; the key filters keep what they know of the tables.
   */
  async settle(session: SqlSession): Promise<void> {
    if (!this.context.traits.deferredMerge) return;
    await session.workOnStoredRows?.();
    for (const { table, rowsBefore, rowsAfter } of await this.pending.settle(session))
      this.keyFilters.settled(table, rowsBefore, rowsAfter);
  }

  /** See `MergeKeyFilters.expect`. */
  expectKeys(table: string, keys: number): void {
    this.keyFilters.expect(table, keys);
  }

  /** Where rows of a data table are bulk-loaded: the table and its columns in physical order. */
  bulkTarget(table: string): BulkTarget {
    return { schema: this.context.schema, table, columns: this.physical.get(table) ?? [] };
  }

  /** Bulk-loads rows straight into their table; resolves to the rows loaded. */
  private async load(session: SqlSession, rows: ShapedRows): Promise<number> {
    if (rows.length === 0) return 0;
    const target = this.bulkTarget(rows.shape.name);
    await session.bulkInsert(
      target.columns.length > 0 ? target : { ...target, columns: rows.shape.columns.map((c) => c.name) },
      rows,
    );
    return rows.length;
  }

  /**
   * Runs steps in order and resolves to the sum of their results. A pipelined backend gets them
   * all at once (its connection keeps the order), so the server works while the next rows are
   * encoded; the first failure, in step order, is the one thrown.
   */
  private async steps(steps: readonly (() => Promise<number>)[]): Promise<number> {
    let total = 0;
    if (!this.context.traits.pipelined) {
      for (const step of steps) total += await step();
      return total;
    }
    const settled = await Promise.allSettled(steps.map((step) => step()));
    for (const result of settled) {
      if (result.status === 'rejected') throw result.reason;
      total += result.value;
    }
    return total;
  }

  /** Bulk-loads rows into a temporary table shaped like their table; resolves to its name. */
  private async stage(session: SqlSession, rows: ShapedRows, name = this.stagingName()): Promise<string> {
    const columns = rows.shape.columns.map((c) => c.name);
    const create = sql`create temporary table ${sql.table(name)} as select ${sql.join(columns.map((c) => sql.ref(c)))} from ${sql.table(this.context.qualified(rows.shape.name))} limit 0`;
    await this.steps([
      () => session.run(create.compile(this.context.db)),
      async () => {
        if (rows.length > 0) await session.bulkInsert({ schema: null, table: name, columns }, rows);
        return 0;
      },
    ]);
    return name;
  }

  private stagingName(): string {
    return `_seedline_stage_${++this.stagingCounter}`;
  }

  /**
   * Writes shaped rows according to the write mode; resolves to the rows inserted. Merge, append
   * and replace load straight into the tables (merge first deletes the batch's keys, children by
   * their parent key: one statement for all tables with a bound key array, or one per table from
   * a staged key table; either way skipped when no key is in the parent table; a deferred-merge
   * backend lists the keys instead, for the settle); history goes through staging tables.
   */
  async apply(session: SqlSession, layout: TableLayout, batch: ShapedBatch, runId: string): Promise<number> {
    const run = (query: RawBuilder<unknown>): Promise<number> => session.run(query.compile(this.context.db));
    const target = (name: string): RawBuilder<unknown> => sql`${sql.table(this.context.qualified(name))}`;
    const loads = [batch.parent, ...batch.children].map((rows) => () => this.load(session, rows));
    const statement = (query: RawBuilder<unknown>) => async (): Promise<number> => {
      await run(query);
      return 0;
    };
    switch (layout.writeMode) {
      case 'append':
        return this.steps(loads);
      case 'replace':
        await session.workOnStoredRows?.();
        // Rows of earlier runs go, rows of this run (earlier pages) stay: readers see the old table until commit.
        return this.steps([
          ...[batch.parent.shape, ...batch.children.map((c) => c.shape)].map((shape) =>
            statement(sql`delete from ${target(shape.name)} where ${sql.ref('_run_id')} is distinct from ${runId}`),
          ),
          ...loads,
        ]);
      case 'merge': {
        const keyColumns = layout.primaryKey.map((pk) => batch.parent.shape.columns.find((c) => c.name === pk)!);
        const childKeys = childKeyColumns(layout).map((c) => c.name);
        if (this.context.traits.arrayKeys && keyColumns.length === 1) {
          const type = keyColumns[0]!.type;
          const values = batch.keys[0]!.map((value) =>
            type === 'timestamp'
              ? new Date(value as number).toISOString()
              : typeof value === 'bigint'
                ? String(value)
                : value,
          );
          const arrayType = sql.raw(`${this.context.traits.sqlType(type)}[]`);
          // The cast makes it `= any(array)` probing the column's index, not `= any(subquery)`.
          const matches = (column: string): RawBuilder<unknown> =>
            sql`${sql.ref(`t.${column}`)} = any((select ${sql.ref('k')} from ${sql.table('_seedline_keys')})::${arrayType})`;
          // One probe of the parent's key index decides whether anything is deleted: the other deletes are gated on it
          // (a one-time filter), so keys that are all new (a first load, the common case) cost one index probe per key, not
          // one per key and table. Child rows are found through their parent, as in the staged path below.
          const existing = sql`exists (select 1 from ${sql.table('_seedline_existing')})`;
          const childDeletes = batch.children.map(
            (child, i) =>
              sql`${sql.table(`_seedline_deleted_${i}`)} as (delete from ${target(child.shape.name)} as t where ${existing} and ${matches(childKeys[0]!)})`,
          );
          return this.steps([
            statement(
              sql`with ${sql.table('_seedline_keys')} as (select ${values}::${arrayType} as ${sql.ref('k')}), ${sql.table('_seedline_existing')} as (select 1 from ${target(batch.parent.shape.name)} as t where ${matches(layout.primaryKey[0]!)} limit 1)${sql.join(
                childDeletes.map((d) => sql`, ${d}`),
                sql``,
              )} delete from ${target(batch.parent.shape.name)} as t where ${existing} and ${matches(layout.primaryKey[0]!)}`,
            ),
            ...loads,
          ]);
        }
        return this.mergeStaged(session, layout, batch, loads);
      }
      case 'history':
        await session.workOnStoredRows?.();
        return this.applyHistory(session, layout, batch);
    }
  }

  /**
   * Merge without a bound key array. The keys that may be in the parent table (all of them, or
   * those its key filter cannot rule out: new keys, the common case, cost nothing that grows with
   * the table) either go to the pending list settled later (a deferred-merge backend, DuckDB: no
   * scan in the unit), or are staged and probed, and each table loses the rows of the ones found,
   * children through their parent's key. Child rows whose parent row was deleted by hand are not
   * looked for.
   */
  private async mergeStaged(
    session: SqlSession,
    layout: TableLayout,
    batch: ShapedBatch,
    loads: readonly (() => Promise<number>)[],
  ): Promise<number> {
    const parent = batch.parent.shape.name;
    const target = (name: string): RawBuilder<unknown> => sql`${sql.table(this.context.qualified(name))}`;
    const keyColumns = layout.primaryKey.map((pk) => batch.parent.shape.columns.find((c) => c.name === pk)!);
    const filtered =
      this.context.traits.keyFilter &&
      keyColumns.every((c) => c.type === 'text' || c.type === 'bigint' || c.type === 'double');
    const source = filtered ? this.keyColumnSource(session, parent, layout.primaryKey) : null;
    const candidates = source ? await this.keyFilters.candidates(parent, batch.keys, batch.records, source) : null;
    const keys = candidates === null ? batch.keys : batch.keys.map((column) => candidates.map((i) => column[i]!));
    const count = candidates === null ? batch.records : candidates.length;
    let total = 0;
    if (count > 0) await session.workOnStoredRows?.();
    if (count > 0 && this.context.traits.deferredMerge) await this.pending.record(session, layout, batch, keys, count);
    else if (count > 0) total += await this.deleteKeys(session, layout, batch, keyColumns, keys, count);
    total += await this.steps(loads);
    if (source) {
      const [row] = await session.all(
        sql`select count(*) as ${sql.ref('n')} from ${target(parent)}`.compile(this.context.db),
      );
      this.keyFilters.written(parent, batch.keys, batch.records, Number(row!.n));
    }
    return total;
  }

  /** Stages `keys`, and when one of them is in the parent table deletes their rows from every table of the layout. */
  private async deleteKeys(
    session: SqlSession,
    layout: TableLayout,
    batch: ShapedBatch,
    keyColumns: PhysicalColumn[],
    keys: CellValue[][],
    count: number,
  ): Promise<number> {
    const run = (query: RawBuilder<unknown>): Promise<number> => session.run(query.compile(this.context.db));
    const target = (name: string): RawBuilder<unknown> => sql`${sql.table(this.context.qualified(name))}`;
    const childKeys = childKeyColumns(layout).map((c) => c.name);
    const staged = this.stagingName();
    await this.stage(
      session,
      {
        shape: { name: batch.parent.shape.name, columns: keyColumns },
        columns: keys,
        length: count,
        constant: keyColumns.map(() => false),
        stamped: [],
      },
      staged,
    );
    const match = (columns: readonly string[]): RawBuilder<unknown> =>
      columns.length === 1
        ? this.context.traits.inList(
            sql.ref(`t.${columns[0]!}`),
            sql`select ${sql.ref(`k.${layout.primaryKey[0]!}`)} from ${sql.table(staged)} as k`,
          )
        : sql`exists (select 1 from ${sql.table(staged)} as k where ${sql.join(
            columns.map((column, i) => sql`${sql.ref(`k.${layout.primaryKey[i]!}`)} = ${sql.ref(`t.${column}`)}`),
            sql` and `,
          )})`;
    const existing = await session.all(
      sql`select 1 as ${sql.ref('found')} from ${target(batch.parent.shape.name)} as t where ${match(layout.primaryKey)} limit 1`.compile(
        this.context.db,
      ),
    );
    if (existing.length > 0) {
      for (const child of batch.children)
        await run(sql`delete from ${target(child.shape.name)} as t where ${match(childKeys)}`);
      await run(sql`delete from ${target(batch.parent.shape.name)} as t where ${match(layout.primaryKey)}`);
    }
    await run(sql`drop table ${sql.table(staged)}`);
    return 0;
  }

  /** The parent table's row count and key column, read on the unit's session (its own writes included). */
  private keyColumnSource(session: SqlSession, table: string, columns: readonly string[]): KeyColumnSource {
    const target = sql`${sql.table(this.context.qualified(table))}`;
    return {
      count: async () => {
        const [row] = await session.all(
          sql`select count(*) as ${sql.ref('n')} from ${target}`.compile(this.context.db),
        );
        return Number(row!.n);
      },
      scan: (each) =>
        session.scan!(
          sql`select ${sql.join(columns.map((c) => sql.ref(c)))} from ${target}`.compile(this.context.db),
          each,
        ),
    };
  }

  private async applyHistory(session: SqlSession, layout: TableLayout, batch: ShapedBatch): Promise<number> {
    const run = (query: RawBuilder<unknown>): Promise<number> => session.run(query.compile(this.context.db));
    const target = (name: string): RawBuilder<unknown> => sql`${sql.table(this.context.qualified(name))}`;
    const columnList = (shape: TableShape, alias: string): RawBuilder<unknown> =>
      sql.join(shape.columns.map((c) => sql.ref(`${alias}.${c.name}`)));
    const keyMatch = (
      left: string,
      leftColumns: readonly string[],
      right: string,
      rightColumns: readonly string[],
    ): RawBuilder<unknown> =>
      sql.join(
        leftColumns.map(
          (column, i) => sql`${sql.ref(`${left}.${column}`)} = ${sql.ref(`${right}.${rightColumns[i]!}`)}`,
        ),
        sql` and `,
      );
    const parentKeys = layout.primaryKey;
    const childKeys = childKeyColumns(layout)
      .map((c) => c.name)
      .slice(0, parentKeys.length);
    const parentStage = await this.stage(session, batch.parent);
    const table = target(batch.parent.shape.name);
    const stage = sql.table(parentStage);
    const plain = (shape: TableShape): RawBuilder<unknown> => sql.join(shape.columns.map((c) => sql.ref(c.name)));
    await run(
      sql`update ${table} as t set ${sql.ref('_valid_to')} = s.${sql.ref('_valid_from')} from ${stage} as s where ${keyMatch('s', parentKeys, 't', parentKeys)} and t.${sql.ref('_valid_to')} is null and t.${sql.ref('_row_hash')} <> s.${sql.ref('_row_hash')}`,
    );
    let inserted = await run(
      sql`insert into ${table} (${plain(batch.parent.shape)}) select ${columnList(batch.parent.shape, 's')} from ${stage} as s where not exists (select 1 from ${table} as t where ${keyMatch('t', parentKeys, 's', parentKeys)} and t.${sql.ref('_valid_to')} is null)`,
    );
    const stages = [parentStage];
    for (const child of batch.children) {
      if (child.length === 0) continue;
      const childStage = await this.stage(session, child);
      stages.push(childStage);
      inserted += await run(
        sql`insert into ${target(child.shape.name)} (${plain(child.shape)}) select ${columnList(child.shape, 'c')} from ${sql.table(childStage)} as c where exists (select 1 from ${table} as t where ${keyMatch('t', parentKeys, 'c', childKeys)} and t.${sql.ref('_valid_from')} = c.${sql.ref('_parent_valid_from')})`,
      );
    }
    for (const name of stages) await run(sql`drop table ${sql.table(name)}`);
    return inserted;
  }
}

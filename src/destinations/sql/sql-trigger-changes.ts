import { sql } from 'kysely';
import type { RawBuilder } from 'kysely';
import { TRIGGER_COLUMNS, type SeedRowChange } from '../destination.js';
import type { LogicalType } from '../../normalize/table-layout.js';
import type { SqlContext, SqlSession } from './sql-session.js';
import { tableColumns } from './sql-table-setup.js';

/** A data table as its catalog describes it: column → logical type, in physical order. */
type Columns = Map<string, LogicalType>;

/**
 * Writes Triggers' changes into data tables (see `Loader.applyTriggerChanges`), reading what it
 * needs of the tables from the catalog: the write mode (history has `_valid_to`), the child tables
 * (`<table>__*` with `_parent_valid_from`) and the column types the values are bound as.
 */
export class SqlTriggerChanges {
  constructor(private readonly context: SqlContext) {}

  /**
   * Adds the Trigger columns `table` lacks, on `session` outside any transaction; resolves to the
   * names added (the caller appends them to what it knows of the table's physical order).
   */
  async ensureColumns(session: SqlSession, table: string): Promise<string[]> {
    const existing = await this.columnsOf(session, table);
    const added: string[] = [];
    for (const column of TRIGGER_COLUMNS) {
      if (existing.has(column.name)) continue;
      await session.run(
        this.context.db.schema
          .alterTable(this.context.qualified(table))
          .addColumn(column.name, sql.raw(this.context.traits.sqlType(column.type)))
          .compile(),
      );
      added.push(column.name);
    }
    return added;
  }

  /** Applies `changes` in order inside the session's open transaction; resolves to the rows changed. */
  async apply(session: SqlSession, table: string, runId: string, changes: readonly SeedRowChange[]): Promise<number> {
    const columns = await this.columnsOf(session, table);
    for (const change of changes)
      for (const column of Object.keys(change.values))
        if (!columns.has(column))
          throw new Error(
            `Table ${table} has no column ${column}: the stream's refresh_on_change.apply names it (fix the manifest's apply map)`,
          );
    const history = columns.has('_valid_to');
    const children = history ? await this.childrenOf(session, table) : [];
    const loadedAt = new Date();
    let changed = 0;
    for (const [i, change] of changes.entries()) {
      // Versions a Trigger starts end before this moment (the next load's versions start after it), in order.
      const stamp = { runId, loadedAt, latest: new Date(loadedAt.getTime() - (changes.length - i)) };
      if (!history) {
        changed += await this.run(session, this.mergeUpdate(table, columns, change, stamp));
        continue;
      }
      for (const child of children) await this.run(session, this.childCopy(table, child, change, stamp));
      const added = await this.run(session, this.versionInsert(table, columns, change, stamp));
      await this.run(session, this.versionClose(table, change, stamp));
      changed += added;
    }
    return changed;
  }

  /** Merge: the row takes the Trigger's values unless a later Trigger already changed it. */
  private mergeUpdate(table: string, columns: Columns, change: SeedRowChange, stamp: Stamp): RawBuilder<unknown> {
    const sets = Object.entries(change.values).map(
      ([column, value]) => sql`${sql.ref(column)} = ${this.bound(value, columns.get(column)!)}`,
    );
    sets.push(...this.markers(change, stamp).map(([column, value]) => sql`${sql.ref(column)} = ${value}`));
    return sql`update ${this.target(table)} set ${sql.join(sets)} where ${sql.ref('seed')} = ${change.seed} and (${sql.ref('_trigger_checked_at')} is null or ${sql.ref('_trigger_checked_at')} < ${change.checkedAt})`;
  }

  /** History: a copy of the open version, from the Trigger's check on, with its values. */
  private versionInsert(table: string, columns: Columns, change: SeedRowChange, stamp: Stamp): RawBuilder<unknown> {
    const overrides = new Map<string, RawBuilder<unknown>>([
      ...Object.entries(change.values).map(
        ([column, value]) => [column, this.bound(value, columns.get(column)!)] as [string, RawBuilder<unknown>],
      ),
      ...this.markers(change, stamp),
      ['_valid_from', this.versionStart('t', change, stamp)],
      ['_valid_to', sql`null`],
      // Not a hash of a record: the next enrichment always adds a version, the whole profile as then fetched.
      ['_row_hash', sql`${`trigger:${change.triggerId}`}`],
    ]);
    const names = [...columns.keys()];
    const values = names.map((name) => overrides.get(name) ?? sql.ref(`t.${name}`));
    return sql`insert into ${this.target(table)} (${sql.join(names.map((n) => sql.ref(n)))}) select ${sql.join(values)} from ${this.target(table)} as t where ${this.openBefore('t', change, stamp)}`;
  }

  /** History: the version open before the Trigger ends where the Trigger's version starts. */
  private versionClose(table: string, change: SeedRowChange, stamp: Stamp): RawBuilder<unknown> {
    return sql`update ${this.target(table)} as t set ${sql.ref('_valid_to')} = ${this.versionStart('t', change, stamp)} where ${this.openBefore('t', change, stamp)}`;
  }

  /** History: the open version's child rows, copied to the version the Trigger starts. */
  private childCopy(table: string, child: Child, change: SeedRowChange, stamp: Stamp): RawBuilder<unknown> {
    const overrides = new Map<string, RawBuilder<unknown>>([
      ['_parent_valid_from', this.versionStart('t', change, stamp)],
      ['_run_id', sql`${stamp.runId}`],
      ['_loaded_at', sql`${stamp.loadedAt}`],
    ]);
    const values = child.columns.map((name) => overrides.get(name) ?? sql.ref(`c.${name}`));
    const joins = child.parentKeys.map((key) => sql`${sql.ref(`t.${key}`)} = ${sql.ref(`c._parent_${key}`)}`);
    return sql`insert into ${this.target(child.name)} (${sql.join(child.columns.map((n) => sql.ref(n)))}) select ${sql.join(values)} from ${this.target(child.name)} as c join ${this.target(table)} as t on ${sql.join(joins, sql` and `)} and ${sql.ref('t._valid_from')} = ${sql.ref('c._parent_valid_from')} where ${this.openBefore('t', change, stamp)}`;
  }

  /**
   * The seed's open version, when the Trigger is newer than what it holds: it did not come from
   * this Trigger or a later one, and began before `stamp.latest`.
   */
  private openBefore(alias: string, change: SeedRowChange, stamp: Stamp): RawBuilder<unknown> {
    const ref = (column: string) => sql.ref(`${alias}.${column}`);
    return sql`${ref('seed')} = ${change.seed} and ${ref('_valid_to')} is null and ${ref('_valid_from')} < ${stamp.latest} and (${ref('_trigger_checked_at')} is null or ${ref('_trigger_checked_at')} < ${change.checkedAt})`;
  }

  /**
   * Where the Trigger's version starts: at its check, unless the open version began later (a check
   * between a fetch and its load) or the check is ahead of this machine's clock; always after the
   * open version's start and before `stamp.latest`, so versions never overlap.
   */
  private versionStart(alias: string, change: SeedRowChange, stamp: Stamp): RawBuilder<unknown> {
    return sql`least(greatest(${change.checkedAt}, ${sql.ref(`${alias}._valid_from`)} + interval '1 millisecond'), ${stamp.latest})`;
  }

  private markers(change: SeedRowChange, stamp: Stamp): [string, RawBuilder<unknown>][] {
    return [
      ['_trigger_id', sql`${change.triggerId}`],
      ['_trigger_checked_at', sql`${change.checkedAt}`],
      ['_run_id', sql`${stamp.runId}`],
      ['_loaded_at', sql`${stamp.loadedAt}`],
    ];
  }

  /** A Trigger's value bound for a column of `type`; one that does not fit it is bound as NULL. */
  private bound(value: unknown, type: LogicalType): RawBuilder<unknown> {
    const fitting = fit(value, type);
    if (type === 'json' && fitting !== null)
      return sql`cast(${fitting} as ${sql.raw(this.context.traits.sqlType('json'))})`;
    return sql`${fitting}`;
  }

  private target(table: string): RawBuilder<unknown> {
    return sql`${sql.table(this.context.qualified(table))}`;
  }

  private run(session: SqlSession, query: RawBuilder<unknown>): Promise<number> {
    return session.run(query.compile(this.context.db));
  }

  private async columnsOf(session: SqlSession, table: string): Promise<Columns> {
    const columns = await tableColumns(this.context, session, table);
    return new Map([...columns].map(([name, type]) => [name, this.context.traits.logicalType(type)]));
  }

  /** The child tables of a history table: named after it, linked by `_parent_<key>` and `_parent_valid_from`. */
  private async childrenOf(session: SqlSession, table: string): Promise<Child[]> {
    const linked = await session.all(
      this.context.db
        .selectFrom('information_schema.columns')
        .select('table_name')
        .where('table_schema', '=', this.context.schema)
        .where('column_name', '=', '_parent_valid_from')
        .compile(),
    );
    const children: Child[] = [];
    for (const name of linked.map((row) => String(row.table_name)).filter((n) => n.startsWith(`${table}__`))) {
      const columns = [...(await this.columnsOf(session, name)).keys()];
      const parentKeys = columns
        .filter((c) => c.startsWith('_parent_') && c !== '_parent_valid_from')
        .map((c) => c.slice('_parent_'.length));
      children.push({ name, columns, parentKeys });
    }
    return children;
  }
}

interface Stamp {
  runId: string;
  loadedAt: Date;
  /** The latest a version from this change may start. */
  latest: Date;
}

interface Child {
  name: string;
  columns: string[];
  /** The parent's key columns, each linked by `_parent_<key>`. */
  parentKeys: string[];
}

/** `value` as a column of `type` takes it, or null when it does not fit. */
function fit(value: unknown, type: LogicalType): unknown {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'json':
      return JSON.stringify(value);
    case 'text':
      return typeof value === 'string' ? value : JSON.stringify(value);
    case 'bigint':
      return typeof value === 'number' && Number.isInteger(value) ? value : null;
    case 'double':
      return typeof value === 'number' ? value : null;
    case 'boolean':
      return typeof value === 'boolean' ? value : null;
    case 'timestamp': {
      const at = typeof value === 'string' ? new Date(value) : null;
      return at && !Number.isNaN(at.getTime()) ? at : null;
    }
    default:
      return null;
  }
}

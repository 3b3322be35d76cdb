import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { RawBuilder } from 'kysely';
import { DestinationSettleError } from '../destination-error.js';
import type { CellValue, ShapedBatch, ShapedRows } from '../../normalize/record-shaper.js';
import type { SqlContext, SqlSession } from './sql-session.js';
import type { PhysicalColumn, TableLayout } from '../../normalize/table-layout.js';

/** Prefix of the tables that list, per merge table, the keys whose earlier rows are to go. */
export const PENDING_PREFIX = '_seedline_pending__';

/** Longest identifier a destination takes (Postgres' limit, kept on every backend). */
const MAX_IDENTIFIER = 63;

/**
 * The pending table of `table`: `_seedline_pending__<table>`, or, when that is too long a name,
 * the table's name cut short and a hash of the whole name.
 */
export function pendingTableOf(table: string): string {
  const name = `${PENDING_PREFIX}${table}`;
  if (name.length <= MAX_IDENTIFIER) return name;
  const hash = createHash('sha256').update(table).digest('hex').slice(0, 8);
  return `${name.slice(0, MAX_IDENTIFIER - hash.length - 1)}_${hash}`;
}

/** The temporary table a settle groups a part of a pending table into: each key and the load time of its latest write. */
const LATEST = '_seedline_settle_latest';

/**
 * Pending keys settled in one transaction, at most: DuckDB holds a transaction's deletes in
 * memory it cannot evict, one mark per row in every 2,048-row vector a delete touches, until a
 * checkpoint writes them. A part is therefore the keys listed first (units list them in load
 * order, so their earlier rows lie close together in the table), and the settle checkpoints
 * between parts: a million refreshed profiles settled within 64 MB that way, against out of
 * memory at 128 MB with parts drawn by a hash of the key, each touching every vector
 * (bench/settle-memory.ts). Each part scans the table again, so a refresh of a whole table costs
 * one scan per 100,000 keys, not one per unit of 5,000.
 */
const KEYS_PER_PART = 100_000;

/** A pending table, the table whose keys it lists, its key columns and the child tables. */
interface PendingTable {
  pending: string;
  table: string;
  keys: readonly string[];
  children: readonly string[];
}

/** A table that had pending keys, and its row counts before and after the settle. */
export interface SettledTable {
  table: string;
  rowsBefore: number;
  rowsAfter: number;
}

/**
 * The merge of a backend without key indexes (DuckDB), where finding a key's rows means scanning
 * the table: a unit does not delete the earlier rows of the keys it writes. It loads its rows and,
 * in the same transaction, lists those keys with the unit's load time in
 * `_seedline_pending__<table>`; `settle` later deletes every row of a listed key, in the table
 * and its child tables, that the latest write of the key did not load (its `_loaded_at`
 * differs), `KEYS_PER_PART` keys a transaction. A unit thus costs what its own rows cost,
 * whatever the size of the table, and a refresh scans each table once per part, not once a unit.
 *
 * Until it settles, a table may hold a key's earlier rows beside its new ones. The destination
 * settles when it opens (what a killed process left) and the engine settles after each stream and
 * each webhook drain, so other processes never see them (a DuckDB file has one process at a time).
 * A unit and a settle never run at once: units hold the run's write lock, and only the destination
 * holding the writer slot settles. Within a process load times only grow, so the latest write of a
 * key is the one with the greatest `_loaded_at` in the pending table.
 */
export class PendingReplacements {
  constructor(private readonly context: SqlContext) {}

  /**
   * Lists `count` keys of `batch` (one array per key column) as replacing their earlier rows,
   * inside the unit's transaction; called before the batch's rows are loaded.
   */
  async record(
    session: SqlSession,
    layout: TableLayout,
    batch: ShapedBatch,
    keys: readonly (readonly CellValue[])[],
    count: number,
  ): Promise<void> {
    const parent = batch.parent;
    const loadedAt = parent.columns[parent.shape.columns.findIndex((c) => c.name === '_loaded_at')]![0]!;
    const columns: PhysicalColumn[] = [
      ...layout.primaryKey.map((pk) => parent.shape.columns.find((c) => c.name === pk)!),
      { name: '_loaded_at', type: 'timestamp' },
    ];
    const pending = pendingTableOf(layout.name);
    await session.run(
      sql`create table if not exists ${this.target(pending)} as select ${sql.join(columns.map((c) => sql.ref(c.name)))} from ${this.target(layout.name)} limit 0`.compile(
        this.context.db,
      ),
    );
    const rows: ShapedRows = {
      shape: { name: pending, columns },
      columns: [...keys.map((column) => column as CellValue[]), new Array<CellValue>(count).fill(loadedAt)],
      length: count,
      constant: columns.map((_, i) => i === columns.length - 1),
      stamped: [],
    };
    await session.bulkInsert(
      { schema: this.context.schema, table: pending, columns: columns.map((c) => c.name) },
      rows,
    );
  }

  /** Whether the schema holds a pending table (one cheap catalog read, before a settle is prepared). */
  async any(session: SqlSession): Promise<boolean> {
    const rows = await session.all({
      sql: "select 1 as found from information_schema.tables where table_schema = $1 and starts_with(table_name, $2) and table_type = 'BASE TABLE' limit 1",
      parameters: [this.context.schema, PENDING_PREFIX],
    });
    return rows.length > 0;
  }

  /**
   * Deletes the rows the latest write of each pending key replaced, table by table, and then its
   * pending table; resolves to the tables settled. The keys of a table are settled in parts (the
   * keys listed first), each part in a transaction of its own that also takes its keys off the
   * list, so a settle stopped halfway leaves a list that is still right. Tables are found in the
   * catalog's base tables (a killed process's pending keys are settled too): a child table of
   * `t` is a table named `t__…` with `_loaded_at` and a `_parent_<key>` column for each key column.
   */
  async settle(session: SqlSession): Promise<SettledTable[]> {
    const catalog = await this.catalog(session);
    const tableOfPending = new Map([...catalog.keys()].map((table) => [pendingTableOf(table), table]));
    const settled: SettledTable[] = [];
    for (const [name, columns] of catalog) {
      if (!name.startsWith(PENDING_PREFIX)) continue;
      const table = tableOfPending.get(name);
      if (table === undefined || table.startsWith(PENDING_PREFIX)) {
        // Its table was dropped: nothing is left to replace.
        await this.execute(session, sql`drop table ${this.target(name)}`);
        continue;
      }
      const keys = columns.filter((c) => c !== '_loaded_at');
      const isChild = (child: string, childColumns: readonly string[]) =>
        child.startsWith(`${table}__`) &&
        childColumns.includes('_loaded_at') &&
        keys.every((k) => childColumns.includes(`_parent_${k}`));
      const children = [...catalog]
        .filter(([child, childColumns]) => isChild(child, childColumns))
        .map(([child]) => child);
      try {
        const rowsBefore = await this.rowCount(session, table);
        for (let listed = await this.rowCount(session, name); listed > 0;) {
          await this.transaction(session, () => this.replace(session, { pending: name, table, keys, children }));
          const left = await this.rowCount(session, name);
          if (left >= listed) throw new Error(`a part of ${name} settled no key (${left} rows still listed)`);
          if (left > 0) await this.checkpoint(session);
          listed = left;
        }
        await this.execute(session, sql`drop table ${this.target(name)}`);
        settled.push({ table, rowsBefore, rowsAfter: await this.rowCount(session, table) });
      } catch (error) {
        throw new DestinationSettleError(table, error);
      }
    }
    return settled;
  }

  /**
   * Deletes from a table and its children the rows that the latest write of one part of its
   * pending keys did not load, and takes those keys off the list. A part is the keys of the first
   * `KEYS_PER_PART` rows still listed: units list keys in the order they load them, so a part's
   * replaced rows lie close together in the table, and its deletes mark few of the table's row
   * groups instead of every one (see `KEYS_PER_PART`).
   */
  private async replace(session: SqlSession, { pending, table, keys, children }: PendingTable): Promise<void> {
    const refs = sql.join(keys.map((k) => sql.ref(k)));
    const sameKey = (alias: string, other: string): RawBuilder<unknown> =>
      sql.join(
        keys.map((k) => sql`${sql.ref(`${alias}.${k}`)} is not distinct from ${sql.ref(`${other}.${k}`)}`),
        sql` and `,
      );
    const listedRefs = sql.join(keys.map((k) => sql.ref(`p.${k}`)));
    await this.execute(
      session,
      sql`create temporary table ${sql.table(LATEST)} as select ${listedRefs}, max(${sql.ref('p._loaded_at')}) as ${sql.ref('latest')} from ${this.target(pending)} as p join (select distinct ${refs} from (select ${refs} from ${this.target(pending)} limit ${sql.lit(KEYS_PER_PART)}) as l) as f on ${sameKey('p', 'f')} group by ${listedRefs}`,
    );
    const replaced = (alias: string, keyOf: (key: string) => string): RawBuilder<unknown> =>
      sql`${sql.join(
        keys.map((k) => sql`${sql.ref(`${alias}.${keyOf(k)}`)} = ${sql.ref(`w.${k}`)}`),
        sql` and `,
      )} and ${sql.ref(`${alias}._loaded_at`)} is distinct from ${sql.ref('w.latest')}`;
    for (const child of children) {
      await this.execute(
        session,
        sql`delete from ${this.target(child)} as c using ${sql.table(LATEST)} as w where ${replaced('c', (k) => `_parent_${k}`)}`,
      );
    }
    await this.execute(
      session,
      sql`delete from ${this.target(table)} as t using ${sql.table(LATEST)} as w where ${replaced('t', (k) => k)}`,
    );
    await this.execute(
      session,
      sql`delete from ${this.target(pending)} as p using ${sql.table(LATEST)} as w where ${sameKey('p', 'w')}`,
    );
    await this.execute(session, sql`drop table ${sql.table(LATEST)}`);
  }

  /** Every base table of the schema (no view, no temporary table) with its column names, in order. */
  private async catalog(session: SqlSession): Promise<Map<string, string[]>> {
    const rows = await session.all({
      sql:
        'select c.table_name, c.column_name from information_schema.columns c join information_schema.tables t ' +
        "on t.table_catalog = c.table_catalog and t.table_schema = c.table_schema and t.table_name = c.table_name where c.table_schema = $1 and t.table_type = 'BASE TABLE' " +
        'order by c.table_name, c.ordinal_position',
      parameters: [this.context.schema],
    });
    const tables = new Map<string, string[]>();
    for (const row of rows) {
      const name = String(row.table_name);
      tables.set(name, [...(tables.get(name) ?? []), String(row.column_name)]);
    }
    return tables;
  }

  /**
   * Writes the part's deletes to the file before the next part: until a checkpoint DuckDB keeps
   * the deletes of every committed part in memory it cannot evict, and the parts of a million
   * refreshed keys outgrew 128 MB. Skipped when another transaction is open (DuckDB then refuses
   * it): the settle is still right, only less bounded.
   */
  private async checkpoint(session: SqlSession): Promise<void> {
    await session.run({ sql: 'CHECKPOINT', parameters: [] }).catch(() => undefined);
  }

  private async transaction(session: SqlSession, fn: () => Promise<void>): Promise<void> {
    await session.run({ sql: this.context.traits.begin, parameters: [] });
    try {
      await fn();
      await session.run({ sql: 'COMMIT', parameters: [] });
    } catch (error) {
      await session.run({ sql: 'ROLLBACK', parameters: [] }).catch(() => undefined);
      throw error;
    }
  }

  private async rowCount(session: SqlSession, table: string): Promise<number> {
    const [row] = await session.all(
      sql`select count(*) as ${sql.ref('n')} from ${this.target(table)}`.compile(this.context.db),
    );
    return Number(row!.n);
  }

  private async execute(session: SqlSession, query: RawBuilder<unknown>): Promise<void> {
    await session.run(query.compile(this.context.db));
  }

  private target(table: string): RawBuilder<unknown> {
    return sql`${sql.table(this.context.qualified(table))}`;
  }
}

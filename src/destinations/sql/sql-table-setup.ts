import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { SqlContext, SqlSession } from './sql-session.js';
import type { TableLayout, TableShape } from '../../normalize/table-layout.js';
import { childKeyColumns, childShape, parentShape } from '../../normalize/table-layout.js';

/**
 * The data tables of a stream in a SQL destination: created from its layout (parent and child
 * tables, with their keys and indexes where the dialect has them), or evolved by adding the
 * columns they lack. A column is never dropped or retyped.
 */
export class SqlTableSetup {
  constructor(private readonly context: SqlContext) {}

  /**
   * Creates or evolves the tables of `layout` in one transaction on `session`, then sets the
   * layout's column types to the ones the tables really have. Resolves to each table's column
   * names in their physical order (evolution appends at the end).
   */
  async ensure(session: SqlSession, layout: TableLayout): Promise<Map<string, string[]>> {
    await session.run({ sql: this.context.traits.begin, parameters: [] });
    try {
      await lockDdl(this.context, session);
      await session.run(this.context.db.schema.createSchema(this.context.schema).ifNotExists().compile());
      const shapes: { shape: TableShape; child: boolean }[] = [
        { shape: parentShape(layout), child: false },
        ...layout.children.map((child) => ({ shape: childShape(layout, child), child: true })),
      ];
      const actual = new Map<string, string>();
      const physical = new Map<string, string[]>();
      for (const { shape, child } of shapes) {
        const existing = await this.columnsOf(session, shape.name);
        if (existing.size === 0) {
          await this.createTable(session, layout, shape, child);
          physical.set(
            shape.name,
            shape.columns.map((c) => c.name),
          );
        } else {
          const order = [...existing.keys()];
          for (const column of shape.columns) {
            if (existing.has(column.name)) continue;
            await session.run(
              this.context.db.schema
                .alterTable(this.context.qualified(shape.name))
                .addColumn(column.name, sql.raw(this.context.traits.sqlType(column.type)))
                .compile(),
            );
            order.push(column.name);
          }
          physical.set(shape.name, order);
        }
        for (const [name, type] of existing) actual.set(`${shape.name}.${name}`, type);
      }
      await session.run({ sql: 'COMMIT', parameters: [] });
      // Values are checked against the column types the table really has, not the ones the schema would create today.
      for (const column of layout.columns) {
        const type = actual.get(`${layout.name}.${column.name}`);
        if (type) column.type = this.context.traits.logicalType(type);
      }
      for (const child of layout.children) {
        for (const column of child.columns) {
          const type = actual.get(`${child.name}.${column.name}`);
          if (type) column.type = this.context.traits.logicalType(type);
        }
      }
      return physical;
    } catch (error) {
      await session.run({ sql: 'ROLLBACK', parameters: [] }).catch(() => undefined);
      throw error;
    }
  }

  private columnsOf(session: SqlSession, table: string): Promise<Map<string, string>> {
    return tableColumns(this.context, session, table);
  }

  private async createTable(
    session: SqlSession,
    layout: TableLayout,
    shape: TableShape,
    child: boolean,
  ): Promise<void> {
    let builder = this.context.db.schema.createTable(this.context.qualified(shape.name)).ifNotExists();
    for (const column of shape.columns)
      builder = builder.addColumn(column.name, sql.raw(this.context.traits.sqlType(column.type)));
    const merge = layout.writeMode === 'merge' && !child;
    if (this.context.traits.indexes && merge)
      builder = builder.addPrimaryKeyConstraint(indexName(shape.name, 'pkey'), layout.primaryKey as never[]);
    await session.run(builder.compile());
    if (!this.context.traits.indexes) return;
    const keys = child
      ? childKeyColumns(layout).map((c) => c.name)
      : layout.writeMode === 'history'
        ? layout.primaryKey
        : [];
    if (keys.length > 0) {
      await session.run(
        this.context.db.schema
          .createIndex(indexName(shape.name, 'key'))
          .ifNotExists()
          .on(this.context.qualified(shape.name))
          .columns(keys)
          .compile(),
      );
    }
  }
}

/** Takes the dialect's DDL lock in the transaction under way on `session` (see `SqlDialectTraits.ddlLock`). */
export async function lockDdl(context: SqlContext, session: SqlSession): Promise<void> {
  const lock = context.traits.ddlLock?.(context.schema);
  if (lock) await session.run(lock);
}

/** A table's columns as the catalog lists them, in physical order: name → `data_type`; empty when it is not there. */
export async function tableColumns(
  context: SqlContext,
  session: SqlSession,
  table: string,
): Promise<Map<string, string>> {
  const rows = await session.all(
    context.db
      .selectFrom('information_schema.columns')
      .select(['column_name', 'data_type'])
      .where('table_schema', '=', context.schema)
      .where('table_name', '=', table)
      .orderBy('ordinal_position')
      .compile(),
  );
  return new Map(rows.map((row) => [String(row.column_name), String(row.data_type)]));
}

function indexName(table: string, suffix: string): string {
  const name = `${table}_${suffix}`;
  return name.length <= 63
    ? name
    : `${table.slice(0, 40)}_${createHash('sha1').update(table).digest('hex').slice(0, 12)}_${suffix}`;
}

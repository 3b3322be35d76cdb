import type { z } from 'zod';
import { EVOLVE, type SchemaContract, type TableDefinition, type WriteMode } from './table-definition.js';
import { InvalidTableDefinitionError } from '../destinations/destination-error.js';
import { assertIdentifier, columnNameOf } from '../destinations/identifiers.js';

/** Dialect-neutral column types; each backend's type mapper turns them into SQL types. */
export type LogicalType = 'text' | 'bigint' | 'double' | 'boolean' | 'timestamp' | 'json';

/** A column of a table. */
export interface PhysicalColumn {
  /** Column name (validated). */
  name: string;
  /** Its type. */
  type: LogicalType;
}

/** What a field of an object becomes. */
export type FieldNode =
  | { kind: 'column'; column: PhysicalColumn }
  | { kind: 'object'; node: ObjectNode }
  | { kind: 'child'; child: ChildLayout };

/** The fields of an object in the schema, by their key in the record. */
export interface ObjectNode {
  fields: Map<string, FieldNode>;
}

/** A child table made of an array of objects. */
export interface ChildLayout {
  /** `<table>__<field>` (nested path joined by `__`). */
  name: string;
  /** The items' fields. */
  node: ObjectNode;
  /** The items' data columns, in order. */
  columns: PhysicalColumn[];
}

/** A stream's table(s), derived from its zod schema. */
export interface TableLayout {
  name: string;
  writeMode: WriteMode;
  /** Primary-key column names (empty for keyless append/replace tables). */
  primaryKey: string[];
  /** The record's fields. */
  node: ObjectNode;
  /** Data columns of the parent table, in order. */
  columns: PhysicalColumn[];
  /** Child tables, in order. */
  children: ChildLayout[];
  /** What happens to fields and values that do not fit. */
  contract: SchemaContract;
}

/** Whether two layouts describe the same tables, columns, fields and contract. */
export function sameLayout(a: TableLayout, b: TableLayout): boolean {
  return layoutText(a) === layoutText(b);
}

function layoutText(layout: TableLayout): string {
  return JSON.stringify(layout, (_key, value: unknown) => (value instanceof Map ? [...value] : value));
}

/** The complete column list of a table as created, including `_extra`, `_run_id` and friends. */
export interface TableShape {
  name: string;
  columns: PhysicalColumn[];
}

interface ZodInternals {
  _zod: { def: { type: string; [key: string]: unknown }; bag?: Record<string, unknown> };
  meta?: () => Record<string, unknown> | undefined;
  format?: string | null;
}

/**
 * Derives the table layout of a stream from its zod schema: scalar fields become columns, nested
 * objects flatten into `parent__child` columns, arrays of scalars become JSON, arrays of objects
 * become child tables `<table>__<field>`. Throws `InvalidIdentifierError` for unusable names and
 * `InvalidTableDefinitionError` for impossible definitions.
 */
export function tableLayout(definition: TableDefinition): TableLayout {
  const name = assertIdentifier(definition.name, 'table');
  const columns: PhysicalColumn[] = [];
  const children: ChildLayout[] = [];
  const root = unwrap(definition.schema as unknown as ZodInternals);
  if (root.kind !== 'object') throw new InvalidTableDefinitionError(name, 'the schema must be an object schema');
  const node = objectNode(root.shape, '', name, columns, children, false);
  const primaryKey = definition.primaryKey.map((field) => {
    const column = columnNameOf(field.replace(/\./g, '__'));
    const found = columns.find((c) => c.name === column);
    if (!found)
      throw new InvalidTableDefinitionError(
        name,
        `primary-key field ${JSON.stringify(field)} is not a scalar column of the schema`,
      );
    if (found.type === 'json')
      throw new InvalidTableDefinitionError(name, `primary-key field ${JSON.stringify(field)} is JSON, not a scalar`);
    return column;
  });
  if ((definition.writeMode === 'merge' || definition.writeMode === 'history') && primaryKey.length === 0) {
    throw new InvalidTableDefinitionError(name, `write mode ${definition.writeMode} needs a primary key`);
  }
  if (!['merge', 'append', 'replace', 'history'].includes(definition.writeMode)) {
    throw new InvalidTableDefinitionError(name, `unknown write mode ${JSON.stringify(definition.writeMode)}`);
  }
  return {
    name,
    writeMode: definition.writeMode,
    primaryKey,
    node,
    columns,
    children,
    contract: definition.contract ?? EVOLVE,
  };
}

/** Columns of the parent table as created: data columns, `_extra`, `_run_id`, `_loaded_at`, and the history columns. */
export function parentShape(layout: TableLayout): TableShape {
  const columns: PhysicalColumn[] = [];
  if (layout.primaryKey.length === 0 && layout.children.length > 0) columns.push({ name: '_row_id', type: 'text' });
  columns.push(...layout.columns, ...systemColumns());
  if (layout.writeMode === 'history') {
    columns.push(
      { name: '_valid_from', type: 'timestamp' },
      { name: '_valid_to', type: 'timestamp' },
      { name: '_row_hash', type: 'text' },
    );
  }
  return { name: layout.name, columns };
}

/** Columns of a child table as created: parent key, `_index`, the item's columns, `_extra`, `_run_id`, `_loaded_at`. */
export function childShape(layout: TableLayout, child: ChildLayout): TableShape {
  return {
    name: child.name,
    columns: [...childKeyColumns(layout), { name: '_index', type: 'bigint' }, ...child.columns, ...systemColumns()],
  };
}

/** The columns linking a child row to its parent row (`_parent_<pk>`…, plus `_parent_valid_from` in history mode). */
export function childKeyColumns(layout: TableLayout): PhysicalColumn[] {
  if (layout.primaryKey.length === 0) return [{ name: '_parent_row_id', type: 'text' }];
  const keys = layout.primaryKey.map((pk) => {
    const type = layout.columns.find((c) => c.name === pk)?.type ?? 'text';
    return { name: assertIdentifier(`_parent_${pk}`, 'column'), type };
  });
  if (layout.writeMode === 'history') keys.push({ name: '_parent_valid_from', type: 'timestamp' });
  return keys;
}

function systemColumns(): PhysicalColumn[] {
  return [
    { name: '_extra', type: 'json' },
    { name: '_run_id', type: 'text' },
    { name: '_loaded_at', type: 'timestamp' },
  ];
}

type Unwrapped =
  | { kind: 'scalar'; type: LogicalType }
  | { kind: 'object'; shape: Record<string, ZodInternals> }
  | { kind: 'array'; item: Unwrapped };

function objectNode(
  shape: Record<string, ZodInternals>,
  prefix: string,
  table: string,
  columns: PhysicalColumn[],
  children: ChildLayout[],
  insideChild: boolean,
): ObjectNode {
  const fields = new Map<string, FieldNode>();
  for (const [key, schema] of Object.entries(shape)) {
    const columnName = prefix + columnNameOf(key);
    const field = unwrap(schema);
    if (field.kind === 'scalar') {
      const column = { name: assertIdentifier(columnName, 'column'), type: field.type };
      columns.push(column);
      fields.set(key, { kind: 'column', column });
    } else if (field.kind === 'object') {
      assertIdentifier(columnName, 'column');
      fields.set(key, {
        kind: 'object',
        node: objectNode(field.shape, `${columnName}__`, table, columns, children, insideChild),
      });
    } else if (field.item.kind === 'object' && !insideChild) {
      const childName = assertIdentifier(`${table}__${columnName}`, 'child table');
      const childColumns: PhysicalColumn[] = [];
      const node = objectNode(field.item.shape, '', childName, childColumns, children, true);
      const child: ChildLayout = { name: childName, node, columns: childColumns };
      for (const reserved of ['_index', '_extra', '_run_id', '_loaded_at']) {
        if (childColumns.some((c) => c.name === reserved))
          throw new InvalidTableDefinitionError(childName, `field ${reserved} collides with a system column`);
      }
      children.push(child);
      fields.set(key, { kind: 'child', child });
    } else {
      const column = { name: assertIdentifier(columnName, 'column'), type: 'json' as const };
      columns.push(column);
      fields.set(key, { kind: 'column', column });
    }
  }
  const seen = new Set<string>();
  for (const column of columns) {
    if (seen.has(column.name))
      throw new InvalidTableDefinitionError(table, `two fields map to the column ${column.name}`);
    seen.add(column.name);
  }
  return { fields };
}

/** Strips optional/nullable/default/pipe wrappers and reads `meta({ sqlType })` on the way. */
function unwrap(schema: ZodInternals): Unwrapped {
  let current: ZodInternals = schema;
  for (let depth = 0; depth < 32; depth++) {
    const metaType = sqlTypeOf(current);
    if (metaType) return { kind: 'scalar', type: metaType };
    const def = current._zod.def;
    switch (def.type) {
      case 'optional':
      case 'nullable':
      case 'default':
      case 'prefault':
      case 'catch':
      case 'readonly':
      case 'nonoptional':
      case 'success':
        current = def.innerType as ZodInternals;
        continue;
      case 'lazy':
        current = (def.getter as () => ZodInternals)();
        continue;
      case 'pipe': {
        const input = def.in as ZodInternals;
        // A transform's output type is unknown to introspection: the input decides.
        current = input._zod.def.type === 'transform' ? (def.out as ZodInternals) : input;
        if (current._zod.def.type === 'transform') return { kind: 'scalar', type: 'json' };
        continue;
      }
      case 'string':
        // An ISO date-time string (`format: date-time` of a JSON Schema record file) is a timestamp column.
        return { kind: 'scalar', type: current.format === 'datetime' ? 'timestamp' : 'text' };
      case 'enum':
      case 'template_literal':
        return { kind: 'scalar', type: 'text' };
      case 'literal': {
        const values = (def.values as unknown[]) ?? [];
        return { kind: 'scalar', type: scalarOfValues(values) };
      }
      case 'number':
        return { kind: 'scalar', type: isInteger(current) ? 'bigint' : 'double' };
      case 'int':
      case 'bigint':
        return { kind: 'scalar', type: 'bigint' };
      case 'boolean':
        return { kind: 'scalar', type: 'boolean' };
      case 'date':
        return { kind: 'scalar', type: 'timestamp' };
      case 'object':
        return { kind: 'object', shape: def.shape as Record<string, ZodInternals> };
      case 'array':
        return { kind: 'array', item: unwrap(def.element as ZodInternals) };
      case 'union': {
        // `null` as one option (`type: [string, "null"]`) only makes the column nullable, as nullable() does.
        const options = (def.options as ZodInternals[]).filter((o) => o._zod.def.type !== 'null').map(unwrap);
        const first = options[0];
        if (first?.kind === 'scalar' && options.every((o) => o.kind === 'scalar' && o.type === first.type))
          return first;
        return { kind: 'scalar', type: 'json' };
      }
      default:
        return { kind: 'scalar', type: 'json' };
    }
  }
  return { kind: 'scalar', type: 'json' };
}

function sqlTypeOf(schema: ZodInternals): LogicalType | null {
  const meta = typeof schema.meta === 'function' ? schema.meta() : undefined;
  const sqlType = meta?.sqlType;
  if (typeof sqlType !== 'string') return null;
  const normalised = sqlType.toLowerCase();
  if (normalised === 'timestamp' || normalised === 'timestamptz') return 'timestamp';
  if (normalised === 'text' || normalised === 'varchar') return 'text';
  if (normalised === 'bigint' || normalised === 'integer') return 'bigint';
  if (normalised === 'double' || normalised === 'double precision') return 'double';
  if (normalised === 'boolean') return 'boolean';
  if (normalised === 'json' || normalised === 'jsonb') return 'json';
  return null;
}

function isInteger(schema: ZodInternals): boolean {
  const format = schema.format ?? (schema._zod.bag?.format as string | undefined);
  if (typeof format === 'string' && /int/.test(format)) return true;
  const checks = (schema._zod.def.checks as ZodInternals[] | undefined) ?? [];
  return checks.some((check) => {
    const f = (check._zod.def as { format?: string }).format;
    return typeof f === 'string' && /int/.test(f);
  });
}

function scalarOfValues(values: unknown[]): LogicalType {
  if (values.every((v) => typeof v === 'string')) return 'text';
  if (values.every((v) => typeof v === 'boolean')) return 'boolean';
  if (values.every((v) => typeof v === 'number' && Number.isInteger(v))) return 'bigint';
  if (values.every((v) => typeof v === 'number')) return 'double';
  return 'json';
}

import { createHash, randomUUID } from 'node:crypto';
import type { ChildLayout, LogicalType, ObjectNode, TableLayout, TableShape } from './table-layout.js';
import { childShape, parentShape } from './table-layout.js';

/**
 * A value ready for a bulk path: text and JSON as strings, bigint as number or bigint, double as
 * number, boolean, timestamps as epoch milliseconds, or null.
 */
export type CellValue = string | number | bigint | boolean | null;

/** Rows of one table, in the order of its shape's columns. */
export interface ShapedRows {
  shape: TableShape;
  rows: CellValue[][];
}

/** A record that does not fit its table, with the reason. */
export interface ShapeRejection {
  record: unknown;
  reason: string;
}

/** The outcome of shaping a batch of records. */
export interface ShapedBatch {
  parent: ShapedRows;
  children: ShapedRows[];
  rejected: ShapeRejection[];
  /** Records accepted (after de-duplication on the primary key). */
  records: number;
}

/** Options of `shapeRecords`. */
export interface ShapeOptions {
  runId: string;
  /** `_loaded_at` (and `_valid_from` in history mode), epoch milliseconds. */
  loadedAt: number;
  /** Refuse strings containing U+0000 (Postgres cannot store them). Default: false. */
  rejectNul?: boolean;
}

class Rejection extends Error {}

// 0001-01-01 .. 9999-12-31: what both backends store and print as ISO 8601.
const MIN_TIMESTAMP = -62135596800000;
const MAX_TIMESTAMP = 253402300799999;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const JSON_NUL = /(?<!\\)(?:\\\\)*\\u0000/;

/**
 * Turns records into the rows of a table and its child tables, checking every value against its
 * column's type. A record with a value that does not fit (a string in a BIGINT column, an
 * unparseable timestamp, …) is returned in `rejected` with the reason instead of throwing. In
 * merge and history mode, the last record of a primary key wins.
 */
export function shapeRecords(layout: TableLayout, records: readonly Record<string, unknown>[], options: ShapeOptions): ShapedBatch {
  const parentTable = parentShape(layout);
  const childTables = layout.children.map((child) => childShape(layout, child));
  const parent: ShapedRows = { shape: parentTable, rows: [] };
  const children: ShapedRows[] = childTables.map((shape) => ({ shape, rows: [] }));
  const rejected: ShapeRejection[] = [];
  const history = layout.writeMode === 'history';
  const keyed = layout.writeMode === 'merge' || history;
  const width = layout.columns.length;
  const pkIndexes = layout.primaryKey.map((pk) => layout.columns.findIndex((c) => c.name === pk));
  const childIndex = new Map<ChildLayout, number>(layout.children.map((c, i) => [c, i]));
  const columnIndex = new Map(layout.columns.map((c, i) => [c.name, i]));
  const noKey = layout.primaryKey.length === 0 && layout.children.length > 0;
  const rejectNul = options.rejectNul ?? false;

  // Accepted records by key, so a later duplicate replaces an earlier one.
  const accepted: { data: CellValue[]; extra: string | null; items: CellValue[][][] }[] = [];
  const byKey = new Map<string, number>();

  for (const record of records) {
    try {
      if (record === null || typeof record !== 'object' || Array.isArray(record)) throw new Rejection('record is not an object');
      const data: CellValue[] = new Array<CellValue>(width).fill(null);
      const items: CellValue[][][] = layout.children.map(() => []);
      const extra = walk(layout.node, record, '', data, columnIndex, items, childIndex, rejectNul);
      for (let i = 0; i < pkIndexes.length; i++) {
        if (data[pkIndexes[i]!] === null) throw new Rejection(`primary-key column ${layout.primaryKey[i]} is null`);
      }
      const entry = { data, extra: extra === undefined ? null : stringifyJson(extra, '_extra', rejectNul), items };
      if (keyed) {
        const key = JSON.stringify(pkIndexes.map((i) => String(data[i])));
        const previous = byKey.get(key);
        if (previous !== undefined) {
          accepted[previous] = entry;
          continue;
        }
        byKey.set(key, accepted.length);
      }
      accepted.push(entry);
    } catch (error) {
      if (!(error instanceof Rejection)) throw error;
      rejected.push({ record, reason: error.message });
    }
  }

  const loadedAt = options.loadedAt;
  for (const entry of accepted) {
    const row: CellValue[] = [];
    let rowId: string | null = null;
    if (noKey) {
      rowId = randomUUID();
      row.push(rowId);
    }
    for (const value of entry.data) row.push(value);
    row.push(entry.extra, options.runId, loadedAt);
    if (history) row.push(loadedAt, null, rowHash(entry.data, entry.extra, entry.items));
    parent.rows.push(row);
    const parentKey: CellValue[] = noKey ? [rowId] : pkIndexes.map((i) => entry.data[i]!);
    if (history) parentKey.push(loadedAt);
    entry.items.forEach((childRows, c) => {
      const target = children[c]!.rows;
      childRows.forEach((item, index) => {
        const childRow: CellValue[] = [...parentKey, index];
        for (const value of item) childRow.push(value);
        childRow.push(options.runId, loadedAt);
        target.push(childRow);
      });
    });
  }
  return { parent, children, rejected, records: accepted.length };
}

const childColumnIndexes = new WeakMap<ChildLayout, Map<string, number>>();

function columnIndexOf(child: ChildLayout): Map<string, number> {
  let index = childColumnIndexes.get(child);
  if (!index) {
    index = new Map(child.columns.map((c, i) => [c.name, i]));
    childColumnIndexes.set(child, index);
  }
  return index;
}

/** Fills `data` from `value` following `node`; returns the fields outside the schema (or undefined). */
function walk(
  node: ObjectNode,
  value: Record<string, unknown>,
  prefix: string,
  data: CellValue[],
  columnIndex: Map<string, number>,
  items: CellValue[][][] | null,
  childIndex: Map<ChildLayout, number>,
  rejectNul: boolean,
): Record<string, unknown> | undefined {
  let extra: Record<string, unknown> | undefined;
  for (const [key, field] of node.fields) {
    const fieldValue = value[key];
    if (field.kind === 'column') {
      data[columnIndex.get(field.column.name)!] = cell(fieldValue, field.column.type, field.column.name, rejectNul);
    } else if (field.kind === 'object') {
      if (fieldValue === null || fieldValue === undefined) continue;
      if (typeof fieldValue !== 'object' || Array.isArray(fieldValue)) throw new Rejection(`field ${prefix}${key}: expected an object, got ${kindOf(fieldValue)}`);
      const nested = walk(field.node, fieldValue as Record<string, unknown>, `${prefix}${key}.`, data, columnIndex, items, childIndex, rejectNul);
      if (nested !== undefined) (extra ??= {})[key] = nested;
    } else {
      if (fieldValue === null || fieldValue === undefined || items === null) continue;
      if (!Array.isArray(fieldValue)) throw new Rejection(`field ${prefix}${key}: expected an array, got ${kindOf(fieldValue)}`);
      const child = field.child;
      const rows = items[childIndex.get(child)!]!;
      const childColumns = columnIndexOf(child);
      for (const item of fieldValue) {
        if (item === null || typeof item !== 'object' || Array.isArray(item)) throw new Rejection(`field ${prefix}${key}: expected objects in the list, got ${kindOf(item)}`);
        const childData: CellValue[] = new Array<CellValue>(child.columns.length).fill(null);
        const childExtra = walk(child.node, item as Record<string, unknown>, `${prefix}${key}[].`, childData, childColumns, null, childIndex, rejectNul);
        childData.push(childExtra === undefined ? null : stringifyJson(childExtra, `${child.name}._extra`, rejectNul));
        rows.push(childData);
      }
    }
  }
  // Most records carry no unknown field: count first, collect only when there is one.
  let known = 0;
  for (const key in value) {
    if (node.fields.has(key)) known++;
    else if (value[key] !== undefined) {
      (extra ??= {})[key] = value[key];
    }
  }
  void known;
  return extra;
}

/** Checks and converts one value for a column of `type`; throws a Rejection when it does not fit. */
export function cell(value: unknown, type: LogicalType, column: string, rejectNul: boolean): CellValue {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'text':
      if (typeof value === 'string') {
        if (rejectNul && value.includes('\u0000')) throw new Rejection(`column ${column}: text contains U+0000, which the warehouse cannot store`);
        return value;
      }
      if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
      throw new Rejection(`column ${column}: expected text, got ${kindOf(value)}`);
    case 'bigint':
      if (typeof value === 'number') {
        if (Number.isSafeInteger(value)) return value;
        if (Number.isInteger(value) && BigInt(value) >= INT64_MIN && BigInt(value) <= INT64_MAX) return BigInt(value);
        throw new Rejection(`column ${column}: expected a 64-bit integer, got ${value}`);
      }
      if (typeof value === 'bigint') {
        if (value >= INT64_MIN && value <= INT64_MAX) return value;
        throw new Rejection(`column ${column}: integer ${value} is out of the 64-bit range`);
      }
      throw new Rejection(`column ${column}: expected an integer, got ${kindOf(value)}`);
    case 'double':
      if (typeof value === 'number' && Number.isFinite(value)) return value;
      if (typeof value === 'bigint') return Number(value);
      throw new Rejection(`column ${column}: expected a finite number, got ${kindOf(value)}`);
    case 'boolean':
      if (typeof value === 'boolean') return value;
      throw new Rejection(`column ${column}: expected a boolean, got ${kindOf(value)}`);
    case 'timestamp': {
      let ms: number;
      if (value instanceof Date) ms = value.getTime();
      else if (typeof value === 'string') ms = Date.parse(value);
      else throw new Rejection(`column ${column}: expected an ISO 8601 timestamp, got ${kindOf(value)}`);
      if (Number.isNaN(ms)) throw new Rejection(`column ${column}: unparseable timestamp ${JSON.stringify(String(value).slice(0, 64))}`);
      if (ms < MIN_TIMESTAMP || ms > MAX_TIMESTAMP) throw new Rejection(`column ${column}: timestamp ${JSON.stringify(String(value).slice(0, 64))} is outside years 1-9999`);
      return ms;
    }
    case 'json':
      return stringifyJson(value, column, rejectNul);
  }
}

function stringifyJson(value: unknown, column: string, rejectNul: boolean): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  } catch (error) {
    throw new Rejection(`column ${column}: value cannot be written as JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  if (text === undefined) return 'null';
  if (rejectNul && JSON_NUL.test(text)) throw new Rejection(`column ${column}: JSON contains U+0000, which the warehouse cannot store`);
  return text;
}

function rowHash(data: CellValue[], extra: string | null, items: CellValue[][][]): string {
  const hash = createHash('sha1');
  hash.update(JSON.stringify(data, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)));
  hash.update('\u0001');
  hash.update(extra ?? '');
  for (const rows of items) {
    hash.update('\u0002');
    hash.update(JSON.stringify(rows, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)));
  }
  return hash.digest('hex');
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `a string (${JSON.stringify(value.slice(0, 40))})`;
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

import { createHash, randomUUID } from 'node:crypto';
import {
  asReceived,
  contractReason,
  mergeKept,
  REPAIRED,
  UNFIT,
  type ContractMode,
  type RepairCount,
  type SchemaContract,
} from './table-definition.js';
import type { ChildLayout, LogicalType, ObjectNode, TableLayout, TableShape } from './table-layout.js';
import { childKeyColumns, childShape, parentShape } from './table-layout.js';
import type { CellValue } from './cell-values.js';
import { cell, extraJson, kindOf, Rejection } from './cell-values.js';

/**
 * How a destination shapes the rows of one table (`Destination.writeShaping`): its layout and
 * the values it refuses. Plain data, for `postMessage` to a worker thread.
 */
export interface WriteShaping {
  readonly table: string;
  /** The table's layout as the destination writes it (its column types settled by `ensureTable`). */
  readonly layout: TableLayout;
  /** Strings holding U+0000 are refused (Postgres cannot store them). */
  readonly rejectNul: boolean;
}

/** Rows shaped by `shapeForWrite`: structured-clonable, for `Destination.adoptWrite`. */
export type ShapedWrite = ShapedBatch;

/**
 * Shapes records into the rows of a write as `Destination.prepareWrite` does, in whatever thread
 * runs it (a worker thread, off the main one). Each record may carry its partition (PARTITION) and
 * its repairs (REPAIRED); symbols do not cross `postMessage`, so a worker hands back the
 * partitions of the rejected records beside them.
 */
export function shapeForWrite(
  shaping: WriteShaping,
  records: readonly Record<string, unknown>[],
  runId: string,
): ShapedWrite {
  return shapeRecords(shaping.layout, records, { runId, loadedAt: 0, rejectNul: shaping.rejectNul });
}

// Cell conversion lives in cell-values.ts; these stay importable from here.
export { cell, parseIsoTimestamp, type CellValue } from './cell-values.js';

/**
 * Rows of one table, column by column: `columns[i]` holds the values of `shape.columns[i]`, each
 * array `length` long. Bulk paths read them column-wise (DuckDB data chunks) or row-wise (COPY).
 */
export interface ShapedRows {
  shape: TableShape;
  columns: CellValue[][];
  /** Number of rows. */
  length: number;
  /** `constant[i]` is true when every row has the same value in column i (`_run_id`, `_loaded_at`, …). */
  constant: boolean[];
  /** Columns holding the load time (`_loaded_at`, and in history mode `_valid_from` or `_parent_valid_from`): see `stampLoadTime`. */
  stamped: number[];
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
  /** Primary-key values of the accepted records, one array per key column (empty for keyless tables). */
  keys: CellValue[][];
  /** Values that did not fit and were kept in `_extra` or discarded (the contract's `evolve` and `discard_value`), per field. */
  repairs: RepairCount[];
}

/** Options of `shapeRecords`. */
export interface ShapeOptions {
  runId: string;
  /** `_loaded_at` (and `_valid_from` in history mode), epoch milliseconds. */
  loadedAt: number;
  /** Refuse strings containing U+0000 (Postgres cannot store them). Default: false. */
  rejectNul?: boolean;
}

/** A record the contract (`discard_row`, `freeze`) refuses: rejected whole, never repaired by an enclosing field. */
class ContractRejection extends Rejection {}

/** One field of an object, resolved to what it fills. */
type Step =
  | { kind: 'column'; key: string; column: number; type: LogicalType; name: string }
  | { kind: 'object'; key: string; node: NodePlan; path: string; columns: number[] }
  | { kind: 'child'; key: string; child: number; path: string };

/** An object's fields, and the keys it knows (the others go to `_extra`). */
interface NodePlan {
  steps: Step[];
  known: Set<string>;
}

/** The shaping plan of a table, compiled once from its layout (after `ensureTable` settled the column types). */
interface Plan {
  parent: TableShape;
  node: NodePlan;
  /** Index in the parent shape of the first data column (1 when a `_row_id` leads). */
  offset: number;
  width: number;
  pk: number[];
  children: { shape: TableShape; node: NodePlan; width: number; name: string }[];
  /** Number of leading parent-key columns of the child shapes. */
  childKeys: number;
}

const plans = new WeakMap<TableLayout, Plan>();

function planOf(layout: TableLayout): Plan {
  let plan = plans.get(layout);
  if (plan) return plan;
  const parent = parentShape(layout);
  const offset = parent.columns.length - layout.columns.length - 3 - (layout.writeMode === 'history' ? 3 : 0);
  const childIndex = new Map<ChildLayout, number>(layout.children.map((c, i) => [c, i]));
  const children = layout.children.map((child) => {
    const shape = childShape(layout, child);
    const keys = shape.columns.length - child.columns.length - 4;
    return {
      shape,
      node: compileNode(child.node, new Map(child.columns.map((c, i) => [c.name, keys + 1 + i])), childIndex, ''),
      width: shape.columns.length,
      name: child.name,
    };
  });
  const columnIndex = new Map(layout.columns.map((c, i) => [c.name, offset + i]));
  plan = {
    parent,
    node: compileNode(layout.node, columnIndex, childIndex, ''),
    offset,
    width: parent.columns.length,
    pk: layout.primaryKey.map((pk) => columnIndex.get(pk)!),
    children,
    childKeys: childKeyColumns(layout).length,
  };
  plans.set(layout, plan);
  return plan;
}

function compileNode(
  node: ObjectNode,
  columnIndex: Map<string, number>,
  childIndex: Map<ChildLayout, number>,
  prefix: string,
): NodePlan {
  const steps: Step[] = [];
  for (const [key, field] of node.fields) {
    if (field.kind === 'column')
      steps.push({
        kind: 'column',
        key,
        column: columnIndex.get(field.column.name)!,
        type: field.column.type,
        name: field.column.name,
      });
    else if (field.kind === 'object') {
      const nested = compileNode(field.node, columnIndex, childIndex, `${prefix}${key}.`);
      steps.push({ kind: 'object', key, node: nested, path: `${prefix}${key}`, columns: columnsOf(nested) });
    } else steps.push({ kind: 'child', key, child: childIndex.get(field.child)!, path: `${prefix}${key}` });
  }
  return { steps, known: new Set(node.fields.keys()) };
}

/** The columns an object's fields fill, nested objects included (not child tables). */
function columnsOf(node: NodePlan): number[] {
  return node.steps.flatMap((step) =>
    step.kind === 'column' ? [step.column] : step.kind === 'object' ? step.columns : [],
  );
}

/** Where a record's values go while it is shaped; truncated back when the record is rejected. */
interface Target {
  columns: CellValue[][];
  row: number;
}

/** What `fill` needs besides the values: the plan, the contract, and where repairs are counted. */
interface FillContext {
  plan: Plan;
  rejectNul: boolean;
  contract: SchemaContract;
  /** Repairs of the record being shaped (`field\tchange` → count), folded into the batch's once it is accepted. */
  pending: Map<string, number>;
}

/**
 * Turns records into the rows of a table and its child tables, checking every value against its
 * column's type. A record with a value that does not fit (a string in a BIGINT column, an
 * unparseable timestamp, …) is returned in `rejected` with the reason instead of throwing. In
 * merge and history mode, the last record of a primary key wins.
 */
export function shapeRecords(
  layout: TableLayout,
  records: readonly Record<string, unknown>[],
  options: ShapeOptions,
): ShapedBatch {
  const plan = planOf(layout);
  const history = layout.writeMode === 'history';
  const keyed = layout.writeMode === 'merge' || history;
  const noKey = layout.primaryKey.length === 0 && layout.children.length > 0;
  const ctx: FillContext = {
    plan,
    rejectNul: options.rejectNul ?? false,
    contract: layout.contract,
    pending: new Map(),
  };
  const repairs = new Map<string, number>();
  // Sized once (V8 keeps arrays of up to ~100k elements in fast mode): rows are then stored in bounds, without growing.
  const capacity = records.length <= 50_000 ? records.length : 0;
  const parent: Target = { columns: plan.parent.columns.map(() => new Array<CellValue>(capacity)), row: 0 };
  const children: Target[] = plan.children.map((c) => ({ columns: c.shape.columns.map(() => []), row: 0 }));
  // Child rows' parent row, to drop them when a later duplicate replaces their parent.
  const childParents: number[][] = plan.children.map(() => []);
  const rejected: ShapeRejection[] = [];
  const byKey = new Map<string, number>();
  const replaced: number[] = [];
  const parentKeyColumns = noKey ? [0] : plan.pk;

  // Where each child table's rows of the current record start (reused: one array per record was garbage to collect).
  const childStarts = children.map(() => 0);
  for (const record of records) {
    const row = parent.row;
    for (let k = 0; k < children.length; k++) childStarts[k] = children[k]!.row;
    try {
      if (record === null || typeof record !== 'object' || Array.isArray(record))
        throw new Rejection('record is not an object');
      const columns = parent.columns;
      if (noKey) columns[0]![row] = randomUUID();
      ctx.pending.clear();
      const extra = fill(plan.node, record, columns, row, children, ctx, '');
      for (let i = 0; i < plan.pk.length; i++) {
        if (columns[plan.pk[i]!]![row] === null)
          throw new Rejection(`primary-key column ${layout.primaryKey[i]} is null`);
      }
      columns[plan.offset + layout.columns.length]![row] = extra === undefined ? null : extraJson(extra, ctx.rejectNul);
      // Children were filled with their item columns only: add the parent key and index now that the record is accepted.
      for (let k = 0; k < children.length; k++) {
        const child = children[k]!;
        for (let r = childStarts[k]!, index = 0; r < child.row; r++, index++) {
          for (let i = 0; i < parentKeyColumns.length; i++) child.columns[i]![r] = columns[parentKeyColumns[i]!]![row]!;
          child.columns[plan.childKeys]![r] = index;
          childParents[k]![r] = row;
        }
      }
      // The record as received, misfits included: a misfit that changes is a new version too.
      if (history)
        columns[plan.offset + layout.columns.length + 5]![row] = rowHash(asReceived(record) as Record<string, unknown>);
      if (keyed) {
        const key =
          plan.pk.length === 1
            ? String(columns[plan.pk[0]!]![row])
            : JSON.stringify(plan.pk.map((i) => String(columns[i]![row])));
        const previous = byKey.get(key);
        if (previous !== undefined) replaced.push(previous);
        byKey.set(key, row);
      }
      parent.row++;
      for (const key of (record as { [REPAIRED]?: readonly string[] })[REPAIRED] ?? [])
        ctx.pending.set(key, (ctx.pending.get(key) ?? 0) + 1);
      for (const [key, count] of ctx.pending) repairs.set(key, (repairs.get(key) ?? 0) + count);
    } catch (error) {
      for (const column of parent.columns) if (column.length > row) column.length = row;
      children.forEach((child, k) => {
        for (const column of child.columns) if (column.length > childStarts[k]!) column.length = childStarts[k]!;
        child.row = childStarts[k]!;
      });
      if (!(error instanceof Rejection)) throw error;
      rejected.push({ record: asReceived(record), reason: error.message });
    }
  }

  if (replaced.length > 0) {
    const drop = new Set(replaced);
    compact(parent, (r) => !drop.has(r));
    children.forEach((child, k) => compact(child, (r) => !drop.has(childParents[k]![r]!)));
  }

  const loadedAt = options.loadedAt;
  const parentRows = finish(plan.parent, parent, plan.offset + layout.columns.length + 1, [options.runId, loadedAt]);
  if (history) {
    const width = layout.columns.length;
    parentRows.columns[plan.offset + width + 3] = new Array<CellValue>(parent.row).fill(loadedAt);
    parentRows.columns[plan.offset + width + 4] = new Array<CellValue>(parent.row).fill(null);
    parentRows.constant[plan.offset + width + 3] = true;
    parentRows.constant[plan.offset + width + 4] = true;
    parentRows.stamped.push(plan.offset + width + 3);
  }
  const childRows = plan.children.map((child, k) => {
    const shaped = finish(child.shape, children[k]!, child.width - 2, [options.runId, loadedAt]);
    if (history) {
      shaped.columns[plan.childKeys - 1] = new Array<CellValue>(shaped.length).fill(loadedAt);
      shaped.constant[plan.childKeys - 1] = true;
      shaped.stamped.push(plan.childKeys - 1);
    }
    return shaped;
  });
  return {
    parent: parentRows,
    children: childRows,
    rejected,
    records: parent.row,
    keys: plan.pk.map((i) => parentRows.columns[i]!),
    repairs: repairCounts(layout.name, repairs),
  };
}

/** Keeps the rows `keep` accepts, in order. */
function compact(target: Target, keep: (row: number) => boolean): void {
  let out = 0;
  for (let r = 0; r < target.row; r++) {
    if (!keep(r)) continue;
    if (out !== r) for (const column of target.columns) column[out] = column[r]!;
    out++;
  }
  for (const column of target.columns) column.length = out;
  target.row = out;
}

/** Fills the constant columns `_run_id` (at `first`) and `_loaded_at` (after it) and sizes the rest. */
function finish(shape: TableShape, target: Target, first: number, [runId, loadedAt]: [string, number]): ShapedRows {
  const constant = shape.columns.map(() => false);
  target.columns[first] = new Array<CellValue>(target.row).fill(runId);
  target.columns[first + 1] = new Array<CellValue>(target.row).fill(loadedAt);
  constant[first] = constant[first + 1] = true;
  for (const column of target.columns) if (column.length !== target.row) column.length = target.row;
  return { shape, columns: target.columns, length: target.row, constant, stamped: [first + 1] };
}

/**
 * Sets the load time of shaped rows (epoch milliseconds): a batch shaped ahead of its unit gets
 * the time it is written at, so history versions keep the order of their writes.
 */
export function stampLoadTime(batch: ShapedBatch, loadedAt: number): void {
  for (const rows of [batch.parent, ...batch.children])
    for (const column of rows.stamped) rows.columns[column]!.fill(loadedAt);
}

/**
 * Fills `columns[…][row]` from `value` following `node`; child items go to `children` (item
 * columns only). Returns what the row keeps in `_extra` (or undefined): fields outside the
 * schema, and values that did not fit, as the contract says.
 */
function fill(
  node: NodePlan,
  value: Record<string, unknown>,
  columns: CellValue[][],
  row: number,
  children: Target[] | null,
  ctx: FillContext,
  path: string,
): Record<string, unknown> | undefined {
  // `keep` takes and returns `extra`, not a closure over it: one closure per object filled was garbage to collect.
  let extra: Record<string, unknown> | undefined;
  for (const step of node.steps) {
    const fieldValue = value[step.key];
    try {
      const nested = fillStep(step, fieldValue, columns, row, children, ctx, path);
      if (nested !== undefined) extra = keep(extra, step.key, nested);
    } catch (error) {
      // Without its key a record cannot load: its own reason says more than "key is null".
      const isKey = path === '' && step.kind === 'column' && ctx.plan.pk.includes(step.column);
      if (!(error instanceof Rejection) || error instanceof ContractRejection || isKey) throw error;
      clearStep(step, columns, row);
      if (unfit(ctx, 'dataType', `${path}${step.key}`, error.message) === 'evolve')
        extra = keep(extra, step.key, fieldValue);
    }
  }
  const upstream = (value as { [UNFIT]?: Record<string, unknown> })[UNFIT];
  if (upstream) for (const key of Object.keys(upstream)) extra = keep(extra, key, upstream[key]);
  for (const key in value) {
    if (node.known.has(key) || value[key] === undefined) continue;
    if (unfit(ctx, 'columns', `${path}${key}`, `field ${path}${key} is not in the schema`) === 'evolve')
      extra = keep(extra, key, value[key]);
  }
  return extra;
}

/** `extra` (made when there is none yet) with `kept` merged in under `key`. */
function keep(extra: Record<string, unknown> | undefined, key: string, kept: unknown): Record<string, unknown> {
  const into = extra ?? newExtra();
  into[key] = mergeKept(into[key], kept);
  return into;
}

/** One field into its column(s) or child rows; returns what its nested object keeps in `_extra`. Throws a Rejection when it does not fit. */
function fillStep(
  step: Step,
  fieldValue: unknown,
  columns: CellValue[][],
  row: number,
  children: Target[] | null,
  ctx: FillContext,
  path: string,
): Record<string, unknown> | undefined {
  // Every column of a row is written once, NULL included (the arrays are not pre-filled).
  if (step.kind === 'column') {
    // Most values are plain strings in text columns: take them without the general checks.
    if (fieldValue === null || fieldValue === undefined) columns[step.column]![row] = null;
    else if (
      step.type === 'text' &&
      typeof fieldValue === 'string' &&
      !(ctx.rejectNul && fieldValue.includes('\u0000')) &&
      fieldValue.isWellFormed()
    )
      columns[step.column]![row] = fieldValue;
    else columns[step.column]![row] = cell(fieldValue, step.type, step.name, ctx.rejectNul);
    return undefined;
  }
  if (step.kind === 'object') {
    if (fieldValue === null || fieldValue === undefined) {
      clearStep(step, columns, row);
      return undefined;
    }
    if (typeof fieldValue !== 'object' || Array.isArray(fieldValue))
      throw new Rejection(`field ${step.path}: expected an object, got ${kindOf(fieldValue)}`);
    return fill(step.node, fieldValue as Record<string, unknown>, columns, row, children, ctx, `${path}${step.key}.`);
  }
  if (fieldValue === null || fieldValue === undefined || children === null) return undefined;
  if (!Array.isArray(fieldValue))
    throw new Rejection(`field ${step.path}: expected an array, got ${kindOf(fieldValue)}`);
  return fillChildRows(step, fieldValue, children, ctx, path);
}

/** The list's objects as child rows; an item that is not an object is left out of the table and, under `evolve`, kept by its index. */
function fillChildRows(
  step: Extract<Step, { kind: 'child' }>,
  items: unknown[],
  children: Target[],
  ctx: FillContext,
  path: string,
): Record<string, unknown> | undefined {
  const target = children[step.child]!;
  const child = ctx.plan.children[step.child]!;
  let outside: Record<string, unknown> | undefined;
  const itemPath = `${path}${step.key}[].`;
  // A loop, not forEach: one closure per list shaped was garbage to collect.
  for (let index = 0; index < items.length; index++) {
    const item = items[index];
    if (item === undefined && !(index in items)) continue;
    if (item === null || typeof item !== 'object' || Array.isArray(item)) {
      if (
        unfit(
          ctx,
          'dataType',
          `${path}${step.key}[]`,
          `field ${step.path}: expected objects in the list, got ${kindOf(item)}`,
        ) === 'evolve'
      )
        (outside ??= newExtra())[index] = item;
      continue;
    }
    const r = target.row;
    target.row++;
    // Parent key and index are written once the record is accepted, `_run_id` and `_loaded_at` by `finish`.
    const childExtra = fill(child.node, item as Record<string, unknown>, target.columns, r, null, ctx, itemPath);
    target.columns[child.width - 3]![r] = childExtra === undefined ? null : extraJson(childExtra, ctx.rejectNul);
  }
  return outside;
}

/** NULL in the columns a step fills (a child step fills none here). */
function clearStep(step: Step, columns: CellValue[][], row: number): void {
  if (step.kind === 'column') columns[step.column]![row] = null;
  else if (step.kind === 'object') for (const column of step.columns) columns[column]![row] = null;
}

/**
 * What the contract does with a field that does not fit: `evolve` and `discard_value` count it
 * and return their mode (the caller keeps the value for `evolve`); `discard_row` and `freeze`
 * reject the record, naming the field and the contract key.
 */
function unfit(ctx: FillContext, scope: 'columns' | 'dataType', field: string, reason: string): ContractMode {
  const mode = ctx.contract[scope];
  if (mode === 'discard_row' || mode === 'freeze')
    throw new ContractRejection(contractReason(reason, scope === 'dataType' ? 'data_type' : 'columns', mode));
  const key = `${field}\t${mode === 'evolve' ? 'kept_in_extra' : 'discarded'}`;
  // Fields outside the schema kept in `_extra` are what evolve always did: not a repair.
  if (scope === 'columns' && mode === 'evolve') return mode;
  ctx.pending.set(key, (ctx.pending.get(key) ?? 0) + 1);
  return mode;
}

/** The batch's repair counts as rows. */
function repairCounts(table: string, repairs: Map<string, number>): RepairCount[] {
  return [...repairs].map(([key, count]) => {
    const [field, change] = key.split('\t') as [string, RepairCount['change']];
    return { table, field, change, count };
  });
}

/** An object for fields outside the schema: without a prototype, so a field named `__proto__` is kept like any other. */
function newExtra(): Record<string, unknown> {
  return Object.create(null) as Record<string, unknown>;
}

/**
 * The hash of a record as received (history mode: an unchanged record adds no version): its JSON with object keys
 * sorted and null members left out. It does not depend on the table's layout, so a new column, a new child table or
 * a field moving from `_extra` to a column of its own adds no version, and neither does another key order.
 */
function rowHash(record: Record<string, unknown>): string {
  return createHash('sha1')
    .update(JSON.stringify(canonical(record)))
    .digest('hex');
}

/** `value` with object keys sorted, null and undefined members dropped, bigints as text and dates as ISO 8601. */
function canonical(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(canonical);
  if (value instanceof Date) return value.toJSON();
  const sorted = newExtra();
  for (const key of Object.keys(value).sort()) {
    const member = (value as Record<string, unknown>)[key];
    if (member !== null && member !== undefined) sorted[key] = canonical(member);
  }
  return sorted;
}

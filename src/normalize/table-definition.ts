import type { z } from 'zod';

// What a stream's table is (its schema, key, write mode and schema contract) and the marks the
// shaping of its records leaves on a row: shared by the normalize stage and every destination.

/** How a stream's rows are written. */
export type WriteMode = 'merge' | 'append' | 'replace' | 'history';

/** A stream's table, derived from its zod schema. */
export interface TableDefinition {
  /** Table name (validated against `^[a-z_][a-z0-9_]{0,62}$`). */
  name: string;
  /** The record schema; its top-level fields become columns, arrays of objects child tables. */
  schema: z.ZodType;
  /** Primary-key fields (required for merge and history; ignored by append). */
  primaryKey: readonly string[];
  /** Write mode. */
  writeMode: WriteMode;
  /** What happens to fields that do not fit (`streams.<name>.schema_contract`). Default: evolve everywhere. */
  contract?: SchemaContract;
}

/**
 * A schema-contract mode, as dlt names them: `evolve` keeps the record and what did not fit (in
 * `_extra`), `discard_value` keeps the record without it, `discard_row` sends the record to
 * `_seedline_rejected`, `freeze` does too and fails the stream's status so someone looks.
 */
export type ContractMode = 'evolve' | 'discard_value' | 'discard_row' | 'freeze';

/** Per stream: `columns` governs fields outside the schema, `data_type` values that do not fit their column, `tables` tables not yet in the destination. */
export interface SchemaContract {
  tables: ContractMode;
  columns: ContractMode;
  dataType: ContractMode;
}

/** The reason of a record the contract rejects: the misfit, then the contract key and mode that refused it. */
export function contractReason(reason: string, key: 'columns' | 'data_type' | 'tables', mode: ContractMode): string {
  return `${reason} (schema_contract.${key}: ${mode})`;
}

/** Whether a rejection's reason is a `freeze` refusal, which fails the stream's status (see {@link contractReason}). */
export function isFrozenRejection(reason: string): boolean {
  return /\(schema_contract\.[a-z_]+: freeze\)$/.test(reason);
}

/** The contract when none is configured: keep every record and everything in it. */
export const EVOLVE: SchemaContract = { tables: 'evolve', columns: 'evolve', dataType: 'evolve' };

/**
 * Values taken out of a record upstream because they did not fit the schema, by field name, set
 * on the object that held them: the record shaper keeps them in that row's `_extra` (evolve).
 */
export const UNFIT = Symbol.for('seedline.unfit');

/**
 * Fields the engine took out of a row upstream, each as `field\tchange` (`kept_in_extra` or
 * `discarded`): counted in `_seedline_repairs` by the record shaper once the row is accepted, so
 * a record that does not load counts no repair.
 */
export const REPAIRED = Symbol.for('seedline.repaired');

/**
 * The partition a row was shaped for, set by the engine on each row it hands to a write, so a
 * row the destination rejects is kept with it (`_seedline_rejected.partition`).
 */
export const PARTITION = Symbol.for('seedline.partition');

/** `kept` over `existing`, objects merged key by key at every depth (two misfits under one group both stay). */
export function mergeKept(existing: unknown, kept: unknown): unknown {
  if (!isObject(existing) || !isObject(kept)) return kept;
  const out = Object.create(null) as Record<string, unknown>;
  for (const key of Object.keys(existing as object)) out[key] = (existing as Record<string, unknown>)[key];
  for (const key of Object.keys(kept as object)) out[key] = mergeKept(out[key], (kept as Record<string, unknown>)[key]);
  return out;
}

/**
 * A repaired record with the values taken out of it (under UNFIT) put back where they were: what
 * the service sent, for a rejection to keep and a history hash to compare.
 */
export function asReceived(record: unknown): unknown {
  const unfit = isObject(record) ? (record as { [UNFIT]?: Record<string, unknown> })[UNFIT] : undefined;
  if (!unfit) return record;
  const whole = mergeKept(record, unfit) as Record<PropertyKey, unknown>;
  // The partition the engine set travels with the record (kept beside a rejection).
  whole[PARTITION] = (record as Record<PropertyKey, unknown>)[PARTITION];
  return whole;
}

function isObject(value: unknown): boolean {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A change made to a record so that it loads, counted per run, table and field (`_seedline_repairs`). */
export interface RepairCount {
  table: string;
  /** Field path in the record, `location.city` or `positions[].title`. */
  field: string;
  /** `kept_in_extra`: the column is NULL and the value as received is in `_extra`; `discarded`: dropped (`discard_value`). */
  change: 'kept_in_extra' | 'discarded';
  count: number;
}

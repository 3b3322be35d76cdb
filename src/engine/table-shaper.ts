import { z } from 'zod';
import { describeIssues, Timestamp } from '../../schemas/common.js';
import {
  EVOLVE,
  PARTITION,
  REPAIRED,
  type ContractMode,
  type RepairCount,
  type SchemaContract,
  type ShapedWrite,
  type TableDefinition,
  type WriteMode,
  type WriteShaping,
} from '../destinations/destination.js';
import type { TableNode } from '../manifest/manifest-schema.js';
import { schemaByName } from '../manifest/schema-registry.js';
import { renderTemplate, type TemplateContext } from '../manifest/template.js';
import { sha256, stableJson } from '../util/stable-json.js';
import { StreamDefinitionError } from './engine-errors.js';
import { relaxSchema, repairRecord } from './record-repair.js';

const WRITE_MODES: readonly WriteMode[] = ['merge', 'append', 'replace', 'history'];

/** A record that failed its schema, with the reason. */
export interface ShapeRejection {
  table: string;
  record: unknown;
  reason: string;
  /** The partition it was shaped for (kept with it, so `rejected retry` can shape it again). Default: none. */
  partition?: Record<string, unknown>;
}

/** Records shaped for one table: valid rows and rejected records. */
export interface ShapedRecords {
  table: TableDefinition;
  rows: Record<string, unknown>[];
  rejected: ShapeRejection[];
  /** Repairs of records that never reach a write (rows a `tables` contract drops), per field. Default: none. */
  repairs?: RepairCount[];
  /** Its valid records shaped for the write already, elsewhere (a worker thread); `rows` is then empty. Default: absent. */
  shaped?: ShapedElsewhere;
}

/** Records shaped for a destination's write off the main thread (`shapeForWrite`), with the way back to them. */
export interface ShapedElsewhere {
  shaping: WriteShaping;
  write: ShapedWrite;
  /** Records shaped. */
  size: number;
  /** Those records, shaped again here: for a write that cannot take the shaped rows as they are. */
  records: () => Record<string, unknown>[];
}

/** `group` with its records in `rows`, however they were shaped. */
export function withRows(group: ShapedRecords): ShapedRecords {
  if (!group.shaped) return group;
  const { shaped, ...rest } = group;
  return { ...rest, rows: shaped.records() };
}

/**
 * Turns a manifest table node into table definitions and shapes API records into rows:
 * validates each record against its schema (lenient: unknown fields kept) and adds the node's
 * columns (`{{ partition.url }}`, `{ hash: […] }`, `{ coalesce: […] }`).
 */
export class TableShaper {
  private readonly definitions = new Map<string, TableDefinition>();
  private readonly relaxed = new Map<string, z.ZodType>();
  private readonly contract: SchemaContract;
  /** The table's name when it has no placeholders, else null. */
  private readonly fixedName: string | null;
  /** The node's added columns, `[column, spec]`. */
  private readonly columns: [string, unknown][];

  constructor(
    private readonly node: TableNode,
    private readonly context: TemplateContext,
  ) {
    this.contract = contractOf((context.options ?? {}) as Record<string, unknown>);
    this.fixedName = typeof node.name === 'string' && !node.name.includes('{{') ? node.name : null;
    this.columns = Object.entries(node.columns);
  }

  /** The table definition for a partition (names may depend on it, e.g. `activity_{{ partition.kind }}`). */
  definitionFor(partition: Record<string, unknown>): TableDefinition {
    // A name without placeholders is one table whatever the partition: no context to build per record.
    if (this.fixedName !== null) {
      const fixed = this.definitions.get(this.fixedName);
      if (fixed) return fixed;
    }
    const ctx = { ...this.context, partition };
    const name = String(renderTemplate(this.node.name, ctx));
    const cached = this.definitions.get(name);
    if (cached) return cached;
    const writeMode = String(renderTemplate(this.node.write_mode, ctx)) as WriteMode;
    if (!WRITE_MODES.includes(writeMode))
      throw new StreamDefinitionError(
        `table ${name}: write_mode "${writeMode}" is not one of ${WRITE_MODES.join(', ')}`,
      );
    const base = schemaByName(String(renderTemplate(this.node.schema, ctx)));
    if (!(base instanceof z.ZodObject))
      throw new StreamDefinitionError(`table ${name}: schema must be an object schema`);
    const added = Object.fromEntries(
      Object.entries(this.node.columns).map(([column, spec]) => [column, columnSchema(spec)]),
    );
    const definition: TableDefinition = {
      name,
      schema: base.extend(added),
      primaryKey: this.node.primary_key,
      writeMode,
      contract: this.contract,
    };
    this.definitions.set(name, definition);
    return definition;
  }

  /**
   * Validates records and adds columns. A record the schema refuses is repaired field by field
   * (`repairRecord`: the field's column NULL, its value kept in `_extra`) unless its key is bad or
   * the contract says otherwise; what cannot load is returned as a rejection, never dropped.
   */
  shape(partition: Record<string, unknown>, records: readonly unknown[]): ShapedRecords {
    const table = this.definitionFor(partition);
    const rows: Record<string, unknown>[] = [];
    const rejected: ShapeRejection[] = [];
    for (const record of records) {
      const withColumns = this.withColumns(record, partition);
      const parsed = table.schema.safeParse(withColumns);
      if (parsed.success) {
        rows.push(withPartition(parsed.data as Record<string, unknown>, partition));
        continue;
      }
      const repaired = repairRecord(
        withColumns,
        parsed.error,
        this.relaxedOf(table),
        table.primaryKey,
        this.contract.dataType,
      );
      if ('reason' in repaired) {
        rejected.push({ table: table.name, record, reason: repaired.reason, partition });
        continue;
      }
      // Counted by the destination's shaper once the row is accepted (a row it rejects counts none).
      const change = this.contract.dataType === 'evolve' ? 'kept_in_extra' : 'discarded';
      (repaired.row as { [REPAIRED]?: string[] })[REPAIRED] = repaired.fields.map((field) => `${field}\t${change}`);
      rows.push(withPartition(repaired.row, partition));
    }
    return { table, rows, rejected };
  }

  private relaxedOf(table: TableDefinition): z.ZodType {
    let relaxed = this.relaxed.get(table.name);
    if (!relaxed) this.relaxed.set(table.name, (relaxed = relaxSchema(table.schema, table.primaryKey)));
    return relaxed;
  }

  /** `record` with the node's added columns rendered over it (the record itself when there are none). */
  private withColumns(record: unknown, partition: Record<string, unknown>): unknown {
    if (this.columns.length === 0 || record === null || typeof record !== 'object') return record;
    const ctx = { ...this.context, partition, record };
    const row: Record<string, unknown> = { ...(record as Record<string, unknown>) };
    for (const [column, spec] of this.columns) row[column] = renderColumn(spec, ctx);
    return row;
  }
}

function renderColumn(spec: unknown, ctx: TemplateContext): unknown {
  if (spec !== null && typeof spec === 'object' && !Array.isArray(spec)) {
    const node = spec as Record<string, unknown>;
    if (Array.isArray(node.hash))
      return sha256(stableJson(node.hash.map((part) => renderTemplate(part, ctx) ?? null))).slice(0, 32);
    if (Array.isArray(node.coalesce)) {
      return node.coalesce.map((part) => renderTemplate(part, ctx)).find((v) => v !== undefined && v !== null) ?? null;
    }
    if ('value' in node) return renderTemplate(node.value, ctx) ?? null;
  }
  const value = renderTemplate(spec, ctx);
  return value === undefined ? null : value;
}

function columnSchema(spec: unknown): z.ZodType {
  const type =
    spec !== null && typeof spec === 'object' && 'type' in spec ? (spec as { type: unknown }).type : undefined;
  if (type === 'timestamp') return Timestamp.nullable();
  return z
    .union([z.string(), z.number().transform(String)])
    .nullable()
    .meta({ sqlType: 'text' });
}

/** The stream's `schema_contract` option (validated by the config schema), evolve where unset. */
function contractOf(options: Record<string, unknown>): SchemaContract {
  const configured = (options.schema_contract ?? {}) as {
    tables?: ContractMode;
    columns?: ContractMode;
    data_type?: ContractMode;
  };
  return {
    tables: configured.tables ?? EVOLVE.tables,
    columns: configured.columns ?? EVOLVE.columns,
    dataType: configured.data_type ?? EVOLVE.dataType,
  };
}

/** The row with the partition it was shaped for (see PARTITION): a row the destination rejects is kept with it. */
function withPartition(row: Record<string, unknown>, partition: Record<string, unknown>): Record<string, unknown> {
  (row as { [PARTITION]?: unknown })[PARTITION] = partition;
  return row;
}

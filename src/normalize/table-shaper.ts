import { z } from 'zod';
import { describeIssues, numberAsText, Timestamp } from '../../schemas/common.js';
import {
  EVOLVE,
  PARTITION,
  REPAIRED,
  type ContractMode,
  type RepairCount,
  type SchemaContract,
  type TableDefinition,
  type WriteMode,
} from './table-definition.js';
import { type ShapedWrite, type WriteShaping } from './record-shaper.js';
import { compileTable, type AddedColumn, type RunScope, type TableTemplate } from '../manifest/components/table.js';
import type { TableNode } from '../manifest/manifest-schema.js';
import { StreamDefinitionError } from '../manifest/manifest-error.js';
import { schemaByName } from '../manifest/schema-registry.js';
import { relaxSchema, repairRecord } from './record-repair.js';
import { compiledParse, UNPARSED } from './compiled-parse.js';

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

/** What a shaper is made from when it is made again elsewhere (a worker thread): plain data. */
export interface ShaperSpec {
  table: TableNode;
  options: Record<string, unknown>;
  run: RunScope;
}

/**
 * Turns a compiled table into table definitions and shapes API records into rows: validates
 * each record against its schema (lenient: unknown fields kept) and adds the table's columns
 * (`{{ partition.url }}`, `{ hash: […] }`, `{ coalesce: […] }`).
 */
export class TableShaper {
  private readonly definitions = new Map<string, TableDefinition>();
  private readonly relaxed = new Map<string, z.ZodType>();
  private readonly contract: SchemaContract;

  constructor(
    private readonly table: TableTemplate,
    private readonly run: RunScope,
  ) {
    this.contract = contractOf(table.contract);
  }

  /** A shaper of a table node compiled with `options` (a stream's table, or a system stream's). */
  static of(node: TableNode, { options, run }: { options: Record<string, unknown>; run: RunScope }): TableShaper {
    return new TableShaper(compileTable(node, options), run);
  }

  /** The shaper a spec describes (in a worker thread: the table compiled again from plain data). */
  static fromSpec(spec: ShaperSpec): TableShaper {
    return TableShaper.of(spec.table, spec);
  }

  /** What makes this shaper again in a worker thread. */
  get spec(): ShaperSpec {
    return { table: this.table.source.node, options: this.table.source.options, run: this.run };
  }

  /** The table definition for a partition (names may depend on it, e.g. `activity_{{ partition.kind }}`). */
  definitionFor(partition: Record<string, unknown>): TableDefinition {
    // A name without placeholders is one table whatever the partition: no context to build per record.
    if (this.table.fixedName !== null) {
      const fixed = this.definitions.get(this.table.fixedName);
      if (fixed) return fixed;
    }
    const name = this.table.nameOf(partition);
    const cached = this.definitions.get(name);
    if (cached) return cached;
    const writeMode = this.table.writeModeOf(partition) as WriteMode;
    if (!WRITE_MODES.includes(writeMode))
      throw new StreamDefinitionError(
        `table ${name}: write_mode "${writeMode}" is not one of ${WRITE_MODES.join(', ')}`,
      );
    const base = schemaByName(this.table.schemaNameOf(partition));
    if (!(base instanceof z.ZodObject))
      throw new StreamDefinitionError(`table ${name}: schema must be an object schema`);
    const added = Object.fromEntries(this.table.addedColumns.map((column) => [column.name, columnSchema(column)]));
    const definition: TableDefinition = {
      name,
      schema: base.extend(added),
      primaryKey: this.table.primaryKey,
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
    const parse = compiledParse(table.schema);
    for (const record of records) {
      const withColumns = this.table.withColumns(record, partition, this.run);
      // The common case, parsed by code generated from the schema; the rest (and every refusal) is zod's.
      const fast = parse(withColumns, withColumns !== record);
      if (fast !== UNPARSED) {
        // The record itself is kept as received (a rejection's); the row is its own object, as zod's output is.
        const row = fast === record ? { ...(record as Record<string, unknown>) } : fast;
        rows.push(withPartition(row as Record<string, unknown>, partition));
        continue;
      }
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
}

function columnSchema(column: AddedColumn): z.ZodType {
  if (column.timestamp) return Timestamp.nullable();
  return z.union([z.string(), numberAsText()]).nullable().meta({ sqlType: 'text' });
}

/** The stream's `schema_contract` option (validated by the config schema), evolve where unset. */
function contractOf(configured: TableTemplate['contract']): SchemaContract {
  return {
    tables: (configured.tables as ContractMode | undefined) ?? EVOLVE.tables,
    columns: (configured.columns as ContractMode | undefined) ?? EVOLVE.columns,
    dataType: (configured.data_type as ContractMode | undefined) ?? EVOLVE.dataType,
  };
}

/** The row with the partition it was shaped for (see PARTITION): a row the destination rejects is kept with it. */
function withPartition(row: Record<string, unknown>, partition: Record<string, unknown>): Record<string, unknown> {
  (row as { [PARTITION]?: unknown })[PARTITION] = partition;
  return row;
}

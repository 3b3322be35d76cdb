import { z } from 'zod';
import { describeIssues, Timestamp } from '../../schemas/common.js';
import type { TableDefinition, WriteMode } from '../destinations/destination.js';
import type { TableNode } from '../manifest/manifest-schema.js';
import { schemaByName } from '../manifest/schema-registry.js';
import { renderTemplate, type TemplateContext } from '../manifest/template.js';
import { sha256, stableJson } from '../util/stable-json.js';
import { StreamDefinitionError } from './engine-errors.js';

const WRITE_MODES: readonly WriteMode[] = ['merge', 'append', 'replace', 'history'];

/** A record that failed its schema, with the reason. */
export interface ShapeRejection {
  table: string;
  record: unknown;
  reason: string;
}

/** Records shaped for one table: valid rows and rejected records. */
export interface ShapedRecords {
  table: TableDefinition;
  rows: Record<string, unknown>[];
  rejected: ShapeRejection[];
}

/**
 * Turns a manifest table node into table definitions and shapes API records into rows:
 * validates each record against its schema (lenient: unknown fields kept) and adds the node's
 * columns (`{{ partition.url }}`, `{ hash: […] }`, `{ coalesce: […] }`).
 */
export class TableShaper {
  private readonly definitions = new Map<string, TableDefinition>();

  constructor(
    private readonly node: TableNode,
    private readonly context: TemplateContext,
  ) {}

  /** The table definition for a partition (names may depend on it, e.g. `activity_{{ partition.kind }}`). */
  definitionFor(partition: Record<string, unknown>): TableDefinition {
    const ctx = { ...this.context, partition };
    const name = String(renderTemplate(this.node.name, ctx));
    const cached = this.definitions.get(name);
    if (cached) return cached;
    const writeMode = String(renderTemplate(this.node.write_mode, ctx)) as WriteMode;
    if (!WRITE_MODES.includes(writeMode)) throw new StreamDefinitionError(`table ${name}: write_mode "${writeMode}" is not one of ${WRITE_MODES.join(', ')}`);
    const base = schemaByName(String(renderTemplate(this.node.schema, ctx)));
    if (!(base instanceof z.ZodObject)) throw new StreamDefinitionError(`table ${name}: schema must be an object schema`);
    const added = Object.fromEntries(Object.entries(this.node.columns).map(([column, spec]) => [column, columnSchema(spec)]));
    const definition: TableDefinition = { name, schema: base.extend(added), primaryKey: this.node.primary_key, writeMode };
    this.definitions.set(name, definition);
    return definition;
  }

  /** Validates records and adds columns; invalid records are returned as rejections, never dropped. */
  shape(partition: Record<string, unknown>, records: readonly unknown[]): ShapedRecords {
    const table = this.definitionFor(partition);
    const rows: Record<string, unknown>[] = [];
    const rejected: ShapeRejection[] = [];
    for (const record of records) {
      const ctx = { ...this.context, partition, record };
      const withColumns =
        record !== null && typeof record === 'object'
          ? { ...(record as Record<string, unknown>), ...this.renderColumns(ctx) }
          : record;
      const parsed = table.schema.safeParse(withColumns);
      if (parsed.success) rows.push(parsed.data as Record<string, unknown>);
      else rejected.push({ table: table.name, record, reason: describeIssues(parsed.error) });
    }
    return { table, rows, rejected };
  }

  private renderColumns(ctx: TemplateContext): Record<string, unknown> {
    return Object.fromEntries(Object.entries(this.node.columns).map(([column, spec]) => [column, renderColumn(spec, ctx)]));
  }
}

function renderColumn(spec: unknown, ctx: TemplateContext): unknown {
  if (spec !== null && typeof spec === 'object' && !Array.isArray(spec)) {
    const node = spec as Record<string, unknown>;
    if (Array.isArray(node.hash)) return sha256(stableJson(node.hash.map((part) => renderTemplate(part, ctx) ?? null))).slice(0, 32);
    if (Array.isArray(node.coalesce)) {
      return node.coalesce.map((part) => renderTemplate(part, ctx)).find((v) => v !== undefined && v !== null) ?? null;
    }
    if ('value' in node) return renderTemplate(node.value, ctx) ?? null;
  }
  const value = renderTemplate(spec, ctx);
  return value === undefined ? null : value;
}

function columnSchema(spec: unknown): z.ZodType {
  const type = spec !== null && typeof spec === 'object' && 'type' in spec ? (spec as { type: unknown }).type : undefined;
  if (type === 'timestamp') return Timestamp.nullable();
  return z.union([z.string(), z.number()]).transform(String).nullable().meta({ sqlType: 'text' });
}

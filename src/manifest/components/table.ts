import { sha256, stableJson } from '../../util/stable-json.js';
import { templateReferences } from '../template.js';
import { compileTemplate, type CompiledTemplate } from '../compiled-template.js';
import type { TableNode } from '../manifest-schema.js';

type Body = Record<string, unknown>;

/** The run a table's added columns may read (`{{ run.id }}`). */
export interface RunScope {
  id: string;
  started_at: string;
}

/** A column a stream adds to every record: its name and whether it holds an instant. */
export interface AddedColumn {
  name: string;
  timestamp: boolean;
}

/** A stream's destination table (a compiled `table` node): names and modes per partition, and the columns it adds. */
export interface TableTemplate {
  /** What it compiled from, plain data: a worker thread compiles it again. */
  readonly source: { node: TableNode; options: Body };
  /** The table's name when no partition changes it, else null. */
  readonly fixedName: string | null;
  readonly primaryKey: readonly string[];
  readonly addedColumns: readonly AddedColumn[];
  /** The stream's `schema_contract` option as configured (unset modes evolve). */
  readonly contract: { tables?: string; columns?: string; data_type?: string };
  /** The table a partition's records load into (`activity_{{ partition.kind }}`). */
  nameOf(partition: Body): string;
  /** Its write mode, as rendered (the shaper checks it is one). */
  writeModeOf(partition: Body): string;
  /** Its record schema's name in the schema registry. */
  schemaNameOf(partition: Body): string;
  /** `record` with the added columns rendered over it (the record itself when there are none). */
  withColumns(record: unknown, partition: Body, run: RunScope): unknown;
}

/** Compiles a `table` node with the stream's options. */
export function compileTable(node: TableNode, options: Body): TableTemplate {
  const bound = { options };
  const name = compileTemplate(node.name, bound);
  const writeMode = compileTemplate(node.write_mode, bound);
  const schema = compileTemplate(node.schema, bound);
  // Columns render per record: their scope (options included) is built once a record, not once a column.
  const columns = Object.entries(node.columns).map(([column, spec]) => [column, compileColumn(spec)] as const);
  return {
    source: { node, options },
    // A name that reads only the options is the same for every partition.
    fixedName: templateReferences(node.name).some((ref) => ref.path[0] === 'partition') ? null : String(name({})),
    primaryKey: node.primary_key,
    addedColumns: Object.entries(node.columns).map(([column, spec]) => ({
      name: column,
      timestamp: isObject(spec) && spec.type === 'timestamp',
    })),
    contract: (options.schema_contract ?? {}) as TableTemplate['contract'],
    nameOf: (partition) => String(name({ partition })),
    writeModeOf: (partition) => String(writeMode({ partition })),
    schemaNameOf: (partition) => String(schema({ partition })),
    withColumns: (record, partition, run) => {
      if (columns.length === 0 || record === null || typeof record !== 'object') return record;
      const scope = { options, partition, record, run };
      const row: Body = { ...(record as Body) };
      for (const [column, render] of columns) row[column] = render(scope);
      return row;
    },
  };
}

/** An added column: `{ hash: […] }`, `{ coalesce: […] }`, `{ value: … }`, or a template; absent renders as null. */
function compileColumn(spec: unknown): CompiledTemplate {
  if (isObject(spec)) {
    if (Array.isArray(spec.hash)) {
      const parts = spec.hash.map((part) => compileTemplate(part));
      return (scope) => sha256(stableJson(parts.map((part) => part(scope) ?? null))).slice(0, 32);
    }
    if (Array.isArray(spec.coalesce)) {
      const parts = spec.coalesce.map((part) => compileTemplate(part));
      return (scope) => {
        for (const part of parts) {
          const value = part(scope);
          if (value !== undefined && value !== null) return value;
        }
        return null;
      };
    }
    if ('value' in spec) {
      const value = compileTemplate(spec.value);
      return (scope) => value(scope) ?? null;
    }
  }
  const value = compileTemplate(spec);
  return (scope) => value(scope) ?? null;
}

function isObject(value: unknown): value is Body {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

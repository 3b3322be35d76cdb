import {
  childKeyColumns,
  childShape,
  parentShape,
  tableLayout,
  type LogicalType,
  type TableShape,
} from '../normalize/table-layout.js';
import { TableShaper } from '../normalize/table-shaper.js';
import { compileStream } from '../manifest/compile-stream.js';
import type { StreamManifest } from '../manifest/manifest-schema.js';
import { TRIGGER_COLUMNS } from '../destinations/destination.js';

/** One table a sync creates (what `seedline schema` prints and `airbyte discover` offers). */
export interface TableReport {
  stream: string;
  table: string;
  primaryKey: readonly string[];
  writeMode: string;
  columns: { name: string; type: LogicalType; sqlType: string }[];
  /** The child table's parent, for child tables. Default: none. */
  parent?: string;
}

/** The tables a sync of the configured streams creates, child tables and partition expansions included, in config order. */
export function configuredTables(
  manifests: ReadonlyMap<string, StreamManifest>,
  streams: Record<string, Record<string, unknown> | undefined>,
  sqlType: (type: LogicalType) => string,
): TableReport[] {
  return Object.keys(streams).flatMap((name) => tablesOf(manifests.get(name), streams[name] ?? {}, sqlType));
}

/** The tables of one stream: one per partition expansion that names a table (`activity_{{ partition.kind }}`), each with its child tables. */
function tablesOf(
  manifest: StreamManifest | undefined,
  options: Record<string, unknown>,
  sqlType: (type: LogicalType) => string,
): TableReport[] {
  if (!manifest) return [];
  const stream = compileStream(manifest, options);
  const shaper = new TableShaper(stream.table, { id: 'schema', started_at: new Date(0).toISOString() });
  const seen = new Set<string>();
  return stream.partitions.expansions().flatMap((partition) => {
    const definition = shaper.definitionFor(partition);
    if (seen.has(definition.name)) return [];
    seen.add(definition.name);
    const layout = tableLayout(definition);
    const report = (shape: TableShape, parent?: string): TableReport => ({
      stream: manifest.name,
      table: shape.name,
      // A child row is known by its parent's key and its place in the list.
      primaryKey: parent ? [...childKeyColumns(layout).map((c) => c.name), '_index'] : definition.primaryKey,
      writeMode: definition.writeMode,
      columns: shape.columns.map((c) => ({ name: c.name, type: c.type, sqlType: sqlType(c.type) })),
      ...(parent ? { parent } : {}),
    });
    const parent = parentShape(layout);
    // Rows a Trigger wrote into carry which one (refresh on change).
    if (stream.kind === 'batch' && Object.keys(stream.changeRefresh?.apply ?? {}).length > 0)
      parent.columns.push(...TRIGGER_COLUMNS);
    return [report(parent), ...layout.children.map((child) => report(childShape(layout, child), layout.name))];
  });
}

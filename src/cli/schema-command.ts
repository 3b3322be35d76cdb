import type { Command } from 'commander';
import { Option } from 'commander';
import { loadConfig } from '../config/load-config.js';
import { quoteIdentifier } from '../destinations/destination.js';
import { duckDbTypeMapper } from '../destinations/duckdb/duckdb-type-mapper.js';
import { postgresTypeMapper } from '../destinations/postgres/postgres-type-mapper.js';
import { childShape, parentShape, tableLayout, type TableShape } from '../destinations/table-layout.js';
import { TableShaper } from '../engine/table-shaper.js';
import { loadManifests } from '../manifest/load-manifests.js';
import type { StreamManifest } from '../manifest/manifest-schema.js';
import { renderTemplate } from '../manifest/template.js';
import { writeJson } from './json-output.js';
import { runCommand } from './run-command.js';

/** One table a sync creates, as `seedline schema` prints it. */
interface TableReport {
  stream: string;
  table: string;
  primaryKey: readonly string[];
  writeMode: string;
  columns: { name: string; type: string; sqlType: string }[];
  /** The child table's parent, for child tables. Default: none. */
  parent?: string;
}

/**
 * `seedline schema`: the tables a sync of the config creates (child tables included), with their
 * columns in the destination's own SQL types; `--format sql` as the create statements. Reads the
 * config and the stream manifests only: no destination is opened, no call is made.
 */
export function registerSchemaCommand(program: Command): void {
  program
    .command('schema')
    .description("Print the tables a sync of the config creates, with the destination's SQL types (no destination is opened)")
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .addOption(new Option('--format <format>', 'json or sql').choices(['json', 'sql']).default('json'))
    .action((opts: { config: string; format: 'json' | 'sql' }) =>
      runCommand(async () => {
        const { config } = await loadConfig(opts.config);
        const mapper = config.destination.type === 'postgres' ? postgresTypeMapper : duckDbTypeMapper;
        const manifests = await loadManifests();
        const streams = config.streams as Record<string, Record<string, unknown> | undefined>;
        const tables = Object.keys(streams).flatMap((name) => tablesOf(manifests.get(name), streams[name] ?? {}, (type) => mapper.sqlType(type as never)));
        if (opts.format === 'json') writeJson(tables);
        else process.stdout.write(`${tables.map((t) => createStatement(config.destination.schema ?? 'seedline', t)).join('\n\n')}\n`);
      }),
    );
}

/** The tables of one stream: one per partition expansion that names a table (`activity_{{ partition.kind }}`), each with its child tables. */
function tablesOf(manifest: StreamManifest | undefined, options: Record<string, unknown>, sqlType: (type: string) => string): TableReport[] {
  if (!manifest) return [];
  const shaper = new TableShaper(manifest.table, { options, run: { id: 'schema', started_at: new Date(0).toISOString() } });
  const seen = new Set<string>();
  return expansions(manifest, options).flatMap((partition) => {
    const definition = shaper.definitionFor(partition);
    if (seen.has(definition.name)) return [];
    seen.add(definition.name);
    const layout = tableLayout(definition);
    const report = (shape: TableShape, parent?: string): TableReport => ({
      stream: manifest.name,
      table: shape.name,
      primaryKey: parent ? [] : definition.primaryKey,
      writeMode: definition.writeMode,
      columns: shape.columns.map((c) => ({ name: c.name, type: c.type, sqlType: sqlType(c.type) })),
      ...(parent ? { parent } : {}),
    });
    return [report(parentShape(layout)), ...layout.children.map((child) => report(childShape(layout, child), layout.name))];
  });
}

/** The partitions' expanded values (`expand: { kind: "{{ options.kinds }}" }` → one per kind); one empty partition otherwise. */
function expansions(manifest: StreamManifest, options: Record<string, unknown>): Record<string, unknown>[] {
  const expand = (manifest.partitions as { expand?: Record<string, unknown> } | undefined)?.expand ?? {};
  let partitions: Record<string, unknown>[] = [{}];
  for (const [name, template] of Object.entries(expand)) {
    const values = renderTemplate(template, { options });
    partitions = partitions.flatMap((p) => (Array.isArray(values) ? values : [values]).map((value) => ({ ...p, [name]: value })));
  }
  return partitions;
}

function createStatement(schema: string, table: TableReport): string {
  const columns = table.columns.map((c) => `  ${quoteIdentifier(c.name, 'column')} ${c.sqlType}`);
  const key = table.primaryKey.length > 0 && table.writeMode === 'merge' ? [`  primary key (${table.primaryKey.map((k) => quoteIdentifier(k, 'column')).join(', ')})`] : [];
  return `create table if not exists ${quoteIdentifier(schema, 'schema')}.${quoteIdentifier(table.table, 'table')} (\n${[...columns, ...key].join(',\n')}\n);`;
}

import { loadConfig } from '../config/load-config.js';
import { quoteIdentifier } from '../destinations/identifiers.js';
import { duckDbTypeMapper } from '../destinations/duckdb/duckdb-type-mapper.js';
import { postgresTypeMapper } from '../destinations/postgres/postgres-type-mapper.js';
import { loadManifests } from '../manifest/load-manifests.js';
import { writeJson } from './json-output.js';
import { configuredTables, type TableReport } from './stream-tables.js';

/** Prints the tables a sync of the config creates, as JSON or as create statements in the destination's SQL types. */
export async function schemaAction(opts: { config: string; format: 'json' | 'sql' }): Promise<void> {
  const { config } = await loadConfig(opts.config);
  const mapper = config.destination.type === 'postgres' ? postgresTypeMapper : duckDbTypeMapper;
  const manifests = await loadManifests(config);
  const streams = config.streams as Record<string, Record<string, unknown> | undefined>;
  const tables = configuredTables(manifests, streams, (type) => mapper.sqlType(type));
  if (opts.format === 'json') writeJson(tables);
  else
    process.stdout.write(
      `${tables.map((t) => createStatement(config.destination.schema ?? 'seedline', t)).join('\n\n')}\n`,
    );
}

function createStatement(schema: string, table: TableReport): string {
  const columns = table.columns.map((c) => `  ${quoteIdentifier(c.name, 'column')} ${c.sqlType}`);
  const key =
    !table.parent && table.primaryKey.length > 0 && table.writeMode === 'merge'
      ? [`  primary key (${table.primaryKey.map((k) => quoteIdentifier(k, 'column')).join(', ')})`]
      : [];
  return `create table if not exists ${quoteIdentifier(schema, 'schema')}.${quoteIdentifier(table.table, 'table')} (\n${[...columns, ...key].join(',\n')}\n);`;
}

import { knownEndpoint } from '../client/endpoints.js';
import type { Manifests } from '../manifest/load-manifests.js';
import type { StreamManifest } from '../manifest/manifest-schema.js';
import { renderTemplate, wholeOption } from '../manifest/template.js';
import { parentShape, tableLayout } from '../destinations/table-layout.js';
import { closestName } from '../util/closest-name.js';
import { DestinationError, InvalidIdentifierError } from '../destinations/destination-error.js';
import { TableShaper } from './table-shaper.js';
import { StreamDefinitionError } from './engine-errors.js';
import { parentNodes, resolvePartitions, type Partition, type PartitionContext } from './partitions.js';

/** Stands in for a value only a run knows (a seed from a file, a parent row): any text the endpoint takes. */
const PLACEHOLDER = 'https://www.network.example/in/placeholder';

/**
 * Problems a sync would meet only at run time, found when the config loads: each configured
 * stream's request is rendered for its partitions (the config's own values: searches, headcount
 * entries, options; a placeholder where only a run knows the value) and checked against the body
 * the client would send to a known endpoint. One `key: message` line per refused request, the key
 * naming the config entry it came from (`streams.people_search.searches[1]`). The tables each
 * partition loads into are laid out too: a table, column or child-table name no destination takes,
 * or a parent column the configured parent stream never writes, is found here, not after the
 * first answers were paid for.
 */
export async function requestProblems(
  config: { streams: Record<string, Record<string, unknown> | undefined>; seeds: Record<string, unknown> },
  manifests: Manifests,
): Promise<string[]> {
  const problems: string[] = [];
  /** Columns of the tables the configured streams load, by table. */
  const columnsOf = new Map<string, Set<string>>();
  for (const [name, options] of Object.entries(config.streams)) {
    const manifest = manifests.get(name);
    if (!manifest || !options) continue;
    const partitions = await resolvePartitions(manifest.partitions, placeholderContext(options, config.seeds));
    const tables = new TableShaper(manifest.table, {
      options,
      run: { id: 'check', started_at: new Date(0).toISOString() },
    });
    for (const [index, partition] of partitions.entries()) {
      const problem = refusal(manifest, options, partition) ?? tableProblem(tables, partition, columnsOf);
      if (problem) problems.push(`${keyOf(manifest, name, index)}: ${problem}`);
    }
  }
  for (const [name, options] of Object.entries(config.streams)) {
    const manifest = manifests.get(name);
    if (manifest && options) problems.push(...parentColumnProblems(manifest, name, columnsOf));
  }
  return [...new Set(problems)];
}

/** Partitions from the config's own values; a seed list or parent table gives one placeholder row. */
function placeholderContext(options: Record<string, unknown>, seeds: Record<string, unknown>): PartitionContext {
  const seedLists = Object.fromEntries(
    Object.entries(seeds).map(([key, value]) => [
      key,
      Array.isArray(value) && key === 'headcount' ? value : [PLACEHOLDER],
    ]),
  );
  const readTable = async (_table: string, columns: readonly string[]) => [
    Object.fromEntries(columns.map((column) => [column, PLACEHOLDER])),
  ];
  return { options, seeds: seedLists, readTable, now: new Date() };
}

/** Why the table of this partition could not be made (a name no destination takes, a bad write mode or schema); undefined when it can. */
function tableProblem(
  tables: TableShaper,
  partition: Partition,
  columnsOf: Map<string, Set<string>>,
): string | undefined {
  try {
    const layout = tableLayout(tables.definitionFor(partition.values));
    columnsOf.set(layout.name, new Set(parentShape(layout).columns.map((column) => column.name)));
    return undefined;
  } catch (error) {
    if (!(error instanceof DestinationError || error instanceof StreamDefinitionError)) throw error;
    // A name made from a seed or parent value only a run knows is checked by the load, not against the placeholder.
    if (error instanceof InvalidIdentifierError && error.identifier.includes(PLACEHOLDER)) return undefined;
    return `the stream's manifest (table): ${error.message}`;
  }
}

/** Columns a stream reads from a parent table that the configured stream loading that table never writes. */
function parentColumnProblems(manifest: StreamManifest, name: string, columnsOf: Map<string, Set<string>>): string[] {
  const parents = parentNodes(manifest.partitions);
  return parents.flatMap((parent) => {
    const columns = columnsOf.get(parent.table);
    if (!columns) return [];
    return parent.columns
      .filter((column) => !columns.has(column))
      .map((column) => {
        const close = closestName(column, columns);
        return `streams.${name}: the stream's manifest (partitions): table ${parent.table} has no column "${column}"${close ? ` (did you mean "${close}"?)` : ''}`;
      });
  });
}

/** Why the service (or the client, first) would refuse this partition's request; undefined when it would not, or the endpoint is not one the client knows. */
function refusal(manifest: StreamManifest, options: Record<string, unknown>, partition: Partition): string | undefined {
  const context = { partition: partition.values, options, state: {}, page: { number: 1 } };
  const route =
    manifest.type === 'batch'
      ? manifest.single && {
          method: 'POST',
          path: manifest.single.path,
          body: renderTemplate(manifest.params, context),
        }
      : {
          method: manifest.request.method,
          path: renderTemplate(manifest.request.path, context),
          body: renderTemplate(manifest.request.body ?? manifest.request.query ?? {}, context),
        };
  if (!route || typeof route.path !== 'string') return undefined;
  const endpoint = knownEndpoint(route.method, route.path);
  if (!endpoint?.bodySchema) return undefined;
  const body = endpoint.prepare ? endpoint.prepare({ ...(route.body as Record<string, unknown>) }) : route.body;
  const checked = endpoint.bodySchema.safeParse(body);
  if (checked.success) return undefined;
  const issues = checked.error.issues.map(
    (issue) => `${issue.path.length > 0 ? `${issue.path.join('.')}: ` : ''}${issue.message}`,
  );
  return `the service would refuse the request ${route.method} ${route.path} this asks (${issues.join('; ')}): check the stream's options`;
}

/** The config key a partition comes from: the list entry of a `{{ options.x }}` list, else the stream. */
function keyOf(manifest: StreamManifest, name: string, index: number): string {
  const node = manifest.partitions;
  const option = node.type === 'list' ? wholeOption(node.values) : undefined;
  return option ? `streams.${name}.${option}[${index}]` : `streams.${name}`;
}

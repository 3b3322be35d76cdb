import { knownEndpoint } from '../client/endpoints.js';
import { parentShape, tableLayout } from '../normalize/table-layout.js';
import { DestinationError, InvalidIdentifierError } from '../destinations/destination-error.js';
import type { Partition, PartitionContext } from '../manifest/components/partitions.js';
import { compileStreams, entriesSources, type CompiledStream } from '../manifest/compile-stream.js';
import type { Manifests } from '../manifest/load-manifests.js';
import { StreamDefinitionError } from '../manifest/manifest-error.js';
import { TableShaper } from '../normalize/table-shaper.js';
import { closestName } from '../util/closest-name.js';

/** Stands in for a value only a run knows (a seed from a file, a parent row): any text the endpoint takes. */
const PLACEHOLDER = 'https://www.network.example/in/placeholder';

/**
 * Problems a sync would meet only at run time, found when the config loads: each configured
 * stream is compiled with its options, and its request rendered for its partitions (the config's own values: searches, headcount
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
  const streams = compileStreams(manifests, config.streams);
  const entries = entriesSources(manifests);
  for (const stream of streams.values()) {
    const partitions = await stream.partitions.resolve(placeholderContext(config.seeds, entries));
    const tables = new TableShaper(stream.table, { id: 'check', started_at: new Date(0).toISOString() });
    for (const [index, partition] of partitions.entries()) {
      const problem = refusal(stream, partition) ?? tableProblem(tables, partition, columnsOf);
      if (problem) problems.push(`${keyOf(stream, index)}: ${problem}`);
    }
  }
  for (const stream of streams.values()) problems.push(...parentColumnProblems(stream, columnsOf));
  return [...new Set(problems)];
}

/** Partitions from the config's own values; a seed list or parent table gives one placeholder row. */
function placeholderContext(seeds: Record<string, unknown>, entries: ReadonlySet<string>): PartitionContext {
  // Entries the config writes out are checked as written (none when empty); a seed list's values only a run reads.
  const seedLists = Object.fromEntries(
    Object.entries(seeds).map(([key, value]) => [key, entries.has(key) ? value : [PLACEHOLDER]]),
  );
  const readTable = async (_table: string, columns: readonly string[]) => [
    Object.fromEntries(columns.map((column) => [column, PLACEHOLDER])),
  ];
  return { seeds: seedLists, readTable, now: new Date() };
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
function parentColumnProblems(stream: CompiledStream, columnsOf: Map<string, Set<string>>): string[] {
  return stream.partitions.parents.flatMap((parent) => {
    const columns = columnsOf.get(parent.table);
    if (!columns) return [];
    return parent.columns
      .filter((column) => !columns.has(column))
      .map((column) => {
        const close = closestName(column, columns);
        return `streams.${stream.name}: the stream's manifest (partitions): table ${parent.table} has no column "${column}"${close ? ` (did you mean "${close}"?)` : ''}`;
      });
  });
}

/** Why the service (or the client, first) would refuse this partition's request; undefined when it would not, or the endpoint is not one the client knows. */
function refusal(stream: CompiledStream, partition: Partition): string | undefined {
  const route = routeOf(stream, partition);
  if (!route) return undefined;
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

/** The request a partition's first call sends, as the run would render it; undefined when it has no endpoint to check. */
function routeOf(
  stream: CompiledStream,
  partition: Partition,
): { method: string; path: string; body: unknown } | undefined {
  if (stream.kind === 'batch') {
    const path = stream.items.singlePath;
    return path === undefined ? undefined : { method: 'POST', path, body: stream.items.paramsOf(partition) };
  }
  const { requester } = stream;
  let path: string;
  try {
    path = requester.pathOf(partition);
  } catch (error) {
    if (error instanceof StreamDefinitionError) return undefined;
    throw error;
  }
  return { method: requester.method, path, body: requester.argsOf(partition, {}, { number: 1 }) };
}

/** The config key a partition comes from: the list entry of a `{{ options.x }}` list, else the stream. */
function keyOf(stream: CompiledStream, index: number): string {
  const option = stream.partitions.listOption;
  return option ? `streams.${stream.name}.${option}[${index}]` : `streams.${stream.name}`;
}

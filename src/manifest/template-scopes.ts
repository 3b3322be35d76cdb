import { closestName } from '../util/closest-name.js';
import type {
  BatchStreamNode,
  PartitionNode,
  RequestStreamNode,
  StreamManifest,
  TableNode,
} from './manifest-schema.js';
import { templateReferences, wholeOption } from './template.js';

/** The fields a template may read under one name: these (anything below them goes), or `any`. */
type Fields = ReadonlySet<string> | 'any';

/** What the templates of one place in a manifest may read: each name and its fields. */
type Scope = Readonly<Record<string, Fields>>;

/** A template that reads something its place does not give it. */
export interface TemplateProblem {
  /** Key path of the template in the manifest (`request.body.keywords`). */
  keys: readonly (string | number)[];
  message: string;
}

const ANY = 'any' as const;
/** Options every stream takes besides those its manifest declares. */
const COMMON_OPTIONS = ['schema_contract'];
/** What `state` holds for a request's arguments: the last pass's newest stamp, days since it. */
const STATE_FIELDS = new Set(['newest', 'days_since_last']);
/** What `page` holds for a request's arguments. */
const PAGE_FIELDS = new Set(['number', 'token', 'cursor', 'newest']);
const RUN_FIELDS = new Set(['id', 'started_at']);

/**
 * Checks every `{{ … }}` of a manifest against what its place gives it: the stream's declared
 * options, the fields its partitions provide (a parent's columns, a seed list's `as`, a search's
 * item properties…), the call's arguments, the run. A typo there would otherwise render as
 * nothing and change a paid request without a word; here it is a problem naming the key.
 */
export function templateProblems(manifest: StreamManifest): TemplateProblem[] {
  const options = new Set([...Object.keys(manifest.options), ...COMMON_OPTIONS]);
  const partition = partitionFields(manifest.partitions, manifest);
  // A seed source is read by name only as entries the config writes out (`seeds: { x: { entries: … } }`): a seed
  // list (a file, a query) is read in chunks by a `type: seeds` node, never whole into a template.
  const entries = Object.entries(manifest.seeds).filter(([, declared]) => declared.entries !== undefined);
  const config = { options, seeds: new Set(entries.map(([name]) => name)) } satisfies Scope;
  const sites: [unknown, (string | number)[], Scope][] = [
    [manifest.refresh_after, ['refresh_after'], { options }],
    ...partitionSites(manifest.partitions, ['partitions'], manifest, config),
    ...tableSites(manifest.table, { options, partition }),
    ...(manifest.type === 'batch'
      ? batchSites(manifest, options, partition)
      : requestSites(manifest, options, partition)),
  ];
  return sites.flatMap(([template, keys, scope]) =>
    templateReferences(template, keys).flatMap((reference) => {
      const message = problemOf(reference.path, scope);
      return message ? [{ keys: reference.at, message }] : [];
    }),
  );
}

function batchSites(
  manifest: BatchStreamNode,
  options: Fields,
  partition: Fields,
): [unknown, (string | number)[], Scope][] {
  const args = new Set(Object.keys(manifest.params));
  return [
    [manifest.params, ['params'], { partition, options }],
    [manifest.cost.results, ['cost', 'results'], { args }],
  ];
}

function requestSites(
  manifest: RequestStreamNode,
  options: Fields,
  partition: Fields,
): [unknown, (string | number)[], Scope][] {
  const { request, paginator, cap } = manifest;
  const args = argumentFields(manifest);
  const sites: [unknown, (string | number)[], Scope][] = [
    [request.path, ['request', 'path'], { partition, options }],
    [request.body, ['request', 'body'], { partition, options, state: STATE_FIELDS, page: PAGE_FIELDS }],
    [request.query, ['request', 'query'], { partition, options, state: STATE_FIELDS, page: PAGE_FIELDS }],
    [manifest.batch?.operation, ['batch', 'operation'], { partition, options }],
    [manifest.batch?.failed_items_billed, ['batch', 'failed_items_billed'], { partition, options }],
    [manifest.cost.results, ['cost', 'results'], { args }],
    [manifest.records, ['records'], { partition }],
    [manifest.typical?.records, ['typical', 'records'], { options, partition }],
  ];
  if (paginator.type === 'page_token')
    sites.push([paginator.max_pages, ['paginator', 'max_pages'], { options, partition }]);
  if (cap.type !== 'none') {
    sites.push([cap.at, ['cap', 'at'], { args, options }]);
    sites.push([cap.notice, ['cap', 'notice'], { partition, args, count: ANY }]);
  }
  const field = manifest.incremental.type === 'none' ? undefined : manifest.incremental.field;
  if (field && !Array.isArray(field) && typeof field === 'object')
    sites.push([field.by, ['incremental', 'field', 'by'], { partition }]);
  return sites;
}

/** A table's name, schema and write mode depend on the partition at most (the plan names tables before a run); its columns also read the record and the run. */
function tableSites(table: TableNode, scope: Scope): [unknown, (string | number)[], Scope][] {
  return [
    [table.name, ['table', 'name'], scope],
    [table.schema, ['table', 'schema'], scope],
    [table.write_mode, ['table', 'write_mode'], scope],
    [table.columns, ['table', 'columns'], { ...scope, record: ANY, run: RUN_FIELDS }],
  ];
}

function partitionSites(
  node: PartitionNode,
  keys: (string | number)[],
  manifest: StreamManifest,
  config: Scope,
): [unknown, (string | number)[], Scope][] {
  const sites: [unknown, (string | number)[], Scope][] = 'when' in node ? [[node.when, [...keys, 'when'], config]] : [];
  switch (node.type) {
    case 'union':
      return node.of.flatMap((child, index) => partitionSites(child, [...keys, 'of', index], manifest, config));
    case 'parent':
      return [
        ...sites,
        [node.key, [...keys, 'key'], { row: new Set(node.columns) }],
        [node.expand, [...keys, 'expand'], { options: config.options! }],
      ];
    case 'list':
      return [
        ...sites,
        [node.values, [...keys, 'values'], config],
        // A list's key reads the item as it is: a scalar item has no fields (`{{ item }}`), unlike `partition.value`.
        [node.key, [...keys, 'key'], { item: withoutValue(listItemFields(node, manifest)) }],
      ];
    case 'months':
      return [...sites, [node.count, [...keys, 'count'], { options: config.options! }]];
    case 'single':
      return [...sites, [node.values, [...keys, 'values'], config]];
    case 'seeds':
      return sites;
  }
}

/** The fields a stream's partitions give `partition.*` (every branch's of a union). */
function partitionFields(node: PartitionNode, manifest: StreamManifest): Fields {
  switch (node.type) {
    case 'union': {
      const branches = node.of.map((child) => partitionFields(child, manifest));
      return branches.includes(ANY) ? ANY : new Set(branches.flatMap((fields) => [...fields]));
    }
    case 'seeds':
      return new Set(['key', 'seed', node.as]);
    case 'parent':
      return new Set(['key', ...node.columns, ...Object.keys(node.expand ?? {})]);
    case 'list': {
      const item = listItemFields(node, manifest);
      return item === ANY ? ANY : new Set(['key', ...item]);
    }
    case 'months':
      return new Set(['key', 'from', 'to']);
    case 'single':
      return new Set(['key', ...Object.keys(node.values ?? {})]);
  }
}

/**
 * The fields of a list partition's items: the properties its option's items declare when the list
 * is one option (`{{ options.searches }}`), `value` when they are not objects; else anything.
 */
function listItemFields(node: Extract<PartitionNode, { type: 'list' }>, manifest: StreamManifest): Fields {
  const option = wholeOption(node.values);
  const items = option ? (manifest.options[option]?.items as Record<string, unknown> | undefined) : undefined;
  if (!items) return ANY;
  if (items.properties && typeof items.properties === 'object')
    return items.additionalProperties === false ? new Set(Object.keys(items.properties)) : ANY;
  return items.type === 'object' || items.type === undefined ? ANY : new Set(['value']);
}

/** The fields of a scalar list item as the item itself: none (it is read whole). */
function withoutValue(fields: Fields): Fields {
  return fields !== ANY && fields.size === 1 && fields.has('value') ? new Set() : fields;
}

/** The arguments of a request stream's call: its body's or query's keys, and the page token's. */
function argumentFields(manifest: RequestStreamNode): Fields {
  const args = manifest.request.body ?? manifest.request.query ?? {};
  if (args === null || typeof args !== 'object' || Array.isArray(args) || '$switch' in args) return ANY;
  const paging = manifest.paginator.type === 'page_token' ? ['page', 'pagination_token'] : [];
  return new Set([...Object.keys(args), ...paging]);
}

/** What is wrong with reading `path` in `scope`; undefined when it is fine. */
function problemOf(path: readonly string[], scope: Scope): string | undefined {
  const [name, field] = path;
  const names = Object.keys(scope);
  const fields = name === undefined ? undefined : scope[name];
  if (fields === undefined)
    return `{{ ${path.join('.')} }}: nothing named "${name}" can be read here (${list(names)})${didYouMean(name!, names)}`;
  if (field === undefined || fields === ANY || fields.has(field)) return undefined;
  return `{{ ${path.join('.')} }}: ${name} has no "${field}" here (${list([...fields])})${didYouMean(field, fields)}`;
}

function list(names: readonly string[]): string {
  return names.length === 0 ? 'nothing can be read' : `it may read: ${[...names].sort().join(', ')}`;
}

function didYouMean(unknown: string, known: Iterable<string>): string {
  const close = closestName(unknown, known);
  return close ? `; did you mean "${close}"?` : '';
}

import { parseDuration } from '../util/duration.js';
import { compileTemplate } from './compiled-template.js';
import { compileCap, type Cap } from './components/caps.js';
import { compileIncremental, type IncrementalRule } from './components/incremental.js';
import { compilePaginator, type Paginator } from './components/paginators.js';
import { compilePartitions, type PartitionCompileContext, type PartitionSource } from './components/partitions.js';
import {
  compileBatchItems,
  compileCost,
  compileRequester,
  type BatchItems,
  type CallCost,
  type Requester,
} from './components/requester.js';
import { compileTable, type TableTemplate } from './components/table.js';
import { compileTypical, type TypicalRecords } from './components/typical.js';
import type { BatchStreamNode, RefreshOnChangeNode, RequestStreamNode, StreamManifest } from './manifest-schema.js';
import type { SeedKind } from '../util/seed-keys.js';
import { seedKindsOfTables, seedSources } from './seed-sources.js';

type Options = Record<string, unknown>;

/** What every compiled stream has. */
interface StreamParts {
  name: string;
  description: string | undefined;
  /** Streams whose tables this one reads (run first when both are selected). */
  dependsOn: readonly string[];
  /** Its options from the config (`streams.<name>`), defaults applied; bound into every component. */
  options: Options;
  /** Units fetched within this many ms are skipped; undefined: always fetched. */
  refreshAfterMs: number | undefined;
  partitions: PartitionSource;
  table: TableTemplate;
  /** What a call (a request stream's page, a batch item) costs. */
  cost: CallCost;
}

/** A stream fed by batch jobs, one item per seed. */
export interface CompiledBatchStream extends StreamParts {
  kind: 'batch';
  items: BatchItems;
  /** Refresh on change, when its manifest declares it and its option is set; undefined: by age only. */
  changeRefresh: ChangeRefresh | undefined;
}

/** How Signals and their Triggers make a batch stream's seeds due (its manifest's `refresh_on_change`). */
export interface ChangeRefresh {
  /** How long a watched seed stays fresh without a Trigger, in ms. */
  watchedRefreshMs: number;
  /** Target type of the watching Signals. */
  signalTarget: string;
  /** The target's field that holds the seed. */
  targetField: string;
  /** The seed kind the target's value is keyed as. */
  seedKind: SeedKind;
  /** Diff fields that make a watched seed due. */
  fields: readonly string[];
  /** Diff fields written into the stream's table from a Trigger at no cost: diff field → column. */
  apply: Readonly<Record<string, string>>;
}

/** A stream fed by direct calls, per partition, page by page. */
export interface CompiledRequestStream extends StreamParts {
  kind: 'request';
  /** Whether its pages go as items of batch jobs (`via: batch` and a batch operation), else as single calls. */
  pagesAsBatchItems: boolean;
  requester: Requester;
  paginator: Paginator;
  incremental: IncrementalRule;
  cap: Cap;
  /** The records a partition usually holds, when its manifest says: what a plan expects a first pass to read. */
  typicalRecords: TypicalRecords;
  /** How long (ms) the service keeps the stream's records; undefined: kept forever. */
  retentionMs: number | undefined;
}

/**
 * A stream manifest compiled with its options into typed components: what `plan`, the config
 * checks, `schema` and the run all use, so what is checked and priced is exactly what runs. The
 * engine runs these components; it never renders a template or reads a manifest node.
 */
export type CompiledStream = CompiledBatchStream | CompiledRequestStream;

/** What compiling a stream may know of the other manifests (how their tables' rows are keyed). */
export type CompileContext = PartitionCompileContext;

const compilers = {
  batch: (manifest: BatchStreamNode, options: Options, context: CompileContext): CompiledBatchStream => ({
    kind: 'batch',
    ...parts(manifest, options, context),
    items: compileBatchItems(manifest, options),
    changeRefresh: compileChangeRefresh(manifest.refresh_on_change, options),
  }),
  request: (manifest: RequestStreamNode, options: Options, context: CompileContext): CompiledRequestStream => ({
    kind: 'request',
    ...parts(manifest, options, context),
    pagesAsBatchItems: options.via === 'batch' && manifest.batch !== undefined,
    requester: compileRequester(manifest.name, manifest, options),
    paginator: compilePaginator(manifest.paginator, options),
    incremental: compileIncremental(manifest.incremental, manifest.name),
    cap: compileCap(manifest.cap, options, manifest.name),
    typicalRecords: compileTypical(manifest.typical, options, manifest.name),
    retentionMs: manifest.retention === undefined ? undefined : parseDuration(manifest.retention),
  }),
} satisfies {
  [T in StreamManifest['type']]: (
    m: Extract<StreamManifest, { type: T }>,
    o: Options,
    c: CompileContext,
  ) => CompiledStream;
};

/** Compiles one manifest with the stream's options (the config's `streams.<name>`, defaults applied). */
export function compileStream(
  manifest: StreamManifest,
  options: Options,
  context: CompileContext = {},
): CompiledStream {
  const compile = compilers[manifest.type] as (m: StreamManifest, o: Options, c: CompileContext) => CompiledStream;
  return compile(manifest, options, context);
}

/** The seed sources whose seeds the config writes out as entries (`entries:` declared): taken as written, never opened as a seed list. */
export function entriesSources(manifests: ManifestsByName): ReadonlySet<string> {
  const sources = [...seedSources(manifests.values()).values()];
  return new Set(sources.filter((source) => source.entries !== undefined).map((source) => source.name));
}

/** What the manifests tell each other's compilation: the seed kind the rows of each table stand for. */
export function compileContextOf(manifests: ManifestsByName): CompileContext {
  const kinds = seedKindsOfTables(manifests.values());
  return { seedKindOfTable: (table) => kinds.get(table) };
}

/** Stream manifests by name, as loaded (what a sync compiles its streams from). */
export type ManifestsByName = ReadonlyMap<string, StreamManifest>;

/** Compiles the configured streams (those with options under `streams:`), by name; unknown names are left out. */
export function compileStreams(
  manifests: ManifestsByName,
  streams: Record<string, Options | undefined>,
): Map<string, CompiledStream> {
  const compiled = new Map<string, CompiledStream>();
  const context = compileContextOf(manifests);
  for (const [name, options] of Object.entries(streams)) {
    const manifest = manifests.get(name);
    if (manifest && options) compiled.set(name, compileStream(manifest, options, context));
  }
  return compiled;
}

function parts(manifest: StreamManifest, options: Options, context: CompileContext): StreamParts {
  return {
    name: manifest.name,
    description: manifest.description,
    dependsOn: manifest.depends_on,
    options,
    refreshAfterMs: refreshAfterMs(manifest.refresh_after, options),
    partitions: compilePartitions(manifest.partitions, options, context),
    table: compileTable(manifest.table, options),
    cost: compileCost(manifest.cost),
  };
}

function compileChangeRefresh(node: RefreshOnChangeNode | undefined, options: Options): ChangeRefresh | undefined {
  const watchedRefreshMs = node && refreshAfterMs(node.refresh_after, options);
  if (!node || watchedRefreshMs === undefined) return undefined;
  return {
    watchedRefreshMs,
    signalTarget: node.signal_target,
    targetField: node.target_field,
    seedKind: node.seed_kind as SeedKind,
    fields: node.fields,
    apply: node.apply,
  };
}

function refreshAfterMs(template: unknown, options: Options): number | undefined {
  if (template === undefined) return undefined;
  const rendered = compileTemplate(template, { options })();
  return typeof rendered === 'string' && rendered !== '' ? parseDuration(rendered) : undefined;
}

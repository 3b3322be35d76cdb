import { SeedList } from '../../config/seed-list.js';
import { regroup } from '../../util/regroup.js';
import { seedKey, type SeedKind } from '../../util/seed-keys.js';
import { stableJson } from '../../util/stable-json.js';
import { compileTemplate } from '../compiled-template.js';
import type { PartitionNode } from '../manifest-schema.js';
import { wholeOption, wholeSeeds } from '../template.js';

/** One unit of work of a stream: a seed, a parent row, a search, a month… */
export interface Partition {
  /** Stable key (ledger and state rows are keyed by it). */
  key: string;
  /** Values the templates read as `partition.*` (`key` included). */
  values: Record<string, unknown>;
  /** A partition whose data can no longer change (a closed month): once loaded, never read again. */
  final?: boolean;
}

/** What partition resolution may read (the stream's options were bound when it compiled). */
export interface PartitionContext {
  /** Resolved seed lists by config key (`profiles`, `headcount`, …). */
  seeds: Record<string, unknown>;
  /** Reads columns of a loaded table (empty when the table does not exist yet). */
  readTable(table: string, columns: readonly string[]): Promise<Record<string, unknown>[]>;
  /** Now, for month windows. */
  now: Date;
}

/** Reads the given columns of a table's rows, a chunk at a time, in one query (none when the table does not exist). */
export type TableChunks = (table: string, columns: readonly string[]) => AsyncIterable<Record<string, unknown>[]>;

/** What a chunked read of partitions may use: parent tables in chunks, and a copy on disk that can be read again. */
export interface ScanIo {
  tables: TableChunks;
  /** Copies `chunks` aside once; the copy is read again by each pass. */
  spool(chunks: AsyncIterable<unknown[]>): Promise<{ chunks(): AsyncIterable<unknown[]> }>;
}

/** One pass over a source's partitions, in chunks of about `size` (repeats kept). */
export type ChunkSource = (size: number) => AsyncGenerator<Partition[]>;

/** A `parent` source: the table it reads, and the partitions its rows give. */
export interface ParentSource {
  table: string;
  columns: readonly string[];
  /** Whether its `when` holds with these seeds. */
  holds(seeds: Record<string, unknown>): boolean;
  /** The partitions of these rows: one a row, or one a row and expanded value. */
  partitionsOf(rows: readonly Record<string, unknown>[]): Partition[];
}

/** One way a stream's partitions come, for messages: the seed source or option it reads, and the option its `when` names. */
export interface PartitionOrigin {
  seeds?: string;
  option?: string;
  whenOption?: string;
}

/** What compiling partitions may know beyond the node and options: how rows of other streams' tables are keyed. */
export interface PartitionCompileContext {
  /** The seed kind the rows of a table stand for (`profiles` → profile); undefined for a table of other rows. */
  seedKindOfTable?(table: string): SeedKind | undefined;
}

/** Where a stream's partitions come from (a compiled `partitions` node). */
export interface PartitionSource {
  /** Whether its `when` holds with these seeds (a source without one always does). */
  holds(seeds: Record<string, unknown>): boolean;
  /** Every partition, de-duplicated by key (first wins): for checks and plans of a few partitions. */
  resolve(ctx: PartitionContext): Promise<Partition[]>;
  /** A chunked read: seed lists and parent rows are copied aside once (`io.spool`) and read again by each pass. */
  open(ctx: PartitionContext, io: ScanIo): Promise<ChunkSource>;
  /** Its `parent` sources, through unions at any depth. */
  readonly parents: readonly ParentSource[];
  /** The option whose list entries are its partitions (`{{ options.searches }}`), if it is one. */
  readonly listOption: string | undefined;
  /** The values its expansions give (`expand: { kind: … }` → one per kind); one empty set otherwise. */
  expansions(): Record<string, unknown>[];
  /** Which partition keys a seed the user names (`state reset --seed`) stands for. */
  matchesSeed(seed: string): (key: string) => boolean;
  /** Where its partitions come from, branch by branch. */
  readonly origins: readonly PartitionOrigin[];
  /**
   * Whether any partition may come with the seed sources configured (`seeds`: a configured
   * source counts, whatever it holds); false: the stream has nothing to fetch.
   */
  mayYield(seeds: Record<string, unknown>): boolean;
  /** The seed sources read by a branch whose `when` holds with these seeds. */
  seedsRead(seeds: Record<string, unknown>): string[];
}

type Factory<T extends PartitionNode['type']> = (
  node: Extract<PartitionNode, { type: T }>,
  options: Record<string, unknown>,
  context: PartitionCompileContext,
) => PartitionSource;

const factories = {
  seeds: seedsSource,
  parent: parentSource,
  list: listSource,
  months: monthsSource,
  single: singleSource,
  union: unionSource,
} satisfies { [T in PartitionNode['type']]: Factory<T> };

/** Compiles a `partitions` node with the stream's options. */
export function compilePartitions(
  node: PartitionNode,
  options: Record<string, unknown>,
  context: PartitionCompileContext = {},
): PartitionSource {
  return (factories[node.type] as Factory<typeof node.type>)(node as never, options, context);
}

/** The parts every source shares: `when`, resolve through `all`, and a chunked read of what `all` resolves. */
function source(
  node: PartitionNode,
  options: Record<string, unknown>,
  all: (ctx: PartitionContext) => Promise<Partition[]>,
  extra: Partial<PartitionSource> = {},
): PartitionSource {
  const when = 'when' in node && node.when !== undefined ? compileTemplate(node.when, { options }) : undefined;
  const holds = (seeds: Record<string, unknown>) => when === undefined || isTruthy(when({ seeds }));
  const whenOption = 'when' in node ? wholeOption(node.when) : undefined;
  return {
    holds,
    resolve: async (ctx) => (holds(ctx.seeds) ? firstOfEachKey(await all(ctx)) : []),
    open: async (ctx) => {
      const partitions = holds(ctx.seeds) ? await all(ctx) : [];
      return async function* (size) {
        for (let i = 0; i < partitions.length; i += size) yield partitions.slice(i, i + size);
      };
    },
    parents: [],
    listOption: undefined,
    expansions: () => [{}],
    matchesSeed: (seed) => (key) => key === seed,
    origins: [whenOption === undefined ? {} : { whenOption }],
    mayYield: holds,
    seedsRead: () => [],
    ...extra,
  };
}

function seedsSource(node: Extract<PartitionNode, { type: 'seeds' }>, options: Record<string, unknown>) {
  const whenOption = wholeOption(node.when);
  const partitionOf = (seed: string): Partition => {
    const key = seedKey(node.seed_kind, seed);
    return { key, values: { key, seed, [node.as]: seed } };
  };
  const base = source(node, options, async (ctx) => {
    const list = seedListOf(ctx.seeds[node.seeds]);
    return list ? (await list.toArray()).map(partitionOf) : [];
  });
  return {
    ...base,
    open: async (ctx: PartitionContext, io: ScanIo): Promise<ChunkSource> => {
      const list = base.holds(ctx.seeds) ? seedListOf(ctx.seeds[node.seeds]) : undefined;
      if (!list) return async function* () {};
      const copy = await io.spool(list.chunks());
      return async function* (size) {
        for await (const seeds of regroup(copy.chunks(), size)) yield seeds.map((seed) => partitionOf(String(seed)));
      };
    },
    matchesSeed: (seed: string) => {
      const wanted = seedKey(node.seed_kind, seed);
      return (key: string) => key === wanted;
    },
    origins: [{ seeds: node.seeds, ...(whenOption === undefined ? {} : { whenOption }) }],
    mayYield: (seeds: Record<string, unknown>) => base.holds(seeds) && seeds[node.seeds] !== undefined,
    seedsRead: (seeds: Record<string, unknown>) => (base.holds(seeds) ? [node.seeds] : []),
  };
}

function parentSource(
  node: Extract<PartitionNode, { type: 'parent' }>,
  options: Record<string, unknown>,
  context: PartitionCompileContext,
) {
  const key = compileTemplate(node.key);
  const expand = Object.entries(node.expand ?? {}).map(([name, template]) => {
    const rendered = compileTemplate(template, { options })();
    return [name, Array.isArray(rendered) ? rendered : [rendered]] as const;
  });
  const partitionsOf = (rows: readonly Record<string, unknown>[]): Partition[] => {
    const base = rows.map((raw) => {
      const row = plainRow(raw);
      const text = keyText(key({ row }));
      return { key: text, values: { ...row, key: text } };
    });
    return expand.reduce(
      (partitions, [name, values]) =>
        partitions.flatMap((p) =>
          values.map((value) => {
            const expanded = `${p.key}|${name}=${String(value)}`;
            return { key: expanded, values: { ...p.values, [name]: value, key: expanded } };
          }),
        ),
      base,
    );
  };
  const base = source(node, options, async (ctx) => partitionsOf(await ctx.readTable(node.table, node.columns)));
  const parent: ParentSource = { table: node.table, columns: node.columns, holds: base.holds, partitionsOf };
  // A --seed names a parent row by the seed it stands for, keyed as the stream loading that table keys its seeds.
  const kind = context.seedKindOfTable?.(node.table) ?? 'raw';
  return {
    ...base,
    parents: [parent],
    open: async (ctx: PartitionContext, io: ScanIo): Promise<ChunkSource> => {
      if (!base.holds(ctx.seeds)) return async function* () {};
      const copy = await io.spool(io.tables(node.table, node.columns));
      return async function* (size) {
        for await (const rows of regroup(copy.chunks(), size)) yield partitionsOf(rows as Record<string, unknown>[]);
      };
    },
    expansions: () =>
      expand.reduce<Record<string, unknown>[]>(
        (sets, [name, values]) => sets.flatMap((set) => values.map((value) => ({ ...set, [name]: value }))),
        [{}],
      ),
    matchesSeed: (seed: string) => {
      const wanted = seedKey(kind, seed);
      return (partitionKey: string) => seedKey(kind, partitionKey.split('|')[0]!) === wanted;
    },
  };
}

function listSource(node: Extract<PartitionNode, { type: 'list' }>, options: Record<string, unknown>) {
  const values = compileTemplate(node.values, { options });
  const key = compileTemplate(node.key);
  const option = wholeOption(node.values);
  const fromSeeds = wholeSeeds(node.values);
  const whenOption = wholeOption(node.when);
  const all = async (ctx: PartitionContext) => {
    const items = values({ seeds: ctx.seeds });
    if (!Array.isArray(items)) return [];
    return items.map((item) => {
      const text = keyText(key({ item }));
      const fields = item !== null && typeof item === 'object' ? (item as Record<string, unknown>) : { value: item };
      return { key: text, values: { ...fields, key: text } };
    });
  };
  const base = source(node, options, all, { listOption: option });
  return {
    ...base,
    origins: [
      {
        ...(fromSeeds === undefined ? {} : { seeds: fromSeeds }),
        ...(option === undefined ? {} : { option }),
        ...(whenOption === undefined ? {} : { whenOption }),
      },
    ],
    mayYield: (seeds: Record<string, unknown>) => {
      if (!base.holds(seeds)) return false;
      if (fromSeeds !== undefined) return seeds[fromSeeds] !== undefined;
      const items = values({ seeds });
      return Array.isArray(items) && items.length > 0;
    },
    seedsRead: (seeds: Record<string, unknown>) => (fromSeeds !== undefined && base.holds(seeds) ? [fromSeeds] : []),
  };
}

function monthsSource(node: Extract<PartitionNode, { type: 'months' }>, options: Record<string, unknown>) {
  const count = compileTemplate(node.count, { options });
  return source(node, options, async (ctx) => monthWindows(ctx.now, Number(count() ?? 1)));
}

function singleSource(node: Extract<PartitionNode, { type: 'single' }>, options: Record<string, unknown>) {
  const values = compileTemplate(node.values ?? {}, { options });
  return source(node, options, async (ctx) => {
    const rendered = (values({ seeds: ctx.seeds }) ?? {}) as Record<string, unknown>;
    return [{ key: '*', values: { ...rendered, key: '*' } }];
  });
}

function unionSource(
  node: Extract<PartitionNode, { type: 'union' }>,
  options: Record<string, unknown>,
  context: PartitionCompileContext,
) {
  const parts = node.of.map((child) => compilePartitions(child, options, context));
  return source(node, options, async (ctx) => (await Promise.all(parts.map((part) => part.resolve(ctx)))).flat(), {
    parents: parts.flatMap((part) => part.parents),
    open: async (ctx, io) => {
      const sources: ChunkSource[] = [];
      for (const part of parts) sources.push(await part.open(ctx, io));
      return async function* (size) {
        for (const part of sources) yield* part(size);
      };
    },
    expansions: () => parts.flatMap((part) => part.expansions()),
    matchesSeed: (seed) => {
      const matchers = parts.map((part) => part.matchesSeed(seed));
      return (key) => matchers.some((matches) => matches(key));
    },
    origins: parts.flatMap((part) => part.origins),
    mayYield: (seeds) => parts.some((part) => part.mayYield(seeds)),
    seedsRead: (seeds) => [...new Set(parts.flatMap((part) => part.seedsRead(seeds)))],
  });
}

/** A resolved seed source as a list that can be read in chunks (a `SeedList`, or an inline array); undefined for anything else. */
export function seedListOf(value: unknown): SeedList | undefined {
  if (value instanceof SeedList) return value;
  return Array.isArray(value) ? SeedList.of(value.map(String)) : undefined;
}

/** Whether a rendered `when` holds: empty lists, empty strings, false, null and undefined do not. */
export function isTruthy(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  return value !== undefined && value !== null && value !== false && value !== '' && value !== 0;
}

function firstOfEachKey(partitions: Partition[]): Partition[] {
  const seen = new Set<string>();
  return partitions.filter((p) => (seen.has(p.key) ? false : (seen.add(p.key), true)));
}

function monthWindows(now: Date, count: number): Partition[] {
  const windows: Partition[] = [];
  for (let back = count - 1; back >= 0; back--) {
    const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - back, 1));
    const to = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + 1, 1));
    const key = from.toISOString();
    windows.push({ key, values: { key, from: key, to: to.toISOString() }, final: to.getTime() <= now.getTime() });
  }
  return windows;
}

/**
 * A parent row with its BIGINT values (a count read from DuckDB) as numbers, or text beyond 2^53:
 * partition values are written as JSON (a rejected record keeps its partition), which has no bigint.
 */
function plainRow(row: Record<string, unknown>): Record<string, unknown> {
  if (!Object.values(row).some((value) => typeof value === 'bigint')) return row;
  return Object.fromEntries(
    Object.entries(row).map(([column, value]) => [
      column,
      typeof value !== 'bigint' ? value : Number.isSafeInteger(Number(value)) ? Number(value) : value.toString(),
    ]),
  );
}

function keyText(value: unknown): string {
  return typeof value === 'string' ? value : stableJson(value);
}

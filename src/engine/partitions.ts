import type { PartitionNode } from '../manifest/manifest-schema.js';
import { SeedList } from '../config/seed-list.js';
import { renderTemplate } from '../manifest/template.js';
import { stableJson } from '../util/stable-json.js';
import { seedKey } from '../util/seed-keys.js';

/** One unit of work of a stream: a seed, a parent row, a search, a month… */
export interface Partition {
  /** Stable key (ledger and state rows are keyed by it). */
  key: string;
  /** Values the templates read as `partition.*` (`key` included). */
  values: Record<string, unknown>;
  /** A partition whose data can no longer change (a closed month): once loaded, never read again. */
  final?: boolean;
}

/** What partition resolution may read. */
export interface PartitionContext {
  /** The stream's options from the config. */
  options: Record<string, unknown>;
  /** Resolved seed lists by config key (`profiles`, `headcount`, …). */
  seeds: Record<string, unknown>;
  /** Reads columns of a loaded table (empty when the table does not exist yet). */
  readTable(table: string, columns: readonly string[]): Promise<Record<string, unknown>[]>;
  /** Now, for month windows. */
  now: Date;
}

type Resolver<T extends PartitionNode['type']> = (
  node: Extract<PartitionNode, { type: T }>,
  ctx: PartitionContext,
) => Promise<Partition[]>;

const resolvers = {
  seeds: async (node, ctx) => {
    const list = seedListOf(ctx.seeds[node.seeds]);
    // Held whole: for checks and plans of a few partitions. Streams read theirs in chunks (PartitionScan).
    return list ? (await list.toArray()).map((seed) => seedPartition(node, seed)) : [];
  },
  parent: async (node, ctx) => parentPartitions(node, await ctx.readTable(node.table, node.columns), ctx),
  list: async (node, ctx) => {
    const items = renderTemplate(node.values, { options: ctx.options, seeds: ctx.seeds });
    if (!Array.isArray(items)) return [];
    return items.map((item) => {
      const key = keyText(renderTemplate(node.key, { item }));
      const values = item !== null && typeof item === 'object' ? (item as Record<string, unknown>) : { value: item };
      return { key, values: { ...values, key } };
    });
  },
  months: async (node, ctx) => {
    const count = Number(renderTemplate(node.count, { options: ctx.options }) ?? 1);
    return monthWindows(ctx.now, count);
  },
  single: async (node, ctx) => {
    const values = (renderTemplate(node.values ?? {}, { options: ctx.options, seeds: ctx.seeds }) ?? {}) as Record<
      string,
      unknown
    >;
    return [{ key: '*', values: { ...values, key: '*' } }];
  },
  union: async (node, ctx) => (await Promise.all(node.of.map((child) => resolvePartitions(child, ctx)))).flat(),
} satisfies { [T in PartitionNode['type']]: Resolver<T> };

type SeedsNode = Extract<PartitionNode, { type: 'seeds' }>;
type ParentNode = Extract<PartitionNode, { type: 'parent' }>;

/** The partitions of rows of a `parent` node's table: one a row, or one a row and expanded value. */
export function parentPartitions(
  node: ParentNode,
  rows: readonly Record<string, unknown>[],
  ctx: Pick<PartitionContext, 'options'>,
): Partition[] {
  const base = rows.map((row) => {
    const key = keyText(renderTemplate(node.key, { row }));
    return { key, values: { ...row, key } };
  });
  return node.expand ? expand(base, node.expand, ctx) : base;
}

/** The `parent` nodes of a partition node, through unions at any depth. */
export function parentNodes(node: PartitionNode): ParentNode[] {
  if (node.type === 'union') return node.of.flatMap(parentNodes);
  return node.type === 'parent' ? [node] : [];
}

/** The partition of one seed of a `seeds` node. */
export function seedPartition(node: SeedsNode, seed: string): Partition {
  const key = seedKey(node.seed_kind, seed);
  return { key, values: { key, seed, [node.as]: seed } };
}

/** A resolved seed source as a list that can be read in chunks (a `SeedList`, or an inline array); undefined for anything else. */
export function seedListOf(value: unknown): SeedList | undefined {
  if (value instanceof SeedList) return value;
  return Array.isArray(value) ? SeedList.of(value.map(String)) : undefined;
}

/** Resolves a partition node to its partitions, de-duplicated by key (first wins). */
export async function resolvePartitions(node: PartitionNode, ctx: PartitionContext): Promise<Partition[]> {
  if (!holds(node, ctx)) return [];
  const resolver = resolvers[node.type] as Resolver<typeof node.type>;
  const partitions = await resolver(node as never, ctx);
  const seen = new Set<string>();
  return partitions.filter((p) => (seen.has(p.key) ? false : (seen.add(p.key), true)));
}

/** Whether a node's `when` holds (a node without one always does). */
export function holds(node: PartitionNode, ctx: Pick<PartitionContext, 'options' | 'seeds'>): boolean {
  return (
    !('when' in node) ||
    node.when === undefined ||
    isTruthy(renderTemplate(node.when, { options: ctx.options, seeds: ctx.seeds }))
  );
}

/** Whether a rendered `when` holds: empty lists, empty strings, false, null and undefined do not. */
export function isTruthy(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  return value !== undefined && value !== null && value !== false && value !== '' && value !== 0;
}

function expand(base: Partition[], spec: Record<string, unknown>, ctx: Pick<PartitionContext, 'options'>): Partition[] {
  return Object.entries(spec).reduce((partitions, [name, template]) => {
    const rendered = renderTemplate(template, { options: ctx.options });
    const values = Array.isArray(rendered) ? rendered : [rendered];
    return partitions.flatMap((p) =>
      values.map((value) => {
        const key = `${p.key}|${name}=${String(value)}`;
        return { key, values: { ...p.values, [name]: value, key } };
      }),
    );
  }, base);
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

function keyText(value: unknown): string {
  return typeof value === 'string' ? value : stableJson(value);
}

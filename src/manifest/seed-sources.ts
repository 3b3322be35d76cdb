import { ManifestError } from './manifest-error.js';
import type { PartitionNode, SeedDeclaration, StreamManifest } from './manifest-schema.js';
import { templateReferences } from './template.js';
import type { SeedKind } from '../util/seed-keys.js';

/** A seed source as the manifests declare it: the config's `seeds.<name>`. */
export interface SeedSource extends SeedDeclaration {
  name: string;
  /** Streams that read it. */
  readers: string[];
}

/** The seed sources a manifest reads: the sources of its `seeds` partition nodes, and every `{{ seeds.<name> }}` of its partitions. */
export function seedsReadBy(manifest: StreamManifest): string[] {
  const named = seedNodes(manifest.partitions).map((node) => node.seeds);
  const referenced = templateReferences(manifest.partitions)
    .filter((reference) => reference.path[0] === 'seeds' && reference.path[1] !== undefined)
    .map((reference) => reference.path[1]!);
  return [...new Set([...named, ...referenced])];
}

/**
 * Every seed source the manifests read, by name, with what a seed of it looks like. Two manifests
 * that read one source must agree on its entries (a list of seeds, or objects of one schema).
 */
export function seedSources(manifests: Iterable<StreamManifest>): Map<string, SeedSource> {
  const sources = new Map<string, SeedSource>();
  for (const manifest of manifests) {
    for (const name of seedsReadBy(manifest)) {
      const declared = manifest.seeds[name] ?? {};
      const known = sources.get(name);
      if (known && known.entries !== declared.entries)
        throw new ManifestError(
          `streams ${known.readers[0]} and ${manifest.name} both read seeds.${name} but disagree on its entries (${known.entries ?? 'a seed list'} against ${declared.entries ?? 'a seed list'}): give the source another name in one of them`,
        );
      if (known) {
        known.readers.push(manifest.name);
        known.description ??= declared.description;
      } else sources.set(name, { name, ...declared, readers: [manifest.name] });
    }
  }
  return sources;
}

/**
 * How the rows of each stream's table are keyed when they stand for seeds: a stream whose
 * partitions are seeds of one kind (`seed_kind: profile`) keys its table's rows as those seeds.
 * A stream over such a table (`parent: { table: profiles }`) matches a `--seed` the same way.
 */
export function seedKindsOfTables(manifests: Iterable<StreamManifest>): Map<string, SeedKind> {
  const kinds = new Map<string, SeedKind>();
  for (const manifest of manifests) {
    const nodeKinds = new Set(seedNodes(manifest.partitions).map((node) => node.seed_kind));
    const [kind] = nodeKinds;
    if (nodeKinds.size === 1 && kind && !manifest.table.name.includes('{{')) kinds.set(manifest.table.name, kind);
  }
  return kinds;
}

type SeedsNode = Extract<PartitionNode, { type: 'seeds' }>;

function seedNodes(node: PartitionNode): SeedsNode[] {
  if (node.type === 'union') return node.of.flatMap(seedNodes);
  return node.type === 'seeds' ? [node] : [];
}

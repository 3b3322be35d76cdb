import type { PartitionOrigin } from '../manifest/components/partitions.js';
import { compileStreams, type CompiledStream, type ManifestsByName } from '../manifest/compile-stream.js';
import { seedSources } from '../manifest/seed-sources.js';
import { SIGNALS_SEED_SOURCE, type SeedlineConfig } from './config-schema.js';

// Which seed sources a stream reads, and when, comes from its manifest (its partitions' `seeds`
// nodes and `{{ seeds.… }}` lists, and their `when`): nothing here names a stream or a source.

/**
 * Streams that would run with nothing to fetch: every branch of their partitions reads a seed
 * source that is not configured, or is switched off by its `when` (jobs with neither keywords nor
 * company seeds). Such a sync would load 0 records and exit 0.
 * @returns one `key: what to do` problem each
 */
export function missingSeedProblems(config: SeedlineConfig, manifests: ManifestsByName): string[] {
  return [...configuredStreams(config, manifests)].flatMap((stream) => {
    const { origins } = stream.partitions;
    if (!origins.some((origin) => origin.seeds) || stream.partitions.mayYield(config.seeds)) return [];
    const [only] = origins;
    if (origins.length === 1 && only?.seeds)
      return [
        `seeds.${only.seeds}: streams.${stream.name} is enabled but has no seeds: add seeds.${only.seeds} (${entriesHint(manifests, only.seeds)}; [] only finishes batch jobs already submitted), or remove streams.${stream.name}`,
      ];
    const ways = origins.map((origin) => originText(stream.name, origin)).filter((way) => way !== undefined);
    return [`streams.${stream.name}: nothing to fetch: add ${ways.join(', or ')}`];
  });
}

/**
 * Seeds no configured stream reads, e.g. left behind when a stream's key was removed to switch it
 * off for a while: allowed, but worth a warning naming the streams that would read them.
 * @returns one `warning: key: …` line each
 */
export function unusedSeedWarnings(config: SeedlineConfig, manifests: ManifestsByName): string[] {
  const read = new Set([...configuredStreams(config, manifests)].flatMap((s) => s.partitions.seedsRead(config.seeds)));
  const signalsRead = signalsSeedSource(config);
  if (signalsRead) read.add(signalsRead);
  const sources = seedSources(manifests.values());
  return Object.keys(config.seeds)
    .filter((name) => config.seeds[name] !== undefined && !read.has(name))
    .map((name) => {
      const readers = (sources.get(name)?.readers ?? []).map((stream) => `streams.${stream}`);
      if (name === SIGNALS_SEED_SOURCE) readers.push(`signals.targets: { from_seeds: ${name} }`);
      return `warning: seeds.${name}: no configured stream reads these seeds (read by ${readers.join(', or ')}): add one under streams:, or remove seeds.${name}`;
    });
}

function configuredStreams(config: SeedlineConfig, manifests: ManifestsByName): Iterable<CompiledStream> {
  return compileStreams(manifests, config.streams as Record<string, Record<string, unknown> | undefined>).values();
}

/** How a source's seeds are written: a seed list, or entries as its manifest describes them. */
function entriesHint(manifests: ManifestsByName, source: string): string {
  const declared = seedSources(manifests.values()).get(source);
  if (declared?.entries === undefined) return 'a list, { file, column } or { sql }';
  return declared.description ?? `a list of ${declared.entries} entries`;
}

/** One way to give a stream something to fetch: the seeds it reads (and the option that switches that on), or the option it reads. */
function originText(stream: string, origin: PartitionOrigin): string | undefined {
  const option = origin.option ?? (origin.seeds === undefined ? origin.whenOption : undefined);
  if (origin.seeds !== undefined)
    return origin.whenOption === undefined
      ? `seeds.${origin.seeds}`
      : `seeds.${origin.seeds} (read while streams.${stream}.${origin.whenOption} is true)`;
  return option === undefined ? undefined : `streams.${stream}.${option}`;
}

/** The seed source Signals read their targets from (`signals.targets: { from_seeds: profiles }`). */
function signalsSeedSource(config: SeedlineConfig): string | undefined {
  const targets = config.signals?.targets;
  return targets !== undefined && !Array.isArray(targets) && 'from_seeds' in targets ? targets.from_seeds : undefined;
}

import type { SeedlineConfig } from './config-schema.js';

type SeedKey = keyof SeedlineConfig['seeds'];

// The streams whose partitions are their own seeds (`type: seeds` or `{{ seeds.… }}` in
// streams/*.stream.yaml); each has the name of its `seeds:` key. jobs is handled on its own.
const SEEDED: readonly SeedKey[] = ['profiles', 'companies', 'posts', 'headcount'];

/**
 * Streams that would run with nothing to fetch: a seeded stream without its `seeds.<stream>`, or
 * `jobs` with neither keywords nor company seeds. Such a sync loads 0 records and exits 0.
 * @returns one `key: what to do` problem each
 */
export function missingSeedProblems(config: SeedlineConfig): string[] {
  const problems = SEEDED.filter((key) => config.streams[key] !== undefined && config.seeds[key] === undefined).map(
    (key) =>
      `seeds.${key}: streams.${key} is enabled but has no seeds: add seeds.${key} (a list, { file, column } or { sql }; [] only finishes batch jobs already submitted), or remove streams.${key}`,
  );
  const jobs = config.streams.jobs;
  if (jobs && (jobs.keywords as string[]).length === 0 && !(jobs.per_company && config.seeds.companies)) {
    problems.push(
      'streams.jobs: nothing to search: add streams.jobs.keywords, or seeds.companies (searched one company at a time while streams.jobs.per_company is true)',
    );
  }
  return problems;
}

/**
 * Seeds no configured stream reads, e.g. left behind when a stream's key was removed to switch it
 * off for a while: allowed, but worth a warning.
 * @returns one `warning: key: …` line each
 */
export function unusedSeedWarnings(config: SeedlineConfig): string[] {
  const readers: Record<SeedKey, { reads: boolean; by: string }> = {
    profiles: {
      reads: !!config.streams.profiles || fromSeeds(config),
      by: 'streams.profiles, or signals.targets: { from_seeds: profiles }',
    },
    companies: {
      reads: !!config.streams.companies || !!config.streams.jobs?.per_company,
      by: 'streams.companies, or streams.jobs with per_company',
    },
    posts: { reads: !!config.streams.posts, by: 'streams.posts' },
    headcount: { reads: !!config.streams.headcount, by: 'streams.headcount' },
  };
  return SEEDED.filter((key) => config.seeds[key] !== undefined && !readers[key].reads).map(
    (key) =>
      `warning: seeds.${key}: no configured stream reads these seeds (${readers[key].by}): add one under streams:, or remove seeds.${key}`,
  );
}

function fromSeeds(config: SeedlineConfig): boolean {
  const targets = config.signals?.targets;
  return targets !== undefined && !Array.isArray(targets) && 'from_seeds' in targets;
}

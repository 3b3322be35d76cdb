import { ConfigError } from '../config/config-errors.js';
import { isSeedList, type SignalsConfig } from '../config/config-schema.js';
import type { LoadedConfig } from '../config/load-config.js';
import { resolveSeeds, type SeedQuery } from '../config/resolve-seeds.js';
import { seedKey } from '../util/seed-keys.js';
import type { DesiredSignals, DesiredTarget } from './signal-diff.js';

/**
 * Reads the `signals` block of a config and resolves its targets (inline, CSV, SQL on the warehouse,
 * or every `seeds.profiles` seed) to one target per profile key.
 * @param query runs a `{ sql }` target source on the destination
 */
export async function resolveDesiredSignals(loaded: LoadedConfig, query: SeedQuery): Promise<DesiredSignals> {
  const { config, path, baseDir } = loaded;
  const signals = config.signals;
  if (signals === undefined)
    throw new ConfigError(path, [
      'signals: missing: add a signals block (tag, schedule, criteria, targets) to manage Signals from this config',
    ]);
  const source = signals.targets;
  let seeds: string[];
  if (!Array.isArray(source) && 'from_seeds' in source) {
    const from = config.seeds[source.from_seeds];
    if (!isSeedList(from))
      throw new ConfigError(path, [
        `signals.targets: from_seeds: ${source.from_seeds} needs seeds.${source.from_seeds}`,
      ]);
    seeds = await resolveSeeds(`seeds.${source.from_seeds}`, from, baseDir, query);
  } else {
    seeds = await resolveSeeds('signals.targets', source, baseDir, query);
  }
  return {
    tag: signals.tag,
    namePrefix: signals.name_prefix,
    settings: settingsFromConfig(signals),
    targets: uniqueTargets(seeds),
    extraTags: signals.tags,
    templates: {
      ...(signals.external_id === undefined ? {} : { externalId: signals.external_id }),
      ...(signals.metadata === undefined ? {} : { metadata: signals.metadata }),
    },
  };
}

function settingsFromConfig(signals: SignalsConfig): DesiredSignals['settings'] {
  return {
    interval: signals.schedule.interval,
    timezone: signals.schedule.timezone ?? 'UTC',
    mode: signals.criteria.mode,
    fields: [...new Set(signals.criteria.fields)],
    webhookUrl: signals.notify?.webhook_url ?? null,
  };
}

/** One target per key, first seed wins: `jane-doe` and `…/in/Jane-Doe/` are one profile. */
function uniqueTargets(seeds: readonly string[]): DesiredTarget[] {
  const byKey = new Map<string, DesiredTarget>();
  for (const seed of seeds) {
    const key = seedKey('profile', seed);
    if (!byKey.has(key)) byKey.set(key, { key, seed });
  }
  return [...byKey.values()];
}

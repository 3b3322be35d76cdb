import type { SeedlineConfig } from '../config/config-schema.js';
import { jsonColumn } from '../util/json-column.js';
import { parseDuration } from '../util/duration.js';

const DAY_MS = 86_400_000;

/** What refresh on change did for a stream in the report's window, against refresh by age alone. */
export interface RefreshesOnChange {
  stream: string;
  /** Seeds of active Signals on the stream's target type now. */
  watched: number;
  /** Refreshes of watched seeds the window's runs bought because a Trigger reported a change. */
  byChange: number;
  /** Those they bought because `refresh_after_watched` passed. */
  byAge: number;
  /** Refreshes of the watched seeds refresh by age alone would have bought in the window (one each refresh_after). */
  byAgeAlone: number;
}

/**
 * Per stream refreshing on change (its config sets `refresh_after_watched`): the refreshes the
 * window's runs recorded (`_seedline_runs.streams`), the Signals watching now, and refresh by age alone.
 * @param targets the Signal target type each stream's manifest watches with (`refresh_on_change`)
 */
export async function refreshesOnChange(
  read: (sql: string) => Promise<Record<string, unknown>[]>,
  schema: string,
  config: SeedlineConfig,
  targets: ReadonlyMap<string, string>,
  recentRuns: readonly Record<string, unknown>[],
  days: number,
): Promise<RefreshesOnChange[]> {
  const options = config.streams as Record<
    string,
    { refresh_after?: string; refresh_after_watched?: string } | undefined
  >;
  const streams = [...targets.keys()].filter((stream) => options[stream]?.refresh_after_watched);
  if (streams.length === 0) return [];
  const signals = await read(`select status, target from ${schema}.signals`);
  return streams.map((stream) => {
    const watched = signals.filter(
      (row) => row.status === 'active' && (jsonColumn(row.target) as { type?: unknown })?.type === targets.get(stream),
    ).length;
    let byChange = 0;
    let byAge = 0;
    for (const run of recentRuns) {
      const outcome = (
        jsonColumn(run.streams) as { stream?: string; refreshes?: { byChange?: number; byAge?: number } }[] | undefined
      )?.find((o) => o.stream === stream);
      byChange += outcome?.refreshes?.byChange ?? 0;
      byAge += outcome?.refreshes?.byAge ?? 0;
    }
    const refresh = options[stream]?.refresh_after;
    const byAgeAlone = refresh ? watched * Math.floor((days * DAY_MS) / parseDuration(refresh)) : 0;
    return { stream, watched, byChange, byAge, byAgeAlone };
  });
}

import type { Destination } from '../../destinations/destination.js';

/** Days of runs `plan` looks back over for what refresh on change saved. */
export const SAVING_WINDOW_DAYS = 30;
const DAY = 86_400_000;
/** Runs read back at most (a run an hour for a month fits). */
const RUNS_READ = 1000;

/** What refresh on change did for a stream over the last days, and what refresh by age alone would have bought. */
export interface RefreshSaving {
  /** Seeds active Signals watch now. */
  watched: number;
  windowDays: number;
  /** Refreshes the window's runs bought because a Trigger reported a change. */
  byChange: number;
  /** Refreshes they bought because a seed was stale. */
  byAge: number;
  /** Expected credits of those refreshes. */
  credits: number;
  /** Refreshes of the watched seeds refresh by age alone would have bought over the window (one each refresh_after). */
  byAgeAlone: number;
  /** Their expected credits. */
  byAgeAloneCredits: number;
}

/**
 * Sums the refreshes the runs of the last {@link SAVING_WINDOW_DAYS} days bought for a stream
 * (their outcomes' `refreshes`), against the watched seeds' refreshes by age alone.
 * @param perRefresh expected credits of one seed's item
 */
export async function refreshSaving(
  destination: Destination,
  stream: string,
  watched: number,
  refreshAfterMs: number | undefined,
  perRefresh: number,
  now: Date,
): Promise<RefreshSaving> {
  const since = now.getTime() - SAVING_WINDOW_DAYS * DAY;
  let byChange = 0;
  let byAge = 0;
  for (const run of await destination.readRuns(RUNS_READ)) {
    if (run.startedAt.getTime() < since || !run.streams) continue;
    const outcome = parsedOutcomes(run.streams).find((o) => o.stream === stream);
    byChange += outcome?.refreshes?.byChange ?? 0;
    byAge += outcome?.refreshes?.byAge ?? 0;
  }
  const byAgeAlone = refreshAfterMs ? watched * Math.floor((SAVING_WINDOW_DAYS * DAY) / refreshAfterMs) : 0;
  return {
    watched,
    windowDays: SAVING_WINDOW_DAYS,
    byChange,
    byAge,
    credits: (byChange + byAge) * perRefresh,
    byAgeAlone,
    byAgeAloneCredits: byAgeAlone * perRefresh,
  };
}

/** What this reads of a recorded stream outcome (`StreamOutcome`, as `_seedline_runs.streams` keeps it). */
interface RecordedRefreshes {
  stream?: string;
  refreshes?: { byChange?: number; byAge?: number };
}

function parsedOutcomes(text: string): RecordedRefreshes[] {
  try {
    const parsed = JSON.parse(text) as unknown;
    return Array.isArray(parsed) ? (parsed as RecordedRefreshes[]) : [];
  } catch {
    return [];
  }
}

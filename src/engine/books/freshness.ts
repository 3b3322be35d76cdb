/**
 * Share of `refresh_after` by which a unit comes due early. A unit is stamped when its data is loaded, some time after
 * its run started; the next scheduled run starts one period after the last one started, so without this a nightly
 * schedule with `refresh_after: 1d` would find last night's units a few minutes short of a day old and skip them,
 * refreshing every other night.
 */
export const REFRESH_TOLERANCE = 0.05;

/** Whether something done at `doneAt` is still fresh `now` under `refreshMs`, less the tolerance (never without a refresh_after). */
export function isRecent(
  doneAt: Date | string | null | undefined,
  refreshMs: number | undefined,
  now: Date | number,
): boolean {
  if (!doneAt || refreshMs === undefined) return false;
  const at = typeof doneAt === 'string' ? Date.parse(doneAt) : doneAt.getTime();
  return (typeof now === 'number' ? now : now.getTime()) - at < refreshMs * (1 - REFRESH_TOLERANCE);
}

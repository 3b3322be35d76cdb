import { DAY_MS } from './fixtures/time.js';

/** Logs (Signal check usage), Triggers and terminal webhook delivery records are kept this long (spec, Limits), on the virtual clock. */
export const RETENTION_MS = 90 * DAY_MS;

/** Whether a record made (or, for a delivery, ended) at `atMs` has outlived the retention window at `nowMs`. */
export function expired(atMs: number, nowMs: number): boolean {
  return nowMs - atMs >= RETENTION_MS;
}

/**
 * Removes, in place and in order, the entries that have outlived retention. `atMs` gives an entry's
 * instant, or null for one that is not subject to retention yet (a delivery still retrying).
 */
export function dropExpired<T>(list: T[], atMs: (entry: T) => number | null, nowMs: number): void {
  let kept = 0;
  for (const entry of list) {
    const at = atMs(entry);
    if (at === null || !expired(at, nowMs)) list[kept++] = entry;
  }
  list.length = kept;
}

import { randomUUID } from 'node:crypto';

/** A run id such as `run_20260310103000_1a2b3c4d`: the prefix, the UTC start to the second, and a random suffix. */
export function runId(prefix: string, now: Date = new Date()): string {
  return `${prefix}_${now
    .toISOString()
    .replace(/[-:.TZ]/g, '')
    .slice(0, 14)}_${randomUUID().slice(0, 8)}`;
}

import type { BatchResultEntry } from '../../schemas/batch.js';
import { sleep } from '../util/sleep.js';
import { RunStoppedError } from './engine-errors.js';
import type { StreamContext } from './stream-context.js';

/** Result entries per read of `GET /v1/batch/{id}/results` (the service's maximum). */
export const RESULTS_PAGE_SIZE = 500;

/**
 * Reads a job's results from `cursor` on, page by page as its items resolve, handing each page to
 * `load` with the cursor after it (null once the job is completed and everything is read). `load`
 * commits the page with that cursor, so a crash resumes after the last page loaded. Reads count
 * against the rate limit: another read follows at once only after a full page, otherwise after a
 * wait that grows while nothing resolves.
 */
export async function readJobResults(
  ctx: Pick<StreamContext, 'client' | 'batch' | 'stop'>,
  jobId: string,
  cursor: string | undefined,
  load: (entries: BatchResultEntry[], next: string | null) => Promise<void>,
): Promise<void> {
  let idle = 0;
  for (;;) {
    const page = await ctx.client.getBatchResults(jobId, { ...(cursor === undefined ? {} : { cursor }), limit: RESULTS_PAGE_SIZE });
    const next = page.meta.nextCursor ?? null;
    if (page.data.length > 0 || next === null) await load(page.data, next);
    if (next === null) return;
    if (ctx.stop?.aborted) throw new RunStoppedError();
    cursor = next;
    if (page.data.length < RESULTS_PAGE_SIZE) await sleep(Math.min(ctx.batch.pollIntervalMs * 2 ** (page.data.length > 0 ? 0 : idle++), 5_000));
    if (page.data.length > 0) idle = 0;
  }
}

import type { BatchResultEntry } from '../../../schemas/batch.js';
import { sleep } from '../../util/sleep.js';
import { RunStoppedError } from '../engine-errors.js';
import type { ServiceResponse } from '../service-calls.js';
import type { StreamContext } from '../stream-context.js';

/** Result entries per read of `GET /v1/batch/{id}/results` (the service's maximum). */
export const RESULTS_PAGE_SIZE = 500;

/**
 * Reads a job's results from `cursor` on, page by page as its items resolve (through `read`: the
 * client's `getBatchResults` unless given), handing each page to `load` with the cursor after it (null once the job is completed and everything is read). `load`
 * commits the page with that cursor, so a crash resumes after the last page loaded. Reads count
 * against the rate limit: another read follows at once only after a full page, otherwise after a
 * wait that grows while nothing resolves.
 */
export async function readJobResults<
  Page extends BatchResultEntry[] | { entries: readonly unknown[] } = BatchResultEntry[],
>(
  ctx: Pick<StreamContext, 'client' | 'batch' | 'stop'>,
  jobId: string,
  cursor: string | undefined,
  load: (page: Page, next: string | null) => Promise<void>,
  read: (query: ResultsQuery) => Promise<ServiceResponse<Page>> = (query) =>
    ctx.client.getBatchResults(jobId, query) as Promise<ServiceResponse<Page>>,
): Promise<void> {
  let idle = 0;
  for (;;) {
    const page = await read({ ...(cursor === undefined ? {} : { cursor }), limit: RESULTS_PAGE_SIZE });
    const next = page.meta.nextCursor ?? null;
    const entries = Array.isArray(page.data) ? page.data.length : page.data.entries.length;
    if (entries > 0 || next === null) await load(page.data, next);
    if (next === null) return;
    if (ctx.stop?.aborted) throw new RunStoppedError();
    cursor = next;
    if (entries < RESULTS_PAGE_SIZE)
      await sleep(Math.min(ctx.batch.pollIntervalMs * 2 ** (entries > 0 ? 0 : idle++), 5_000));
    if (entries > 0) idle = 0;
  }
}

/** One read of a job's results: from `cursor` (the start when absent), at most `limit` entries. */
export interface ResultsQuery {
  cursor?: string;
  limit: number;
}

import type { BatchResultEntry } from '../../../schemas/batch.js';
import { sleep } from '../../util/sleep.js';
import { RunStoppedError } from '../engine-errors.js';
import type { ServiceResponse } from '../service-calls.js';
import type { StreamContext } from '../stream-context.js';

/** Result entries per read of `GET /v1/batch/{id}/results` (the service's maximum). */
export const RESULTS_PAGE_SIZE = 500;
/** The shortest wait between two reads of a job's results: a read is a call against the rate limit. */
const MIN_READ_SPACING_MS = 100;

/**
 * Reads a job's results from `cursor` on, page by page as its items resolve (through `read`: the
 * client's `getBatchResults` unless given), handing each page to `load` with the cursor after it
 * (null once the job is completed and everything is read). `load` commits the page with that
 * cursor, so a crash resumes after the last page loaded. Reads count against the rate limit:
 * another read follows at once only after a full page. Otherwise the next read waits for a full
 * page or, when `expected` says how many entries are still to come, for the last of them, at the
 * pace entries came so far (between 100 ms and `pollIntervalMs`): the end of a job is read when
 * it comes, not up to a poll interval later. While nothing resolves, the wait grows.
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
  expected?: number,
): Promise<void> {
  const pace = new ReadPace(ctx.batch.pollIntervalMs, expected);
  for (;;) {
    const page = await read({ ...(cursor === undefined ? {} : { cursor }), limit: RESULTS_PAGE_SIZE });
    const next = page.meta.nextCursor ?? null;
    const entries = Array.isArray(page.data) ? page.data.length : page.data.entries.length;
    pace.read(entries);
    if (entries > 0 || next === null) await load(page.data, next);
    if (next === null) return;
    if (ctx.stop?.aborted) throw new RunStoppedError();
    cursor = next;
    if (entries < RESULTS_PAGE_SIZE) await sleep(pace.wait());
  }
}

/** When to read a job's results next, from the pace its entries came at (see `readJobResults`). */
export class ReadPace {
  private readonly started = Date.now();
  private entriesRead = 0;
  private idle = 0;

  /** @param left entries still to come, when known */
  constructor(
    private readonly pollIntervalMs: number,
    private left?: number,
  ) {}

  /** A read returned `entries`. */
  read(entries: number): void {
    this.entriesRead += entries;
    if (this.left !== undefined) this.left = Math.max(0, this.left - entries);
    this.idle = entries > 0 ? 0 : this.idle + 1;
  }

  /** Milliseconds to wait before the next read. */
  wait(now = Date.now()): number {
    if (this.idle > 0 || this.entriesRead === 0)
      return Math.min(this.pollIntervalMs * 2 ** Math.max(0, this.idle - 1), 5_000);
    const perEntry = (now - this.started) / this.entriesRead;
    const toCome = Math.min(RESULTS_PAGE_SIZE, this.left ?? RESULTS_PAGE_SIZE);
    return Math.min(this.pollIntervalMs, Math.max(MIN_READ_SPACING_MS, Math.ceil(perEntry * toCome)));
  }
}

/** One read of a job's results: from `cursor` (the start when absent), at most `limit` entries. */
export interface ResultsQuery {
  cursor?: string;
  limit: number;
}

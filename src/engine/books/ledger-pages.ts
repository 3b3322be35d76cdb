import type { BatchPosition, BatchRow, Destination, SeedRow, StateRow } from '../../destinations/destination.js';

/** Ledger rows per read: one seed chunk's worth. */
export const LEDGER_PAGE = 1000;
/** Open batch rows per read: each carries its body (up to 1,000 items). */
export const BATCH_PAGE = 20;

/**
 * Every ledger row of a stream, a page at a time, in seed-key order. Keyset pagination: each page
 * starts after the last key of the one before, so no row is read twice or skipped, and a page
 * costs the same at the end of a million rows as at the start.
 */
export async function* seedLedgerPages(
  destination: Destination,
  stream: string,
  pageSize = LEDGER_PAGE,
): AsyncGenerator<SeedRow[]> {
  let after: string | null = null;
  for (;;) {
    const page = await destination.readSeedPage(stream, after, pageSize);
    if (page.length > 0) yield page;
    if (page.length < pageSize) return;
    after = page.at(-1)!.seedKey;
  }
}

/** Every open batch row of a stream (an unsent intent or a job whose results are not all read), a page at a time, oldest first. */
export async function* openBatchPages(
  destination: Destination,
  stream: string,
  pageSize = BATCH_PAGE,
): AsyncGenerator<BatchRow[]> {
  let after: BatchPosition | null = null;
  for (;;) {
    const page = await destination.readOpenBatchPage(stream, after, pageSize);
    if (page.length > 0) yield page;
    if (page.length < pageSize) return;
    const last = page.at(-1)!;
    after = { idempotencyKey: last.idempotencyKey, createdAt: last.createdAt ?? new Date(0) };
  }
}

/** The open batch rows of a stream, oldest first (they are few: a crashed run leaves the jobs it had in flight). */
export async function readOpenBatches(destination: Destination, stream: string): Promise<BatchRow[]> {
  const open: BatchRow[] = [];
  for await (const page of openBatchPages(destination, stream)) open.push(...page);
  return open;
}

/** The ledger rows of `keys`, read a page of keys at a time; keys without a row are absent. */
export function readSeedRows(
  destination: Destination,
  stream: string,
  keys: Iterable<string>,
  pageSize = LEDGER_PAGE,
): Promise<Map<string, SeedRow>> {
  return readByKey(keys, pageSize, (page) => destination.readSeedsByKey(stream, page));
}

/** The state rows of partition `keys`, read a page of keys at a time; keys without a row are absent. */
export function readStateRows(
  destination: Destination,
  stream: string,
  keys: Iterable<string>,
  pageSize = LEDGER_PAGE,
): Promise<Map<string, StateRow>> {
  return readByKey(keys, pageSize, (page) => destination.readStateByKey(stream, page));
}

/** The rows `read` answers for `keys`, asked a page of keys at a time. */
async function readByKey<Row>(
  keys: Iterable<string>,
  pageSize: number,
  read: (page: string[]) => Promise<Map<string, Row>>,
): Promise<Map<string, Row>> {
  const rows = new Map<string, Row>();
  let page: string[] = [];
  const flush = async () => {
    for (const [key, row] of await read(page)) rows.set(key, row);
    page = [];
  };
  for (const key of keys) {
    page.push(key);
    if (page.length >= pageSize) await flush();
  }
  if (page.length > 0) await flush();
  return rows;
}

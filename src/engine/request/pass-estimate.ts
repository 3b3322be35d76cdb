import type { Partition } from '../../manifest/components/partitions.js';
import type { CompiledRequestStream } from '../../manifest/compile-stream.js';
import type { Cost } from '../books/cost-model.js';
import { StreamDefinitionError } from '../engine-errors.js';
import { hasStoppingPoint, pagesThisRun, renderArgs, type PartitionState } from './partition-pass.js';
import { costOfCall } from '../service-calls.js';
import type { PlannedRows, StreamContext } from '../stream-context.js';

/** Credits of passes over partitions, and the most one of their calls can bill. */
export interface PassCost extends Cost {
  perCall: number;
}

/**
 * A pass's credits, and the records it may load: at most every page it may read full; as
 * expected what the partition typically holds (its manifest's `typical`), read page by page.
 */
export interface PassEstimate extends PassCost {
  records: PlannedRows;
}

/** What one call of a pass asks, as the plan prices it. */
interface PassCall {
  stream: CompiledRequestStream;
  ctx: StreamContext;
  path: string;
  args: Record<string, unknown>;
  /** Its worst and expected credits (a page, or a whole search). */
  cost: Cost;
  /** The page the pass starts at (past 1 when it goes on from an earlier run). */
  firstPage: number;
  /** The most pages this run may read of the pass; undefined without a limit. */
  pages: number | undefined;
  /** The most records one call answers; Infinity when nothing bounds it. */
  recordsPerCall: number;
}

/**
 * Worst and expected credits of a pass over a partition: the worst case pays every page this run
 * may read (see `pagesThisRun`); the expected case what reading the records it typically holds
 * costs (`expectedPass`).
 */
export function passCost(
  stream: CompiledRequestStream,
  ctx: StreamContext,
  partition: Partition,
  saved: PartitionState,
): PassEstimate {
  const page = (ctx.fullRefresh ? undefined : saved.pending) ?? { number: 1 };
  const args = renderArgs(stream, ctx, partition, saved, page);
  const path = stream.requester.pathOf(partition);
  const cost = costOfCall(ctx.costs, stream.cost, path, args);
  const maxPages = stream.paginator.maxPages(partition);
  if (maxPages === undefined && cost.worst > 0) {
    throw new StreamDefinitionError(
      `stream "${stream.name}": its call costs credits but its ${stream.paginator.name} paginator sets no page limit, so no worst case can be reserved; page it with page_token and max_pages`,
    );
  }
  // A page asked as a batch item (via: batch) is never a single call on the wire.
  const single = !(stream.pagesAsBatchItems && stream.requester.batchItemOf(partition, args));
  const pages = pagesThisRun(stream, saved, page, maxPages);
  const recordsPerCall = stream.paginator.recordsPerCall(args, stream.cost);
  // A later pass of a stream that stops at the newest item it loaded reads what came since: its first page, usually.
  const typical = ctx.fullRefresh || !hasStoppingPoint(stream, saved) ? stream.typicalRecords(partition) : undefined;
  const call: PassCall = { stream, ctx, path, args, cost, firstPage: page.number, pages, recordsPerCall };
  const expected = typical === undefined ? firstPageHalfFull(call) : expectedPass(call, typical);
  return {
    worst: cost.worst * (pages ?? 1),
    expected: expected.credits,
    perCall: single ? cost.worst : 0,
    // A free listing without a page limit (cursor) may load any number of rows: a stream reading them has no bound.
    records: { worst: pages === undefined ? Infinity : recordsPerCall * pages, expected: expected.records },
  };
}

/** Without a typical size: the first page, half full (a neutral guess: neither empty nor full). */
function firstPageHalfFull(call: PassCall): { credits: number; records: number } {
  // An answer of no stated size is expected like a page of the cost's page size.
  const page = Number.isFinite(call.recordsPerCall) ? call.recordsPerCall : call.stream.cost.pageSize;
  return { credits: call.cost.expected, records: page / 2 };
}

/**
 * Reading `typical` records: a search returns that many (at most the results it asks), priced as
 * the service bills what it returns; a feed pages through them, at least one page and at most
 * the pages this run may read.
 */
function expectedPass(call: PassCall, typical: number): { credits: number; records: number } {
  const { stream, ctx } = call;
  const asked = stream.cost.resultsAsked(call.args);
  if (stream.cost.sized && asked !== undefined) {
    const returned = Math.min(typical, asked);
    // Nothing returned bills nothing (empty pages are free, results are billed as returned).
    if (returned === 0) return { credits: 0, records: 0 };
    const priced = costOfCall(ctx.costs, stream.cost, call.path, call.args, returned);
    return { credits: priced.expected, records: returned };
  }
  if (!Number.isFinite(call.recordsPerCall)) return { credits: call.cost.expected, records: typical };
  const left = Math.max(0, typical - (call.firstPage - 1) * call.recordsPerCall);
  const pages = Math.min(Math.max(1, Math.ceil(left / call.recordsPerCall)), call.pages ?? Infinity);
  return { credits: call.cost.expected * pages, records: Math.min(left, pages * call.recordsPerCall) };
}

/** Adds a pass's cost to a total. */
export function addCost(total: PassCost, cost: PassCost): void {
  total.worst += cost.worst;
  total.expected += cost.expected;
  total.perCall = Math.max(total.perCall, cost.perCall);
}

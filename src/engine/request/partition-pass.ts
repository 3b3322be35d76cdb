import type { Destination, StateRow } from '../../destinations/destination.js';
import type { CapRead, HeldWindow } from '../../manifest/components/caps.js';
import { laterIso } from '../../manifest/components/incremental.js';
import type { Partition } from '../../manifest/components/partitions.js';
import type { CompiledRequestStream } from '../../manifest/compile-stream.js';
import type { ShapedRecords } from '../../normalize/table-shaper.js';
import type { PaidAnswer } from '../books/answer-journal.js';
import { isRecent } from '../books/freshness.js';
import { readStateRows } from '../books/ledger-pages.js';
import type { StreamContext } from '../stream-context.js';

export type { PageAnswer } from '../../manifest/components/paginators.js';

// A request stream's passes over its partitions: their saved state, the arguments of each page,
// and the state after a pass's last page. Pure functions, shared by single calls and page rounds.

/** Saved state of one partition of a request stream (JSON in `_seedline_state.cursor`). */
export interface PartitionState {
  /** When the last complete pass ended (ISO). */
  completed_at?: string;
  /** Newest incremental value loaded by complete passes. */
  newest?: string;
  /** A pass under way: where the next run resumes (after a crash, a stop, or a cut at max_pages). */
  pending?: PageState;
  /** The last error of this partition, if its last attempt failed. */
  error?: string;
  /** The last complete pass ran after the partition's window had closed (month windows). */
  window_closed?: boolean;
  /** A window whose answer was cut at the service's cap (see `HeldWindow`): asked again once the cap is raised. */
  held?: HeldWindow;
}

/** A pass over one partition under way in this run. */
export interface Pass {
  partition: Partition;
  /** The partition's state when this run started (or resumed) the pass. */
  saved: PartitionState;
  /** The page to ask next. */
  page: PageState;
  /** Most pages this run may read of the pass; undefined without a limit. */
  limit: number | undefined;
  /** Whether the pass has reached the items of earlier passes. */
  reachedStop: boolean;
  /** Pages read in this run, the next one included. */
  pagesRead: number;
}

/** What one answer of a pass gives: rows to load, the state that says they are loaded, and whether the pass goes on. */
export interface TakenAnswer {
  shaped: ShapedRecords;
  state: PartitionState;
  more: boolean;
}

/** Where a pass stands. */
export interface PageState {
  number: number;
  token?: string | null;
  cursor?: string | null;
  /** Newest incremental value seen so far in this pass. */
  newest?: string;
}

/**
 * The arguments of a pass's call for `page`. `withoutClock` leaves out what depends on the time
 * now (`days_since_last`): what a call asks apart from that names its answer in the journal, so
 * an answer paid for yesterday still answers the same page today.
 */
export function renderArgs(
  stream: CompiledRequestStream,
  ctx: StreamContext,
  partition: Partition,
  saved: PartitionState,
  page: PageState,
  { withoutClock = false } = {},
): Record<string, unknown> {
  const render = (since: string | undefined) => {
    // A full refresh asks as a first run does: no `newest`, no `days_since_last` (jobs' posted_within_days).
    const state = ctx.fullRefresh
      ? {}
      : { newest: saved.newest, days_since_last: withoutClock ? undefined : daysSince(since, ctx.now()) };
    return stream.requester.argsOf(partition, state, page);
  };
  let args = render(saved.completed_at);
  // A window cut at a smaller cap is asked again, from the last pass that was not cut, once the cap is raised.
  if (!ctx.fullRefresh && stream.cap.reopens(saved.held, args)) args = render(saved.held.since);
  return stream.paginator.pageArgs(args, page);
}

/**
 * The most pages one run may read of a partition's pass, from `page` on; `undefined` without a
 * limit. A pass that has a stopping point (the newest item of earlier passes) reads at most
 * `max_pages` per run and goes on in the next run until it reaches that point, so no item between
 * the cut and the stopping point is skipped. A pass without one (a first pass) ends at page
 * `max_pages`: there `max_pages` is how far back the history goes.
 */
export function pagesThisRun(
  stream: CompiledRequestStream,
  saved: PartitionState,
  page: PageState,
  maxPages: number | undefined,
): number | undefined {
  if (maxPages === undefined) return undefined;
  if (hasStoppingPoint(stream, saved)) return maxPages;
  return Math.max(1, maxPages - page.number + 1);
}

/** Whether a pass stops at the newest item earlier passes saved. */
export function hasStoppingPoint(stream: CompiledRequestStream, saved: PartitionState): boolean {
  return stream.incremental.stopsAtNewest && saved.newest !== undefined;
}

/** The saved states of partition `keys` (read a page of keys at a time); a partition without one is absent. */
export async function readStates(
  destination: Destination,
  stream: string,
  keys: Iterable<string>,
): Promise<Map<string, PartitionState>> {
  const rows = await readStateRows(destination, stream, keys);
  return new Map([...rows].map(([key, row]) => [key, parseState(row.cursor)]));
}

export function parseState(cursor: string): PartitionState {
  try {
    return JSON.parse(cursor) as PartitionState;
  } catch {
    return {};
  }
}

export function stateRow(stream: string, partition: string, state: PartitionState): StateRow {
  return { stream, partition, cursor: JSON.stringify(state) };
}

export function isFresh(
  state: PartitionState | undefined,
  partition: Partition,
  refreshMs: number | undefined,
  now: Date,
): boolean {
  const last = state?.completed_at;
  if (!last || state?.pending) return false;
  // A closed window (last month) is final once a pass read it after it closed.
  if (partition.final) return state?.window_closed === true;
  return isRecent(last, refreshMs, now);
}

/**
 * The state after a pass's last page. An answer cut at the service's cap either holds its window
 * (the next runs ask only what is newer, and the cut window again once the cap is raised) or
 * leaves a closed window not final (it is read again next run).
 */
export function endOfPass(
  saved: PartitionState,
  passNewest: string | undefined,
  partition: Partition,
  read: CapRead,
  now: Date,
  asked: WindowAsked,
): PartitionState {
  const state: PartitionState = {
    completed_at: now.toISOString(),
    newest: laterIso(saved.newest, passNewest),
    window_closed: partition.final === true && !read.cut,
  };
  // An answer not cut read its whole window: a held window it covered (all of it, or the held one) is done.
  const held =
    read.cut && read.onCut === 'hold'
      ? heldAfterCut(saved, read.at ?? 0, asked)
      : asked === 'new'
        ? saved.held
        : undefined;
  if (held) state.held = held;
  return state;
}

/** Which window a pass asked: see `PartitionRunner.windowAsked`. */
export type WindowAsked = 'all' | 'held' | 'new';

/** The window to ask again after an answer cut at `at`: from the last pass that was not cut (all time when none was). */
export function heldAfterCut(saved: PartitionState, at: number, asked: WindowAsked): HeldWindow {
  const since = asked === 'all' ? undefined : saved.held ? saved.held.since : saved.completed_at;
  return since === undefined ? { at } : { since, at };
}

/**
 * When a page's answers arrived: the earliest, so a pass finished from an answer an earlier run
 * journaled ends at that answer's time and the next window still covers what came after it.
 */
export function firstAnswerAt(answers: readonly PaidAnswer[], now: Date): Date {
  return answers.reduce((min, a) => (a.receivedAt < min ? a.receivedAt : min), now);
}

export function daysSince(iso: string | undefined, now: Date): number | undefined {
  if (!iso) return undefined;
  return Math.max(1, Math.ceil((now.getTime() - Date.parse(iso)) / 86_400_000));
}

import type { Destination, StateRow } from '../../destinations/destination.js';
import type { CompiledStream } from '../../manifest/compile-stream.js';
import { seedLedgerPages } from './ledger-pages.js';

/** What `seedline state show` reports of one stream. */
export interface StreamStateSummary {
  stream: string;
  /** Seed-ledger rows by status (batch streams). */
  seeds: Record<string, number>;
  /** Partitions with a recorded state (paged and search streams). */
  partitions: number;
  /** When its ledger or state last changed; null when it has none. */
  lastUpdatedAt: string | null;
  /** The most recently changed partitions' cursors (at most the `cursors` asked for), newest first. */
  cursors?: PartitionCursor[];
}

/** One partition's saved state: where its passes stand (`newest`, a pass under way, a held window, an error). */
export interface PartitionCursor {
  partition: string;
  updatedAt: string | null;
  /** The cursor as saved: parsed JSON, or its text when it is not JSON. */
  cursor: unknown;
}

/** What a reset made due. */
export interface ResetOutcome {
  stream: string;
  /** Ledger rows whose fetch time was cleared. */
  seeds: number;
  /** Partition states deleted. */
  partitions: number;
}

/** A stream's ledger and state, summed up. */
export async function summarizeState(
  destination: Destination,
  stream: string,
  cursors = 0,
): Promise<StreamStateSummary> {
  const byStatus: Record<string, number> = {};
  let last = -Infinity;
  const seen = (at: Date | null | undefined) => (last = at instanceof Date ? Math.max(last, at.getTime()) : last);
  // The ledger a page at a time: a stream of a million seeds is counted without holding it.
  for await (const page of seedLedgerPages(destination, stream)) {
    for (const seed of page) {
      byStatus[seed.status] = (byStatus[seed.status] ?? 0) + 1;
      seen(seed.updatedAt);
    }
  }
  const states = [...(await destination.readState(stream)).values()];
  for (const state of states) seen(state.updatedAt);
  return {
    stream,
    seeds: byStatus,
    partitions: states.length,
    lastUpdatedAt: last === -Infinity ? null : new Date(last).toISOString(),
    ...(cursors > 0 ? { cursors: latestCursors(states, cursors) } : {}),
  };
}

/** The `limit` partitions whose state changed last, newest first. */
function latestCursors(states: readonly StateRow[], limit: number): PartitionCursor[] {
  return [...states]
    .sort((a, b) => (b.updatedAt?.getTime() ?? 0) - (a.updatedAt?.getTime() ?? 0))
    .slice(0, limit)
    .map((state) => ({
      partition: state.partition,
      updatedAt: state.updatedAt?.toISOString() ?? null,
      cursor: parsedCursor(state.cursor),
    }));
}

function parsedCursor(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * Makes a stream's work due at the next run, all of it or one seed's: ledger rows lose their
 * fetch time (so `refresh_after` no longer skips them) and partition states (cursors, completed
 * passes) are deleted, in one unit. Nothing is deleted from the data tables: the next run merges
 * what it fetches over the rows there.
 */
export async function resetStreamState(
  destination: Destination,
  compiled: Pick<CompiledStream, 'name' | 'partitions'>,
  runId: string,
  seed?: string,
): Promise<ResetOutcome> {
  const stream = compiled.name;
  // For seed streams a seed's canonical key; for streams over loaded rows the partitions of that parent (`<url>|kind=…` too).
  const matches = seed === undefined ? () => true : compiled.partitions.matchesSeed(seed);
  const seeds = [...(await destination.readSeeds(stream)).values()].filter((row) => matches(row.seedKey));
  const partitions = [...(await destination.readState(stream)).keys()].filter(matches);
  const unit = await destination.beginUnit(runId);
  try {
    if (seeds.length > 0) await unit.saveSeeds(seeds.map((row) => ({ ...row, fetchedAt: null })));
    if (partitions.length > 0) await unit.dropState(stream, partitions);
    await unit.commit();
  } catch (error) {
    await unit.rollback().catch(() => undefined);
    throw error;
  }
  return { stream, seeds: seeds.length, partitions: partitions.length };
}

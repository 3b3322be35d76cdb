import type { AnswerRow, BatchRow, Destination, SeedRow, StateRow } from '../destinations/destination.js';
import type { StreamSeed } from '../engine/batch/stream-seeds.js';
import type { CompactLedger } from './compact-ledger.js';
import { exportLedger, restoreCompactLedger, type SeedState } from './compact-state.js';

/**
 * A seedline stream's resumable state, as it travels in an Airbyte STATE message: its seed ledger
 * (what was fetched when, what failed: row by row when small, else compact), its partitions' cursors, its batch jobs still open (each
 * with its Idempotency-Key, job id and exact body) and the answers it paid for but did not load.
 * The platform keeps it between syncs; fed back with `--state`, a sync in a fresh container skips
 * what is still fresh, re-attaches to the jobs it submitted, loads the journaled answers and asks
 * only what is newer, so a retried or rescheduled sync does not buy anything twice.
 */
export interface StreamStateBlob {
  seedline_stream: string;
  /** The ledger row by row (fewer than `COMPACT_FROM` rows). */
  seeds?: SeedState[];
  /** The ledger in a size that does not grow past a byte a seed (see docs/airbyte.md#state-that-fits). */
  seed_ledger?: CompactLedger;
  partitions: { partition: string; cursor: string }[];
  /** Batch jobs not finished (`intent` or `submitted`). Default: none (state of an earlier version). */
  batches?: OpenBatch[];
  /** Answers of billed single calls journaled and not loaded. Default: none. */
  answers?: JournaledAnswer[];
}

/** An open batch job as the state carries it (`_seedline_batches`'s row, times as ISO text). */
type OpenBatch = Omit<BatchRow, 'createdAt' | 'updatedAt'> & { createdAt: string | null };
/** A journaled answer as the state carries it. */
type JournaledAnswer = Omit<AnswerRow, 'receivedAt'> & { receivedAt: string };

/**
 * The state blob of a stream, read from the destination.
 * @param maxRoundingMs how much earlier than they were a compact ledger may record fetches (a share of refresh_after)
 */
export async function exportStreamState(
  destination: Destination,
  stream: string,
  maxRoundingMs?: number,
): Promise<StreamStateBlob> {
  const partitions = [...(await destination.readState(stream)).values()];
  return {
    seedline_stream: stream,
    ...(await exportLedger(destination, stream, maxRoundingMs)),
    partitions: partitions.map((p) => ({ partition: p.partition, cursor: p.cursor })),
    batches: (await destination.readBatches(stream))
      .filter((b) => b.status === 'intent' || b.status === 'submitted')
      .map(({ createdAt, updatedAt: _updated, ...b }) => ({ ...b, createdAt: createdAt?.toISOString() ?? null })),
    answers: [...(await destination.readAnswers(stream)).values()].map(({ receivedAt, ...a }) => ({
      ...a,
      receivedAt: receivedAt.toISOString(),
    })),
  };
}

/** What a restore wrote, and the seeds a compact ledger left due because their list changed too much. */
export interface RestoredState {
  seeds: number;
  partitions: number;
  batches: number;
  answers: number;
  unresolved: number;
}

/**
 * Writes state blobs into the destination where it has no newer word of its own: a ledger row or
 * partition it lacks, or one fetched earlier than the blob says. A destination that outlived the
 * platform's state keeps what it knows. Rows carried row by row go in one unit; a compact ledger
 * is read against the stream's seeds now (`seedsOf`: a new pass over them each call; a stream it
 * gives none for is skipped).
 */
export async function restoreStreamStates(
  destination: Destination,
  blobs: readonly StreamStateBlob[],
  runId: string,
  seedsOf: (stream: string) => (() => AsyncIterable<StreamSeed[]>) | undefined = () => undefined,
): Promise<RestoredState> {
  let compact = { seeds: 0, unresolved: 0 };
  for (const blob of blobs) {
    const seeds = blob.seed_ledger ? seedsOf(blob.seedline_stream) : undefined;
    if (!seeds) continue;
    const restored = await restoreCompactLedger(destination, blob.seedline_stream, blob.seed_ledger!, seeds, runId);
    compact = { seeds: compact.seeds + restored.seeds, unresolved: compact.unresolved + restored.unresolved };
  }
  const seeds: SeedRow[] = [];
  const partitions: StateRow[] = [];
  const batches: BatchRow[] = [];
  const answers: AnswerRow[] = [];
  for (const blob of blobs) {
    batches.push(...(await openBatchesToRestore(destination, blob)));
    answers.push(...(await answersToRestore(destination, blob)));
    // Rows carried row by row are few (see COMPACT_FROM): the store's ledger of the stream is read whole only for them.
    const known = blob.seeds?.length ? await destination.readSeeds(blob.seedline_stream) : new Map<string, SeedRow>();
    for (const seed of blob.seeds ?? []) {
      const mine = known.get(seed.key);
      const theirs = seed.fetched_at ? Date.parse(seed.fetched_at) : 0;
      if (mine && (mine.fetchedAt?.getTime() ?? 0) >= theirs) continue;
      seeds.push({
        stream: blob.seedline_stream,
        seedKey: seed.key,
        seed: seed.seed,
        status: seed.status as SeedRow['status'],
        fetchedAt: seed.fetched_at ? new Date(seed.fetched_at) : null,
        credits: seed.credits,
        error: seed.error,
        ...(seed.updated_at ? { updatedAt: new Date(seed.updated_at) } : {}),
      });
    }
    const cursors = await destination.readState(blob.seedline_stream);
    for (const partition of blob.partitions)
      if (!cursors.has(partition.partition)) partitions.push({ stream: blob.seedline_stream, ...partition });
  }
  const restored = {
    seeds: seeds.length + compact.seeds,
    partitions: partitions.length,
    batches: batches.length,
    answers: answers.length,
    unresolved: compact.unresolved,
  };
  if (seeds.length + partitions.length + batches.length + answers.length === 0) return restored;
  const unit = await destination.beginUnit(runId);
  try {
    if (seeds.length > 0) await unit.saveSeeds(seeds);
    if (partitions.length > 0) await unit.saveState(partitions);
    if (batches.length > 0) await unit.saveBatches(batches);
    if (answers.length > 0) await unit.saveAnswers(answers);
    await unit.commit();
  } catch (error) {
    await unit.rollback().catch(() => undefined);
    throw error;
  }
  return restored;
}

/** The blob's open batch jobs the destination has no row of (a row it has is as new or newer). */
async function openBatchesToRestore(destination: Destination, blob: StreamStateBlob): Promise<BatchRow[]> {
  if (!blob.batches?.length) return [];
  const known = new Set((await destination.readBatches(blob.seedline_stream)).map((b) => b.idempotencyKey));
  return blob.batches
    .filter((b) => !known.has(b.idempotencyKey))
    .map(({ createdAt, ...b }) => ({
      ...b,
      stream: blob.seedline_stream,
      ...(createdAt ? { createdAt: new Date(createdAt) } : {}),
    }));
}

/** The blob's journaled answers the destination lacks. */
async function answersToRestore(destination: Destination, blob: StreamStateBlob): Promise<AnswerRow[]> {
  if (!blob.answers?.length) return [];
  const known = await destination.readAnswers(blob.seedline_stream);
  return blob.answers
    .filter((a) => !known.has(a.callKey))
    .map(({ receivedAt, ...a }) => ({ ...a, stream: blob.seedline_stream, receivedAt: new Date(receivedAt) }));
}

/** The state blobs in what `--state` holds: an array of STATE messages' `state` objects (or whole messages), per stream. */
export function stateBlobsOf(input: unknown): StreamStateBlob[] {
  const items = Array.isArray(input) ? input : [input];
  const blobs = new Map<string, StreamStateBlob>();
  for (const item of items) {
    const state = (item as { state?: unknown })?.state ?? item;
    const blob = (state as { stream?: { stream_state?: StreamStateBlob } })?.stream?.stream_state;
    const ledger = blob && (Array.isArray(blob.seeds) || typeof blob.seed_ledger === 'object');
    if (ledger && typeof blob.seedline_stream === 'string' && Array.isArray(blob.partitions))
      blobs.set(blob.seedline_stream, blob);
  }
  return [...blobs.values()];
}

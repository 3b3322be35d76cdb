import type { AnswerRow, BatchRow, Destination, SeedRow, StateRow } from '../destinations/destination.js';

/**
 * A seedline stream's resumable state, as it travels in an Airbyte STATE message: its seed ledger
 * (what was fetched when, what failed), its partitions' cursors, its batch jobs still open (each
 * with its Idempotency-Key, job id and exact body) and the answers it paid for but did not load.
 * The platform keeps it between syncs; fed back with `--state`, a sync in a fresh container skips
 * what is still fresh, re-attaches to the jobs it submitted, loads the journaled answers and asks
 * only what is newer, so a retried or rescheduled sync does not buy anything twice.
 */
export interface StreamStateBlob {
  seedline_stream: string;
  seeds: {
    key: string;
    seed: string;
    status: string;
    fetched_at: string | null;
    credits: number;
    error: string | null;
  }[];
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

/** The state blob of a stream, read from the destination. */
export async function exportStreamState(destination: Destination, stream: string): Promise<StreamStateBlob> {
  const seeds = [...(await destination.readSeeds(stream)).values()];
  const partitions = [...(await destination.readState(stream)).values()];
  return {
    seedline_stream: stream,
    seeds: seeds.map((s) => ({
      key: s.seedKey,
      seed: s.seed,
      status: s.status,
      fetched_at: s.fetchedAt ? s.fetchedAt.toISOString() : null,
      credits: s.credits ?? 0,
      error: s.error ?? null,
    })),
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

/**
 * Writes state blobs into the destination, in one unit, where it has no newer word of its own:
 * a ledger row or partition it lacks, or one fetched earlier than the blob says. A destination
 * that outlived the platform's state keeps what it knows.
 */
export async function restoreStreamStates(
  destination: Destination,
  blobs: readonly StreamStateBlob[],
  runId: string,
): Promise<{ seeds: number; partitions: number; batches: number; answers: number }> {
  const seeds: SeedRow[] = [];
  const partitions: StateRow[] = [];
  const batches: BatchRow[] = [];
  const answers: AnswerRow[] = [];
  for (const blob of blobs) {
    batches.push(...(await openBatchesToRestore(destination, blob)));
    answers.push(...(await answersToRestore(destination, blob)));
    const known = await destination.readSeeds(blob.seedline_stream);
    for (const seed of blob.seeds) {
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
      });
    }
    const cursors = await destination.readState(blob.seedline_stream);
    for (const partition of blob.partitions)
      if (!cursors.has(partition.partition)) partitions.push({ stream: blob.seedline_stream, ...partition });
  }
  const restored = {
    seeds: seeds.length,
    partitions: partitions.length,
    batches: batches.length,
    answers: answers.length,
  };
  if (Object.values(restored).every((count) => count === 0)) return restored;
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
    if (blob && typeof blob.seedline_stream === 'string' && Array.isArray(blob.seeds) && Array.isArray(blob.partitions))
      blobs.set(blob.seedline_stream, blob);
  }
  return [...blobs.values()];
}

import type { Destination, SeedRow, StateRow } from '../destinations/destination.js';

/**
 * A seedline stream's resumable state, as it travels in an Airbyte STATE message: its seed ledger
 * (what was fetched when, what failed) and its partitions' cursors. The platform keeps it between
 * syncs; fed back with `--state`, a sync in a fresh container skips what is still fresh and asks
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
}

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
): Promise<{ seeds: number; partitions: number }> {
  const seeds: SeedRow[] = [];
  const partitions: StateRow[] = [];
  for (const blob of blobs) {
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
  if (seeds.length === 0 && partitions.length === 0) return { seeds: 0, partitions: 0 };
  const unit = await destination.beginUnit(runId);
  try {
    if (seeds.length > 0) await unit.saveSeeds(seeds);
    if (partitions.length > 0) await unit.saveState(partitions);
    await unit.commit();
  } catch (error) {
    await unit.rollback().catch(() => undefined);
    throw error;
  }
  return { seeds: seeds.length, partitions: partitions.length };
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

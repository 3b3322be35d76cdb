import type { Destination, SeedRow } from '../destinations/destination.js';
import { LEDGER_PAGE, readSeedRows } from '../engine/books/ledger-pages.js';
import type { StreamSeed } from '../engine/batch/stream-seeds.js';
import { CompactLedgerBuilder, readCompactLedger, type CompactLedger, type SeedMark } from './compact-ledger.js';
import { keyHash } from './set-sketch.js';

/** Ledger rows from which a stream's state carries a compact ledger instead of its rows. */
export const COMPACT_FROM = 2_000;
/** Ledger rows restored per unit of work. */
const RESTORE_UNIT = 20_000;
/** Ledger rows read at a time for an export. */
const LEDGER_CHUNK = 5_000;

/** A ledger row as a state carries it when the ledger is small. */
export interface SeedState {
  key: string;
  seed: string;
  status: string;
  fetched_at: string | null;
  credits: number;
  error: string | null;
  /**
   * When the row was last written (ISO). A batch intent's Idempotency-Key derives from it, so a
   * read killed after submitting and a retry fed the same state, each in a fresh store, send the
   * same key and the service bills the job once. Default: the restore's time (state of an earlier version).
   */
  updated_at?: string | null;
}

/**
 * A stream's ledger for its state, read a page at a time: its rows while they are fewer than
 * {@link COMPACT_FROM}, else a {@link CompactLedger} (no seed in it, a byte a seed at most).
 * @param maxRoundingMs how much earlier than they were the compact ledger may record fetches
 */
export async function exportLedger(
  destination: Destination,
  stream: string,
  maxRoundingMs = Infinity,
): Promise<{ seeds: SeedState[] } | { seed_ledger: CompactLedger }> {
  let rows: SeedState[] | undefined = [];
  const builder = new CompactLedgerBuilder();
  for await (const page of destination.readSeedChunks(stream, LEDGER_CHUNK)) {
    for (const row of page) builder.add(row.seedKey, markOf(row));
    if (rows && rows.length + page.length < COMPACT_FROM) rows.push(...page.map(seedState));
    else rows = undefined;
  }
  return rows ? { seeds: rows } : { seed_ledger: builder.build(maxRoundingMs) };
}

/**
 * Writes the ledger rows a compact ledger gives the stream's current seeds, where the destination
 * has no newer word of its own, in units of {@link RESTORE_UNIT} rows.
 * @returns rows written, and seeds left due because the list changed too much to tell them apart
 */
export async function restoreCompactLedger(
  destination: Destination,
  stream: string,
  ledger: CompactLedger,
  seeds: () => AsyncIterable<StreamSeed[]>,
  runId: string,
): Promise<{ seeds: number; unresolved: number }> {
  // Two passes over the list, so only its hashes are held (8 bytes a seed), never its seeds.
  const hashes: number[] = [];
  for await (const chunk of seeds()) for (const seed of chunk) hashes.push(keyHash(seed.key));
  const reading = readCompactLedger(ledger, Float64Array.from(hashes));
  hashes.length = 0;
  // A fresh container's store has no ledger of the stream: nothing to compare with.
  const empty = (await destination.readSeedPage(stream, null, 1)).length === 0;
  let written = 0;
  let position = 0;
  let unit: SeedRow[] = [];
  const save = async () => {
    written += await saveRows(destination, stream, unit, empty, runId);
    unit = [];
  };
  for await (const chunk of seeds()) {
    for (const seed of chunk) {
      const mark = ledger.marks[(reading.marks[position++] ?? 0) - 1];
      if (mark) unit.push(restoredRow(stream, seed, mark));
    }
    if (unit.length >= RESTORE_UNIT) await save();
  }
  if (unit.length > 0) await save();
  return { seeds: written, unresolved: reading.unresolved };
}

/** Saves restored rows in one unit, less those the store has as new or newer; answers how many it saved. */
async function saveRows(
  destination: Destination,
  stream: string,
  restored: readonly SeedRow[],
  empty: boolean,
  runId: string,
): Promise<number> {
  const known = empty
    ? new Map<string, SeedRow>()
    : await readSeedRows(
        destination,
        stream,
        restored.map((row) => row.seedKey),
        LEDGER_PAGE,
      );
  const rows = restored.filter(
    (row) => (known.get(row.seedKey)?.fetchedAt?.getTime() ?? -Infinity) < row.fetchedAt!.getTime(),
  );
  if (rows.length === 0) return 0;
  const unit = await destination.beginUnit(runId);
  try {
    await unit.saveSeeds(rows);
    await unit.commit();
  } catch (error) {
    await unit.rollback().catch(() => undefined);
    throw error;
  }
  return rows.length;
}

/** What a compact ledger keeps of a row: a fetch, a failure for good or a pending seed since a time; nothing else. */
function markOf(row: SeedRow): (Omit<SeedMark, 'at'> & { at: Date }) | undefined {
  if (!row.fetchedAt) return undefined;
  const status = row.status === 'submitted' ? 'pending' : row.status;
  if (status !== 'fetched' && status !== 'failed' && status !== 'pending') return undefined;
  return { status, error: status === 'failed' ? errorType(row.error) : null, at: row.fetchedAt };
}

function restoredRow(stream: string, seed: StreamSeed, mark: SeedMark): SeedRow {
  return {
    stream,
    seedKey: seed.key,
    seed: seed.seed,
    status: mark.status,
    fetchedAt: new Date(mark.at),
    credits: 0,
    error: mark.error === null ? null : `${mark.error}: as the Airbyte state recorded it`,
    // Not the restore's time: a killed read and its retry, each restoring this state, derive the same Idempotency-Keys.
    updatedAt: new Date(mark.at),
  };
}

function seedState(row: SeedRow): SeedState {
  return {
    key: row.seedKey,
    seed: row.seed,
    status: row.status,
    fetched_at: row.fetchedAt ? row.fetchedAt.toISOString() : null,
    credits: row.credits ?? 0,
    error: row.error ?? null,
    updated_at: row.updatedAt?.toISOString() ?? null,
  };
}

/** The service's error type a failed row was recorded with (`not_found: …` → `not_found`). */
function errorType(error: string | null | undefined): string | null {
  return error ? (error.split(':')[0] ?? null) : null;
}

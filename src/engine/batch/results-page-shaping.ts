import type { Meta } from '../../../schemas/common.js';
import { envelope } from '../../../schemas/common.js';
import { BatchResultsPage, type BatchResultEntry } from '../../../schemas/batch.js';
import { PARTITION } from '../../normalize/table-definition.js';
import { shapeForWrite, type ShapedWrite, type WriteShaping } from '../../normalize/record-shaper.js';
import type { ShapeRejection, ShapedRecords, TableShaper } from '../../normalize/table-shaper.js';

/** A results page's body, as the client validates it (made once: zod compiles a schema's checks at its first parse). */
const RESULTS_PAGE = envelope(BatchResultsPage);

/** A result entry as the batch runner reads it. */
export type ResultEntry = Pick<BatchResultEntry, 'ref' | 'status' | 'credits_used' | 'data' | 'error'>;

/** What the seed ledger and the books need of one result entry, once its record is shaped. */
export interface EntryFacts {
  ref: string;
  status: 'succeeded' | 'failed';
  credits_used: number;
  /** The record's `url` (null when it has none, or the entry failed). */
  canonicalUrl: string | null;
  /** Why its record was rejected (the first reason), when it was. Default: absent. */
  rejection?: string;
  /** The service's error of a failed entry. Default: absent. */
  error?: { type: string; message: string };
}

/** The rows of one table of a results page, shaped for the destination's write. */
export interface ShapedPageTable {
  table: string;
  /** An entry whose partition names the table, for its definition. */
  ref: string;
  /** The records that passed their schema, shaped by `shapeForWrite` (null when none did). */
  write: ShapedWrite | null;
  /** Records given to the write. */
  size: number;
  /** The partition of each record the write rejected, in order (a symbol does not cross threads). */
  rejectedPartitions: unknown[];
  /** Records their schema refused. */
  rejected: ShapeRejection[];
}

/** A results page read, validated and shaped: what a worker thread hands back. */
export interface ShapedResultsPage {
  entries: EntryFacts[];
  tables: ShapedPageTable[];
}

/** The partition values of an entry's item (its ref and seed when the job recorded none). */
export type ValuesOf = (ref: string) => Record<string, unknown>;

/** `ValuesOf` a job's items, given as `[ref, partition values]`: an unknown ref stands for itself. */
export function valuesLookup(items: Iterable<readonly [string, Record<string, unknown>]>): ValuesOf {
  const byRef = new Map(items);
  return (ref) => byRef.get(ref) ?? { key: ref, seed: ref };
}

/** The facts of an entry; `group` is its record shaped (for a succeeded one). */
export function entryFacts(entry: ResultEntry, group?: ShapedRecords): EntryFacts {
  const base = { ref: entry.ref, status: entry.status, credits_used: entry.credits_used };
  if (entry.status !== 'succeeded')
    return {
      ...base,
      canonicalUrl: null,
      error: { type: entry.error?.type ?? 'failed', message: entry.error?.message ?? 'no message' },
    };
  const rejection = group?.rejected[0]?.reason;
  return {
    ...base,
    canonicalUrl: (entry.data as { url?: string } | undefined)?.url ?? null,
    ...(rejection ? { rejection } : {}),
  };
}

/** The entries' facts, and their records shaped by `shaper` grouped by table (the first entry naming each). */
export function shapeEntries(
  entries: readonly ResultEntry[],
  valuesOf: ValuesOf,
  shaper: TableShaper,
): { facts: EntryFacts[]; tables: Map<string, { ref: string; group: ShapedRecords }> } {
  const facts: EntryFacts[] = [];
  const tables = new Map<string, { ref: string; group: ShapedRecords }>();
  for (const entry of entries) {
    if (entry.status !== 'succeeded') {
      facts.push(entryFacts(entry));
      continue;
    }
    const group = shaper.shape(valuesOf(entry.ref), [entry.data]);
    facts.push(entryFacts(entry, group));
    const seen = tables.get(group.table.name);
    if (!seen)
      tables.set(group.table.name, {
        ref: entry.ref,
        group: { table: group.table, rows: [...group.rows], rejected: [...group.rejected] },
      });
    else {
      seen.group.rows.push(...group.rows);
      seen.group.rejected.push(...group.rejected);
    }
  }
  return { facts, tables };
}

/**
 * A results page's entries shaped all the way to the destination's writes (`shapings`, by table);
 * null when a record belongs to a table `shapings` lacks (its first write has not made it yet).
 */
export function shapeResultsPage(
  entries: readonly ResultEntry[],
  valuesOf: ValuesOf,
  shaper: TableShaper,
  shapings: ReadonlyMap<string, WriteShaping>,
  runId: string,
): ShapedResultsPage | null {
  const { facts, tables } = shapeEntries(entries, valuesOf, shaper);
  const shaped: ShapedPageTable[] = [];
  for (const [table, { ref, group }] of tables) {
    const shaping = shapings.get(table);
    if (!shaping) return null;
    const write = group.rows.length > 0 ? shapeForWrite(shaping, group.rows, runId) : null;
    const rejectedPartitions = write
      ? write.rejected.map((r) => (r.record as { [PARTITION]?: unknown } | null)?.[PARTITION])
      : [];
    shaped.push({ table, ref, write, size: group.rows.length, rejectedPartitions, rejected: group.rejected });
  }
  return { entries: facts, tables: shaped };
}

/**
 * The text of a `GET /v1/batch/{id}/results` body parsed, validated as the client validates it,
 * and shaped (`shapeResultsPage`); null when it does not parse or fit, for the client to read it
 * and say what is wrong, or when a table has no shaping yet.
 */
export function decodeResultsPage(
  text: string,
  valuesOf: ValuesOf,
  shaper: TableShaper,
  shapings: ReadonlyMap<string, WriteShaping>,
  runId: string,
): { data: ShapedResultsPage; meta: Meta } | null {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = RESULTS_PAGE.safeParse(json);
  if (!parsed.success) return null;
  const data = shapeResultsPage(parsed.data.data, valuesOf, shaper, shapings, runId);
  return data && { data, meta: parsed.data.meta };
}

/**
 * The write of a table of a page shaped in another thread, its rejected records given back their
 * partitions (PARTITION), which `postMessage` left behind: `_seedline_rejected` keeps each with it.
 */
export function writeWithPartitions(shaped: ShapedPageTable): ShapedWrite | null {
  shaped.write?.rejected.forEach((rejection, i) => {
    const partition = shaped.rejectedPartitions[i];
    if (partition !== undefined && rejection.record !== null && typeof rejection.record === 'object')
      (rejection.record as { [PARTITION]?: unknown })[PARTITION] = partition;
  });
  return shaped.write;
}

/** The records of `table` in a results page's text (already validated), shaped again by `shaper`. */
export function recordsOfPage(
  text: string,
  table: string,
  valuesOf: ValuesOf,
  shaper: TableShaper,
): Record<string, unknown>[] {
  const entries = (JSON.parse(text) as { data: ResultEntry[] }).data;
  return shapeEntries(entries, valuesOf, shaper).tables.get(table)?.group.rows ?? [];
}

import type { CellValue } from '../../normalize/record-shaper.js';
import { GrowingKeyFilter } from './key-filter.js';

/** How the filters reach a table's key column, inside the unit's transaction. */
export interface KeyColumnSource {
  /** Rows in the table now (DuckDB answers from its statistics, without a scan). */
  count(): Promise<number>;
  /** Calls `each` with every row's key values, in chunks, never holding them all. */
  scan(each: (key: readonly unknown[]) => void): Promise<void>;
}

/** What a filter knows of one table. */
interface Entry {
  /** A filter of the table's keys; null when there is none. */
  filter: GrowingKeyFilter | null;
  /** Rows the table had when the filter was last brought up to date; a different count means someone else wrote. */
  rows: number;
  /** Keys merged into the table by this process. */
  written: number;
  /** Keys a sync said it is about to merge (`expect`) and has not merged yet: a filter built now makes room for them. */
  expected: number;
}

/** Building a filter scans the table once: worth it once this process merged a quarter as many keys as the table holds. */
const BUILD_RATIO = 4;

/**
 * Tells which keys of a merge unit may already be in a table without a backend without key
 * indexes (DuckDB) scanning the table every unit: a Bloom filter of the table's keys, built by
 * one scan of the key column when it pays (the table is empty, or this process has merged at
 * least a quarter of its size: its cost is then bounded by the work being done) and kept up to
 * date with every unit's keys (a full filter is followed by one twice its size, so the table is
 * not scanned again as it grows). The filter only ever holds a superset of the keys in the table
 * (a rolled-back unit leaves extra keys, which only cost a probe): a row count that is not the
 * one the filter last saw means rows came from elsewhere, and the filter is dropped.
 */
export class MergeKeyFilters {
  private readonly entries = new Map<string, Entry>();

  /**
   * Indices of the keys that may be in `table` (the others certainly are not); null when there
   * is no filter and every key must be probed.
   */
  async candidates(
    table: string,
    keys: readonly (readonly CellValue[])[],
    count: number,
    source: KeyColumnSource,
  ): Promise<number[] | null> {
    const entry = this.entry(table);
    const rows = await source.count();
    if (!entry.filter || entry.rows !== rows) {
      entry.filter = null;
      if (rows > BUILD_RATIO * (entry.written + count)) return null;
      entry.filter = await build(rows, source, entry.expected);
      entry.rows = rows;
    }
    const filter = entry.filter;
    const found: number[] = [];
    for (let i = 0; i < count; i++) {
      if (filter.mayContain(keyText(keys, i))) found.push(i);
    }
    return found;
  }

  /**
   * Says `keys` more keys are about to be merged into `table` (a batch stream's seeds, a record
   * each), so its filter makes room for them in one filter instead of a chain of doublings.
   */
  expect(table: string, keys: number): void {
    const entry = this.entry(table);
    entry.expected = keys;
    entry.filter?.expect(keys);
  }

  /** Adds a unit's keys once they are written; `rows` is the table's row count after the write. */
  written(table: string, keys: readonly (readonly CellValue[])[], count: number, rows: number): void {
    const entry = this.entry(table);
    entry.written += count;
    entry.expected = Math.max(0, entry.expected - count);
    const filter = entry.filter;
    if (!filter) return;
    // A full filter is followed by one twice its size, without a scan.
    for (let i = 0; i < count; i++) filter.add(keyText(keys, i));
    entry.rows = rows;
  }

  /**
   * Takes the row count of `table` after a settle deleted rows the filter may still hold (a
   * superset stays right); a count before the settle that is not the one the filter last saw
   * means rows came from elsewhere, and the filter is dropped.
   */
  settled(table: string, rowsBefore: number, rowsAfter: number): void {
    const entry = this.entries.get(table);
    if (!entry?.filter) return;
    if (entry.rows === rowsBefore) entry.rows = rowsAfter;
    else this.forget(table);
  }

  /** Bytes the filters' bits take (what `expect` saves shows here). */
  get bytes(): number {
    let sum = 0;
    for (const entry of this.entries.values()) sum += entry.filter?.bytes ?? 0;
    return sum;
  }

  /** Forgets what is known of `table` (its rows changed some other way). */
  forget(table: string): void {
    this.entries.delete(table);
  }

  private entry(table: string): Entry {
    let entry = this.entries.get(table);
    if (!entry) {
      entry = { filter: null, rows: -1, written: 0, expected: 0 };
      this.entries.set(table, entry);
    }
    return entry;
  }
}

async function build(rows: number, source: KeyColumnSource, expected: number): Promise<GrowingKeyFilter> {
  const filter = new GrowingKeyFilter(Math.max(1 << 16, 2 * rows, rows + expected));
  await source.scan((key) => filter.add(key.length === 1 ? String(key[0]) : key.map(String).join('\u0001')));
  return filter;
}

/** The i-th key as the filter hashes it: its values as text (a key column is text, bigint or double). */
function keyText(keys: readonly (readonly CellValue[])[], i: number): string {
  if (keys.length === 1) return String(keys[0]![i]);
  let text = String(keys[0]![i]);
  for (let k = 1; k < keys.length; k++) text += `\u0001${String(keys[k]![i])}`;
  return text;
}

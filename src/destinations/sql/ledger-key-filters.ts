import { GrowingKeyFilter } from './key-filter.js';

/** Reads every seed key a stream's ledger holds, calling `add` with each (never holding them all). */
export type LedgerKeyScan = (add: (seedKey: string) => void) => Promise<void>;

/** One stream's filter: the keys written through it, and once `built`, every key the ledger held when it was read. */
interface StreamFilter {
  filter: GrowingKeyFilter;
  /** Settles once the ledger's keys are in the filter; null until a lookup asks for them. */
  built: Promise<void> | null;
}

/** Keys a filter is first sized for; it grows in doublings past that. */
const FIRST_CAPACITY = 1 << 16;

/**
 * Tells which seed keys of a lookup may have a ledger row (`_seedline_seeds`), so a backend
 * whose ledger lookups scan the whole ledger (DuckDB: its primary-key index on `(stream,
 * seed_key)` is not used for a list of keys) asks only for those. A chunk of seeds never
 * recorded, every chunk of a first sync, then costs no read at all, instead of a scan of the
 * ledger a chunk (a million-seed ledger: ~30 ms and ~70 MB of DuckDB's memory a scan).
 *
 * A stream's filter holds every key written through `writing` and, from the first lookup on,
 * every key the ledger held when it was read (one scan of the stream's keys). The two together
 * are a superset of the ledger's keys as long as every ledger write of the file goes through
 * `writing`, which is why one object serves every destination of an open DuckDB file and dies
 * with it: no other process can write the file while it is open. A key wrongly "maybe" (a
 * false positive, a rolled-back write) only costs a lookup; a key missed would make a
 * fetched seed look new, so nothing is ever taken out.
 */
export class LedgerKeyFilters {
  private readonly streams = new Map<string, StreamFilter>();

  /** Adds the keys of ledger rows about to be upserted (before the statement runs, committed or not). */
  writing(schema: string, rows: readonly { stream: unknown; seed_key: unknown }[]): void {
    for (const row of rows) this.of(schema, String(row.stream)).filter.add(String(row.seed_key));
  }

  /** Sizes `stream`'s filter for `keys` more keys (a sync's distinct seeds), so they go to one filter instead of a chain of doublings. */
  expect(schema: string, stream: string, keys: number): void {
    this.of(schema, stream).filter.expect(keys);
  }

  /** The keys among `keys` that may have a ledger row in `stream`; the first call for a stream reads its keys with `scan`. */
  async mayHave(schema: string, stream: string, keys: readonly string[], scan: LedgerKeyScan): Promise<string[]> {
    const entry = this.of(schema, stream);
    entry.built ??= scan((key) => entry.filter.add(key)).catch((error: unknown) => {
      // A half-read filter would miss keys: the next lookup reads them all again.
      entry.built = null;
      throw error;
    });
    await entry.built;
    return keys.filter((key) => entry.filter.mayContain(key));
  }

  /** Bytes the filters' bits take (what `expect` saves shows here). */
  get bytes(): number {
    let sum = 0;
    for (const entry of this.streams.values()) sum += entry.filter.bytes;
    return sum;
  }

  private of(schema: string, stream: string): StreamFilter {
    const name = `${schema}\u0000${stream}`;
    let entry = this.streams.get(name);
    if (!entry) {
      entry = { filter: new GrowingKeyFilter(FIRST_CAPACITY), built: null };
      this.streams.set(name, entry);
    }
    return entry;
  }
}

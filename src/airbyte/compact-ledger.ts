import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { keyHash, SetSketch } from './set-sketch.js';

/** What a seed's ledger row says that a read must not buy again: its status (and error type) since `at`. */
export interface SeedMark {
  status: 'fetched' | 'failed' | 'pending';
  /** The service's error type of a failed seed (`not_found`); null otherwise. */
  error: string | null;
  /** When it was fetched (ISO text), rounded down to the ledger's granularity. */
  at: string;
}

/**
 * A stream's seed ledger in a size that does not grow with the list's length beyond a byte a seed
 * before compression (see docs/airbyte.md#state-that-fits). The seeds are not in it: the next
 * read has them in its own seed list. It holds, in the sweep order of the seeds' 48-bit key hashes,
 * one mark a seed (an index in `marks`, 0 for a seed with nothing to keep), and a set sketch per
 * hash range that tells which seeds the list gained and lost since, so each mark goes back to its
 * seed exactly.
 */
export interface CompactLedger {
  /** Seeds described. */
  seeds: number;
  /** Marks by index: mark n of a seed is `marks[n - 1]`. */
  marks: SeedMark[];
  /** Milliseconds the marks' times were rounded down to (a minute, or coarser to fit). */
  granularity_ms: number;
  /** One byte a seed in sweep order, deflated, as base64. */
  sweep: string;
  /** Seeds in each hash range, in order. */
  ranges: number[];
  /** Cells of each range's sketch. */
  cells_per_range: number;
  /** The ranges' sketches, in order, as base64. */
  sketches: string;
}

/** The largest state's size this encoding aims under: a megabyte a stream. */
const STATE_BYTES = 1_000_000;
/** What the sweep and the sketches may take together: the rest of {@link STATE_BYTES} is the marks and the JSON around. */
const SWEEP_AND_SKETCH = STATE_BYTES - 30_000;
/** Fewest sketch cells a stream carries, whatever the sweep takes. */
const MIN_CELLS = 3_000;
/**
 * Sketch cells a seed that the sweep may never squeeze out: 2 cells a hundred seeds recover a
 * list with about 0.8% of its seeds replaced (two differences each). Below it, a small change to a
 * long list would make every seed due: the times are rounded coarser first.
 */
const FLOOR_CELLS_PER_SEED = 0.02;
/** Fewest cells in a range's sketch: small sketches fail to peel well before two thirds full. */
const MIN_RANGE_CELLS = 240;
/** Roundings of times tried, finest first, until the marks fit a byte and the sweep fits its share. */
const GRANULARITIES_MS = [
  60_000, 600_000, 3_600_000, 21_600_000, 86_400_000, 172_800_000, 345_600_000, 604_800_000, 2_592_000_000,
];
const HASH_SPACE = 2 ** 48;

/** Builds a {@link CompactLedger} from ledger rows given one at a time, in any order. */
export class CompactLedgerBuilder {
  private hashes = new Float64Array(1024);
  private markIds = new Uint32Array(1024);
  private count = 0;
  private readonly marks: { status: SeedMark['status']; error: string | null; atMs: number }[] = [];
  private readonly markIndex = new Map<string, number>();

  /** Adds a seed's key and its mark (undefined: nothing to keep, the seed is due at the next read). */
  add(key: string, mark: (Omit<SeedMark, 'at'> & { at: Date }) | undefined): void {
    if (this.count === this.hashes.length) this.grow();
    this.hashes[this.count] = keyHash(key);
    this.markIds[this.count] = mark ? this.markId(mark.status, mark.error, mark.at.getTime()) + 1 : 0;
    this.count++;
  }

  /**
   * The compact ledger under {@link STATE_BYTES}: times rounded down to the finest step within
   * `maxRoundingMs` that leaves half the room to the sketch (or all it needs); else to the finest
   * step, within the cap or past it, that leaves the sketch its floor ({@link FLOOR_CELLS_PER_SEED}).
   * The sketch takes what is left.
   * @param maxRoundingMs how much earlier than it was a seed may be recorded fetched: a share of
   *   the stream's refresh_after (a seed comes due that much early, never late)
   */
  build(maxRoundingMs = Infinity): CompactLedger {
    const order = sortedByHash(this.hashes, this.count);
    const sweeps = new Map<number, Sweep>();
    // Each rounding deflates the whole sweep: tried finest first, and no further than needed.
    const sweepAt = (granularity: number) => {
      if (!sweeps.has(granularity)) sweeps.set(granularity, { granularity, ...this.sweepAt(order, granularity) });
      return sweeps.get(granularity)!;
    };
    const fullSketch = sketchBytes(sketchLayout(this.count, Infinity));
    const floorCells = Math.max(MIN_CELLS, Math.ceil(this.count * FLOOR_CELLS_PER_SEED));
    const floorSketch = Math.min(fullSketch, base64Length(SetSketch.bytes(floorCells)));
    const wanted = Math.min(fullSketch, SWEEP_AND_SKETCH / 2);
    const fitsWith = (sketch: number) => (s: Sweep) => s.fits && s.bytes + sketch <= SWEEP_AND_SKETCH;
    const withinRounding = GRANULARITIES_MS.filter((g, i) => i === 0 || g <= maxRoundingMs);
    const chosen =
      lazyFind(withinRounding, sweepAt, fitsWith(wanted)) ??
      lazyFind(GRANULARITIES_MS, sweepAt, fitsWith(floorSketch)) ??
      sweepAt(GRANULARITIES_MS.at(-1)!);
    const layout = sketchLayout(this.count, SWEEP_AND_SKETCH - chosen.bytes);
    const ranges = new Array<number>(layout.ranges).fill(0);
    for (let i = 0; i < this.count; i++) ranges[rangeOf(this.hashes[i]!, layout.ranges)]!++;
    return {
      seeds: this.count,
      marks: chosen.marks.slice(0, 255),
      granularity_ms: chosen.granularity,
      sweep: chosen.sweep,
      ranges,
      cells_per_range: layout.cells,
      sketches: Buffer.from(this.sketches(order, layout)).toString('base64'),
    };
  }

  /** The sweep with times rounded down to `granularity`: its base64, its length, whether its marks fit a byte. */
  private sweepAt(
    order: Uint32Array,
    granularity: number,
  ): { marks: SeedMark[]; sweep: string; bytes: number; fits: boolean } {
    const coarse = this.rounded(granularity);
    const sweep = deflateRawSync(this.sweepBytes(order, coarse.ids), { level: 9 }).toString('base64');
    return { marks: coarse.marks, sweep, bytes: sweep.length, fits: coarse.marks.length <= 255 };
  }

  private markId(status: SeedMark['status'], error: string | null, atMs: number): number {
    const at = Math.floor(atMs / GRANULARITIES_MS[0]!) * GRANULARITIES_MS[0]!;
    const id = `${status}|${error ?? ''}|${at}`;
    let index = this.markIndex.get(id);
    if (index === undefined) {
      index = this.marks.push({ status, error, atMs: at }) - 1;
      this.markIndex.set(id, index);
    }
    return index;
  }

  /** The marks with times rounded down to `granularity`, and each fine mark's coarse id (0 stays 0). */
  private rounded(granularity: number): { marks: SeedMark[]; ids: Uint32Array } {
    const marks: SeedMark[] = [];
    const byId = new Map<string, number>();
    const ids = new Uint32Array(this.marks.length + 1);
    this.marks.forEach((mark, i) => {
      const at = Math.floor(mark.atMs / granularity) * granularity;
      const id = `${mark.status}|${mark.error ?? ''}|${at}`;
      let index = byId.get(id);
      if (index === undefined) {
        index = marks.push({ status: mark.status, error: mark.error, at: new Date(at).toISOString() }) - 1;
        byId.set(id, index);
      }
      // Past 255 marks (only at the coarsest rounding) a seed is kept as due: never fresher than it is.
      ids[i + 1] = index < 255 ? index + 1 : 0;
    });
    return { marks, ids };
  }

  private sweepBytes(order: Uint32Array, ids: Uint32Array): Uint8Array {
    const bytes = new Uint8Array(this.count);
    for (let i = 0; i < this.count; i++) bytes[i] = ids[this.markIds[order[i]!]!]!;
    return bytes;
  }

  private sketches(order: Uint32Array, layout: RangeLayout): Uint8Array {
    const all = new Uint8Array(SetSketch.bytes(layout.cells) * layout.ranges);
    let next = 0;
    for (let range = 0; range < layout.ranges; range++) {
      const sketch = new SetSketch(layout.cells);
      while (next < this.count && rangeOf(this.hashes[order[next]!]!, layout.ranges) === range)
        sketch.add(this.hashes[order[next++]!]!);
      all.set(sketch.toBytes(), range * SetSketch.bytes(layout.cells));
    }
    return all;
  }

  private grow(): void {
    const hashes = new Float64Array(this.hashes.length * 2);
    hashes.set(this.hashes);
    const ids = new Uint32Array(this.markIds.length * 2);
    ids.set(this.markIds);
    this.hashes = hashes;
    this.markIds = ids;
  }
}

/** What a compact ledger says of the seeds of a read's list. */
export interface LedgerReading {
  /** Each seed's mark (in `marks`, 1-based), in the order of the hashes given; 0 for a seed due. */
  marks: Uint8Array;
  /** Seeds due only because their hash range changed more than its sketch recovers. */
  unresolved: number;
  /** Seeds the list gained and lost since the state was written, in the ranges recovered. */
  added: number;
  removed: number;
}

/**
 * Gives each seed of a read's list (`hashes`: its keys' {@link keyHash}es, no repeats) the mark the ledger kept for it: a seed
 * the ledger never saw is due (0); so is every seed of a hash range whose changes its sketch cannot
 * recover (counted in `unresolved`), which never makes a new seed look fetched.
 */
export function readCompactLedger(ledger: CompactLedger, hashes: Float64Array): LedgerReading {
  const ranges = ledger.ranges.length;
  const sweep = inflateRawSync(Buffer.from(ledger.sweep, 'base64'));
  const sketches = Buffer.from(ledger.sketches, 'base64');
  const order = sortedByHash(hashes, hashes.length);
  const reading: LedgerReading = { marks: new Uint8Array(hashes.length), unresolved: 0, added: 0, removed: 0 };
  const cellBytes = SetSketch.bytes(ledger.cells_per_range);
  let next = 0;
  let swept = 0;
  for (let range = 0; range < ranges; range++) {
    const members: number[] = [];
    while (next < order.length && rangeOf(hashes[order[next]!]!, ranges) === range) members.push(order[next++]!);
    const stored = sweep.subarray(swept, swept + ledger.ranges[range]!);
    swept += ledger.ranges[range]!;
    const sketch = SetSketch.fromBytes(
      sketches.subarray(range * cellBytes, (range + 1) * cellBytes),
      ledger.cells_per_range,
    );
    for (const member of members) sketch.add(hashes[member]!, -1);
    const changes = sketch.peel();
    if (!changes) {
      reading.unresolved += members.length;
      continue;
    }
    reading.added += changes.minus.length;
    reading.removed += changes.plus.length;
    markRange(members, hashes, stored, changes, reading.marks);
  }
  return reading;
}

/**
 * Marks a range's seeds: the stored hashes are the list's less those added plus those removed;
 * sorted, their positions are the sweep's, so each kept seed finds its byte.
 */
function markRange(
  members: readonly number[],
  hashes: Float64Array,
  stored: Uint8Array,
  changes: { plus: number[]; minus: number[] },
  marks: Uint8Array,
): void {
  const added = new Map<number, number>();
  for (const hash of changes.minus) added.set(hash, (added.get(hash) ?? 0) + 1);
  const entries: { hash: number; member: number }[] = [];
  for (const member of members) {
    const hash = hashes[member]!;
    const pending = added.get(hash) ?? 0;
    if (pending > 0) added.set(hash, pending - 1);
    else entries.push({ hash, member });
  }
  for (const hash of changes.plus) entries.push({ hash, member: -1 });
  entries.sort((a, b) => a.hash - b.hash);
  entries.forEach((entry, position) => {
    if (entry.member >= 0) marks[entry.member] = stored[position] ?? 0;
  });
}

/** The sweep at one rounding of times. */
interface Sweep {
  granularity: number;
  marks: SeedMark[];
  /** Deflated, as base64. */
  sweep: string;
  bytes: number;
  /** Whether its marks fit a byte. */
  fits: boolean;
}

/** The first of `items` whose value (computed in order, only as far as needed) passes `test`. */
function lazyFind<T, V>(items: readonly T[], value: (item: T) => V, test: (value: V) => boolean): V | undefined {
  for (const item of items) {
    const computed = value(item);
    if (test(computed)) return computed;
  }
  return undefined;
}

interface RangeLayout {
  ranges: number;
  cells: number;
}

/**
 * Sketch cells for `seeds` seeds: room for all of them to change (a cell and a half each), or what
 * `budget` bytes of base64 hold, at least {@link MIN_CELLS}; in ranges of {@link MIN_RANGE_CELLS} or more.
 */
function sketchLayout(seeds: number, budget: number): RangeLayout {
  const affordable = Math.floor((budget * 3) / 4 / SetSketch.bytes(1));
  const total = Math.max(MIN_RANGE_CELLS, Math.min(Math.ceil(seeds * 1.5), Math.max(MIN_CELLS, affordable)));
  const ranges = Math.max(1, Math.floor(total / MIN_RANGE_CELLS));
  return { ranges, cells: Math.floor(total / ranges / 3) * 3 };
}

/** The base64 length of a layout's sketches. */
function sketchBytes(layout: RangeLayout): number {
  return base64Length(SetSketch.bytes(layout.cells) * layout.ranges);
}

function rangeOf(hash: number, ranges: number): number {
  return Math.floor((hash / HASH_SPACE) * ranges);
}

/** Indices 0…count-1 ordered by hash. */
function sortedByHash(hashes: Float64Array, count: number): Uint32Array {
  const order = new Uint32Array(count);
  for (let i = 0; i < count; i++) order[i] = i;
  return order.sort((a, b) => hashes[a]! - hashes[b]!);
}

function base64Length(bytes: number): number {
  return Math.ceil(bytes / 3) * 4;
}

import { createHash } from 'node:crypto';

/** Bytes a cell takes when serialized: count (1), key (6), check (3). */
const CELL_BYTES = 10;
/** Cells a key is counted in, one in each third of the table. */
const HASHES = 3;
const TWO_32 = 2 ** 32;

/** A seed key's 48-bit hash: where it sorts in the sweep order and what a sketch counts. */
export function keyHash(key: string): number {
  return createHash('sha256').update(key).digest().readUIntBE(0, 6);
}

/**
 * A set-reconciliation sketch (an invertible Bloom lookup table) over 48-bit key hashes. Each key
 * is counted in three cells (a count, the XOR of the keys, the XOR of a check of each key). A
 * sketch of set A, with the keys of set B taken out, holds only A's and B's differences; when they
 * are fewer than about two thirds of its cells, peeling the cells that hold one key each recovers
 * them exactly: which keys A has and B lacks, and the other way round. So a state that carries a
 * sketch of the seeds it describes can tell, against the seed list of the next read, exactly which
 * seeds were added and removed, without carrying the seeds.
 */
export class SetSketch {
  private readonly counts: Int32Array;
  private readonly keysHigh: Uint32Array;
  private readonly keysLow: Uint32Array;
  private readonly checks: Uint32Array;

  /** @param cells a multiple of 3 */
  constructor(readonly cells: number) {
    if (cells <= 0 || cells % HASHES !== 0)
      throw new RangeError(`a sketch has a positive multiple of 3 cells, not ${cells}`);
    this.counts = new Int32Array(cells);
    this.keysHigh = new Uint32Array(cells);
    this.keysLow = new Uint32Array(cells);
    this.checks = new Uint32Array(cells);
  }

  /** Bytes a sketch of `cells` cells takes. */
  static bytes(cells: number): number {
    return cells * CELL_BYTES;
  }

  /** A sketch read back from {@link toBytes}' output. */
  static fromBytes(bytes: Uint8Array, cells: number): SetSketch {
    if (bytes.length !== cells * CELL_BYTES)
      throw new RangeError(`a sketch of ${cells} cells takes ${cells * CELL_BYTES} bytes, not ${bytes.length}`);
    const sketch = new SetSketch(cells);
    const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
    for (let cell = 0, at = 0; cell < cells; cell++, at += CELL_BYTES) {
      sketch.counts[cell] = view.readInt8(at);
      sketch.keysHigh[cell] = view.readUInt16BE(at + 1);
      sketch.keysLow[cell] = view.readUInt32BE(at + 3);
      sketch.checks[cell] = view.readUIntBE(at + 7, 3);
    }
    return sketch;
  }

  /** The sketch as bytes; counts are kept modulo 256, which differences of fewer than 128 keys a cell survive. */
  toBytes(): Uint8Array {
    const out = Buffer.alloc(this.cells * CELL_BYTES);
    for (let cell = 0, at = 0; cell < this.cells; cell++, at += CELL_BYTES) {
      out.writeInt8(wrapped(this.counts[cell]!), at);
      out.writeUInt16BE(this.keysHigh[cell]!, at + 1);
      out.writeUInt32BE(this.keysLow[cell]!, at + 3);
      out.writeUIntBE(this.checks[cell]!, at + 7, 3);
    }
    return out;
  }

  /** Counts a key in (`sign` 1) or out (`sign` -1). */
  add(key: number, sign: 1 | -1 = 1): void {
    const high = Math.floor(key / TWO_32);
    const low = key >>> 0;
    const check = checkOf(high, low);
    for (let i = 0; i < HASHES; i++) {
      const cell = this.cellOf(high, low, i);
      this.counts[cell]! += sign;
      this.keysHigh[cell]! ^= high;
      this.keysLow[cell]! ^= low;
      this.checks[cell]! ^= check;
    }
  }

  /**
   * The keys the sketch holds once peeled: `plus` those counted in more often than out, `minus`
   * the others; undefined when they are too many to recover (some cells never hold one key alone).
   * Peeling empties the sketch.
   */
  peel(): { plus: number[]; minus: number[] } | undefined {
    const plus: number[] = [];
    const minus: number[] = [];
    const queue: number[] = [];
    for (let cell = 0; cell < this.cells; cell++) if (this.pure(cell)) queue.push(cell);
    while (queue.length > 0) {
      const cell = queue.pop()!;
      if (!this.pure(cell)) continue;
      const sign = wrapped(this.counts[cell]!) as 1 | -1;
      const high = this.keysHigh[cell]!;
      const low = this.keysLow[cell]!;
      (sign === 1 ? plus : minus).push(high * TWO_32 + low);
      this.add(high * TWO_32 + low, sign === 1 ? -1 : 1);
      for (let i = 0; i < HASHES; i++) {
        const other = this.cellOf(high, low, i);
        if (this.pure(other)) queue.push(other);
      }
    }
    for (let cell = 0; cell < this.cells; cell++)
      if (wrapped(this.counts[cell]!) !== 0 || this.keysHigh[cell] !== 0 || this.keysLow[cell] !== 0) return undefined;
    return { plus, minus };
  }

  /** Whether a cell holds exactly one key: a count of ±1 and a check that matches its key. */
  private pure(cell: number): boolean {
    const count = wrapped(this.counts[cell]!);
    return (count === 1 || count === -1) && this.checks[cell] === checkOf(this.keysHigh[cell]!, this.keysLow[cell]!);
  }

  private cellOf(high: number, low: number, i: number): number {
    const third = this.cells / HASHES;
    return i * third + (mix(low ^ Math.imul(i + 1, 0x9e3779b9), high) % third);
  }
}

/** A 24-bit check of a key, independent of the cells it lands in. */
function checkOf(high: number, low: number): number {
  return mix(low ^ 0x5bd1e995, high ^ 0x27d4eb2f) & 0xffffff;
}

/** Mixes two 32-bit words into one (murmur3's finalizer over their combination), unsigned. */
function mix(a: number, b: number): number {
  let h = Math.imul(a ^ Math.imul(b, 0xcc9e2d51), 0x1b873593);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A count as the signed byte it is stored as. */
function wrapped(count: number): number {
  return (((count % 256) + 384) % 256) - 128;
}

/**
 * A Bloom filter of primary keys: `mayContain` is false only for a key never added. 32 bits and
 * 22 hashes a key give ~2e-7 false positives a key at capacity (a 5,000-key unit probes the table
 * for one false positive about once in a thousand units); it holds up to `capacity` keys and
 * says `full` past that, so its owner builds a larger one.
 */
export class KeyFilter {
  private readonly bits: Uint32Array;
  /** Bits in the filter: a hash picks one as `hash × bitCount / 2^32`, so any size works. */
  private readonly bitCount: number;
  private added = 0;

  /** A filter for up to `capacity` keys (at least 1,024), in 4 bytes a key. */
  constructor(readonly capacity: number) {
    const words = Math.max(1024, Math.ceil(capacity));
    this.bits = new Uint32Array(words);
    this.bitCount = words * 32;
  }

  /** True once more keys were added than the filter holds at its false-positive rate. */
  get full(): boolean {
    return this.added > this.capacity;
  }

  /** Keys added so far. */
  get size(): number {
    return this.added;
  }

  /** Bytes the filter's bits take. */
  get bytes(): number {
    return this.bits.byteLength;
  }

  add(key: string): void {
    let h1 = hash(key, 0x811c9dc5);
    const h2 = hash(key, 0x01000193) | 1;
    for (let i = 0; i < HASHES; i++) {
      const bit = Math.floor(((h1 >>> 0) * this.bitCount) / 4294967296);
      this.bits[bit >>> 5]! |= 1 << (bit & 31);
      h1 = (h1 + h2) | 0;
    }
    this.added++;
  }

  mayContain(key: string): boolean {
    let h1 = hash(key, 0x811c9dc5);
    const h2 = hash(key, 0x01000193) | 1;
    for (let i = 0; i < HASHES; i++) {
      const bit = Math.floor(((h1 >>> 0) * this.bitCount) / 4294967296);
      if ((this.bits[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
      h1 = (h1 + h2) | 0;
    }
    return true;
  }
}

const HASHES = 22;

/** FNV-1a over UTF-16 units with a final avalanche (murmur3's fmix32), from `seed`. */
function hash(text: string, seed: number): number {
  let h = seed;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * Bloom filters chained as keys come, for a key set that grows without a known end: when the
 * newest is full, the next keys go to one twice its size, so no key is ever hashed again and
 * the false-positive rate stays that of a filter at capacity. Doubling costs about twice the bytes
 * the keys need (a million keys: ~8 MB); an owner that knows how many keys are coming says so
 * with `expect`, and they go to one filter of their size.
 */
export class GrowingKeyFilter {
  private readonly filters: KeyFilter[];

  /** Starts with a filter for `capacity` keys. */
  constructor(capacity: number) {
    this.filters = [new KeyFilter(capacity)];
  }

  /** Adds `key`; a key the chain may hold already (written again, say) takes no room. */
  add(key: string): void {
    if (this.mayContain(key)) return;
    let newest = this.filters[this.filters.length - 1]!;
    if (newest.full) this.filters.push((newest = new KeyFilter(2 * newest.capacity)));
    newest.add(key);
  }

  /**
   * Makes room for `keys` more keys in one filter: the newest filter when it has the room; else
   * one for that many, at least the size the chain would have grown to (replacing the newest when
   * it holds no key yet). Past them, the chain doubles again.
   */
  expect(keys: number): void {
    const newest = this.filters[this.filters.length - 1]!;
    if (newest.capacity - newest.size >= keys) return;
    if (newest.size === 0) this.filters[this.filters.length - 1] = new KeyFilter(Math.max(keys, newest.capacity));
    else this.filters.push(new KeyFilter(Math.max(keys, 2 * newest.capacity)));
  }

  mayContain(key: string): boolean {
    for (let f = 0; f < this.filters.length; f++) if (this.filters[f]!.mayContain(key)) return true;
    return false;
  }

  /** Bytes the filters' bits take. */
  get bytes(): number {
    return this.filters.reduce((sum, filter) => sum + filter.bytes, 0);
  }
}

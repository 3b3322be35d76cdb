/** Bits per key of each Bloom filter, and hashes per key: about 1 false alarm in 2,000 keys. */
const BITS_PER_KEY = 16;
const HASHES = 11;
/** Keys the first filter holds before a filter twice its size is added. */
const FIRST_CAPACITY = 4096;

/**
 * Finds the repeats of a key list that is read in passes, without holding the list. A first pass
 * `survey`s every key into Bloom filters (about 2 bytes a key, freed once the survey is done) and
 * keeps the keys it may have met before: every true repeat, and a few false alarms. Later passes
 * ask `isFirst`, which is exact and holds only those candidates.
 *
 * @example
 * ```ts
 * const repeats = new RepeatFinder();
 * for (const key of pass()) repeats.survey(key);
 * repeats.surveyed();
 * repeats.startPass();
 * for (const key of pass()) if (repeats.isFirst(key)) handle(key);
 * ```
 */
export class RepeatFinder {
  private filters: BloomFilter[] = [new BloomFilter(FIRST_CAPACITY)];
  /** Keys the survey met, repeats included. */
  private count = 0;
  /** Keys that may occur more than once. */
  private readonly candidates = new Set<string>();
  /** Candidates met in the pass under way. */
  private met = new Set<string>();

  /** Notes a key of the survey pass. */
  survey(key: string): void {
    this.count++;
    if (this.filters.some((f) => f.mayHave(key))) {
      this.candidates.add(key);
      return;
    }
    let last = this.filters.at(-1)!;
    if (last.full()) this.filters.push((last = new BloomFilter(last.capacity * 2)));
    last.add(key);
  }

  /** Keys the survey met, repeats included: at least the distinct keys a pass yields. */
  get keysSurveyed(): number {
    return this.count;
  }

  /** Ends the survey: the filters are no longer needed. */
  surveyed(): void {
    this.filters = [];
  }

  /** Starts a pass over the keys in the same order as the survey's. */
  startPass(): void {
    this.met = new Set();
  }

  /** Whether this occurrence of `key` is its first of the pass under way (first wins). */
  isFirst(key: string): boolean {
    if (!this.candidates.has(key)) return true;
    if (this.met.has(key)) return false;
    this.met.add(key);
    return true;
  }
}

class BloomFilter {
  private readonly bits: Uint32Array;
  private readonly size: number;
  private count = 0;

  constructor(readonly capacity: number) {
    this.size = capacity * BITS_PER_KEY;
    this.bits = new Uint32Array(Math.ceil(this.size / 32));
  }

  full(): boolean {
    return this.count >= this.capacity;
  }

  add(key: string): void {
    this.count++;
    this.each(key, (bit) => {
      this.bits[bit >>> 5]! |= 1 << (bit & 31);
      return true;
    });
  }

  mayHave(key: string): boolean {
    return this.each(key, (bit) => (this.bits[bit >>> 5]! & (1 << (bit & 31))) !== 0);
  }

  /** Calls `visit` for each of the key's bits while it answers true; answers whether every call did. */
  private each(key: string, visit: (bit: number) => boolean): boolean {
    let h1 = 0x811c9dc5;
    let h2 = 0x9747b28c;
    for (let i = 0; i < key.length; i++) {
      const c = key.charCodeAt(i);
      h1 = Math.imul(h1 ^ c, 0x01000193);
      h2 = Math.imul(h2 ^ c, 0x5bd1e995);
      h2 ^= h2 >>> 13;
    }
    h2 |= 1;
    for (let i = 0; i < HASHES; i++) if (!visit(((h1 + Math.imul(i, h2)) >>> 0) % this.size)) return false;
    return true;
  }
}

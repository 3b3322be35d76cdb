/**
 * A bounded set of recently seen ids, oldest dropped first (an LRU: a hit refreshes the id). It
 * only saves a write: the merge on the primary key is what makes a replay idempotent.
 */
export class RecentIds {
  private readonly ids = new Set<string>();

  /** @param capacity Ids kept at most. Default: 10,000. */
  constructor(private readonly capacity: number = 10_000) {}

  /** True when `id` was added recently (and keeps it). */
  has(id: string): boolean {
    if (!this.ids.has(id)) return false;
    this.ids.delete(id);
    this.ids.add(id);
    return true;
  }

  /** Remembers `id`, forgetting the least recently seen id beyond the capacity. */
  add(id: string): void {
    this.ids.delete(id);
    this.ids.add(id);
    if (this.ids.size > this.capacity) this.ids.delete(this.ids.values().next().value as string);
  }
}

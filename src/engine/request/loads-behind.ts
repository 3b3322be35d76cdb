/**
 * Loads of partitions' last pages still committing while the next partitions' calls go out. A
 * partition's last answer is journaled before its load starts (see `AnswerJournal`), so its call
 * slot need not wait for the destination: the stream waits for them all before it ends. At most
 * `limit` are held (each holds its shaped rows); the next partition waits for room.
 */
export class LoadsBehind {
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly limit: number) {}

  /** Tracks a load that handles its own failure (it never rejects); resolves once there is room for another. */
  async add(load: Promise<void>): Promise<void> {
    const tracked: Promise<void> = load.finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
    while (this.pending.size > this.limit) await Promise.race(this.pending);
  }

  /** Resolves once every load tracked (and any added meanwhile) has settled. */
  async drain(): Promise<void> {
    while (this.pending.size > 0) await Promise.all(this.pending);
  }
}

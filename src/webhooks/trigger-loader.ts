import type { Trigger } from '../../schemas/signal.js';
import type { Destination } from '../destinations/destination.js';
import { LoadWriter } from '../engine/load-writer.js';
import type { TableShaper } from '../engine/table-shaper.js';
import { Mutex } from '../util/mutex.js';
import { RecentIds } from './recent-ids.js';

/** A destination opened (and locked) for one burst of deliveries. */
export interface OpenedDestination {
  /** The open, locked destination with its system tables ensured. */
  destination: Destination;
  /** Releases the lock and closes it. */
  close(): Promise<void>;
}

/** Options of {@link TriggerLoader}. */
export interface TriggerLoaderOptions {
  /** Opens and locks the destination for one burst; the loader closes it once the burst committed. */
  open(): Promise<OpenedDestination>;
  /** Shapes Triggers into rows of the `triggers` table (built from the triggers stream's manifest). */
  shaper: TableShaper;
  /** `_run_id` of every row and rejected record written. */
  runId: string;
  /** `stream` of the records filed in `_seedline_rejected`. Default: `webhooks`. */
  stream?: string;
  /** Trigger ids remembered, so a replay is answered without a write. Default: 10,000. */
  recentCapacity?: number;
}

type Item = { kind: 'trigger'; trigger: Trigger } | { kind: 'rejected'; table: string; raw: string; reason: string };

interface Waiting {
  item: Item;
  settle(error?: unknown): void;
}

/**
 * Loads delivered Triggers into the `triggers` table, one load unit at a time. Deliveries that
 * arrive while a unit is being written are gathered into the next one (a burst of Signals checked
 * at the same minute costs one open and one transaction, not one each). The destination is held
 * only while a unit is written, so `sync` and `query` can use it between deliveries.
 *
 * @example
 * ```ts
 * const loader = new TriggerLoader({ open: () => openLocked(configPath), shaper, runId });
 * await loader.loadTrigger(event.trigger); // resolves once committed
 * ```
 */
export class TriggerLoader {
  private pending: Waiting[] = [];
  private draining: Promise<void> | null = null;
  private readonly recent: RecentIds;

  constructor(private readonly options: TriggerLoaderOptions) {
    this.recent = new RecentIds(options.recentCapacity);
  }

  /** True when this Trigger was committed recently by this loader (a replay needs no write). */
  isRecent(triggerId: string): boolean {
    return this.recent.has(triggerId);
  }

  /** Merges one Trigger into `triggers` (on trigger_id); resolves once committed, rejects when not. */
  loadTrigger(trigger: Trigger): Promise<void> {
    return this.enqueue({ kind: 'trigger', trigger });
  }

  /** Files a delivery that could not be read in `_seedline_rejected`, raw, with the reason; resolves once committed. */
  reject(raw: string, table: string, reason: string): Promise<void> {
    return this.enqueue({ kind: 'rejected', table, raw, reason });
  }

  /** Resolves once nothing is waiting to be written. */
  async idle(): Promise<void> {
    while (this.draining) await this.draining;
  }

  private enqueue(item: Item): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ item, settle: (error) => (error === undefined ? resolve() : reject(error)) });
      this.draining ??= this.drain();
    });
  }

  private async drain(): Promise<void> {
    for (;;) {
      const burst = this.pending.splice(0);
      if (burst.length === 0) {
        // Cleared in the same synchronous step as the emptiness check, so no item is left behind.
        this.draining = null;
        return;
      }
      try {
        await this.write(burst.map((w) => w.item));
      } catch (error) {
        for (const waiting of burst) waiting.settle(error);
        continue;
      }
      for (const waiting of burst) {
        if (waiting.item.kind === 'trigger') this.recent.add(waiting.item.trigger.trigger_id);
        waiting.settle();
      }
    }
  }

  private async write(items: readonly Item[]): Promise<void> {
    // One row per trigger_id: a merge must not see the same key twice in one write.
    const triggers = new Map<string, Trigger>();
    const rejected: Extract<Item, { kind: 'rejected' }>[] = [];
    for (const item of items) {
      if (item.kind === 'trigger') triggers.set(item.trigger.trigger_id, item.trigger);
      else rejected.push(item);
    }
    const { runId, stream = 'webhooks' } = this.options;
    const opened = await this.options.open();
    try {
      const writer = new LoadWriter(opened.destination, runId, stream, new Mutex());
      const groups = triggers.size > 0 ? [this.options.shaper.shape({}, [...triggers.values()])] : [];
      await writer.inUnit(groups, async (unit) => {
        if (rejected.length > 0) await unit.reject(rejected.map((r) => ({ runId, stream, table: r.table, record: r.raw, reason: r.reason })));
      });
    } finally {
      // The unit is committed (or rolled back and rethrown) by now; a failed close changes neither.
      await opened.close().catch(() => undefined);
    }
  }
}

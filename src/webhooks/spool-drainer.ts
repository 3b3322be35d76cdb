import { z } from 'zod';
import { Timestamp } from '../../schemas/common.js';
import type { Trigger } from '../../schemas/signal.js';
import type { WebhookEvent } from '../../schemas/webhook.js';
import { DestinationLockedError } from '../destinations/destination-error.js';
import { quoteIdentifier } from '../destinations/identifiers.js';
import { type Destination, type RejectedRow } from '../destinations/destination.js';
import { type TableDefinition } from '../normalize/table-definition.js';
import { LoadWriter } from '../load/load-writer.js';
import type { ShapedRecords, TableShaper } from '../normalize/table-shaper.js';
import { firstLine } from '../util/first-line.js';
import { Mutex } from '../util/mutex.js';
import { logLine } from '../util/log.js';
import type { DeliverySpool, SpoolEntry } from './delivery-spool.js';
import { parseEvent } from './parse-event.js';

/** Events other than Triggers (`batch.completed`, `signal.paused`, `signal.test`), one row per delivery, apart from `triggers`. */
export const webhookEventsTable: TableDefinition = {
  name: 'webhook_events',
  schema: z.object({
    delivery_key: z.string(),
    event: z.string(),
    /** The job id of `batch.completed`, the Signal id of `signal.paused` and `signal.test`. */
    subject_id: z.string().nullable(),
    /** True for `signal.test`: a fixture, never a real change. */
    test: z.boolean(),
    received_at: Timestamp,
    payload: z.unknown(),
  }),
  primaryKey: ['delivery_key'],
  writeMode: 'merge',
};

/** A destination opened (and locked) for one drain. */
export interface OpenedDestination {
  /** The open, locked destination with its system tables ensured. */
  destination: Destination;
  /** Releases the lock and closes it (a no-op when the caller keeps it open). */
  close(): Promise<void>;
}

/** Options of {@link SpoolDrainer}. */
export interface SpoolDrainerOptions {
  /** Where accepted deliveries wait. */
  spool: DeliverySpool;
  /** Opens and locks the destination without waiting; throws `DestinationLockedError` when another writer holds it. */
  open(): Promise<OpenedDestination>;
  /** Shapes Triggers into rows of `triggers` (built from the triggers stream's manifest). */
  shaper: TableShaper;
  /** `_run_id` of every row and rejected record written. */
  runId: string;
  /** Where one-line notices go (never bodies or secrets). Default: stderr. */
  log?: (line: string) => void;
  /** Called, with the destination still locked, after a drain committed `batch.completed` events. Default: none. */
  onBatchCompleted?: (jobIds: readonly string[], destination: Destination) => Promise<void>;
  /**
   * Leaves `batch.completed` deliveries spooled (unrecorded) for `serve`, whose drain starts the
   * read of the finished job: what a sync drains first would otherwise record them and no one would
   * read those jobs until a later sync. Default: false.
   */
  leaveBatchCompleted?: boolean;
  /** Wait before trying again after the destination was busy or a drain failed, in ms. Default: 1000. */
  retryMs?: number;
  /** Spool files read and loaded per transaction, so a large backlog never sits in memory at once. Default: 1,000. */
  chunkFiles?: number;
}

/** What one drain loaded. */
export interface DrainResult {
  /** Distinct Triggers merged into `triggers`. */
  triggers: number;
  /** Rows merged into `webhook_events`. */
  events: number;
  /** Unreadable deliveries filed in `_seedline_rejected`. */
  rejected: number;
  /** Spool files loaded and removed. */
  files: number;
}

type EventRow = Record<string, unknown>;

const DEFAULT_CHUNK_FILES = 1_000;

/**
 * Loads the spool into the destination: takes the writer lock briefly and writes the spooled
 * deliveries, oldest first, in load units of at most 1,000 files (Triggers in `check_number`
 * order per Signal, merged on `trigger_id`; other events into `webhook_events`; unreadable bodies
 * into `_seedline_rejected`), each unit committed, then its files deleted; then it releases the lock. A crash after the commit and before the delete loads the
 * same files again, harmlessly (both tables merge). When another writer holds the destination the
 * deliveries stay spooled and the drain is tried again later.
 *
 * @example
 * ```ts
 * const drainer = new SpoolDrainer({ spool, open, shaper, runId });
 * drainer.kick();          // after each accepted delivery
 * await drainer.stop();    // last drain; what cannot be loaded stays for the next start
 * ```
 */
export class SpoolDrainer {
  private readonly once = new Mutex();
  private readonly log: (line: string) => void;
  private wanted = false;
  private stopped = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private lastProblem = '';

  constructor(private readonly options: SpoolDrainerOptions) {
    this.log = options.log ?? logLine;
  }

  /** The spool it drains. */
  get spool(): DeliverySpool {
    return this.options.spool;
  }

  /** Why the last background drain failed (one line, no body), or null when it succeeded or none has run. */
  get problem(): string | null {
    return this.lastProblem || null;
  }

  /** Asks for a drain soon; drains asked for while one runs are served by one more drain. */
  kick(): void {
    if (this.stopped) return;
    this.wanted = true;
    this.wake?.();
    this.loop ??= this.run();
  }

  /** Stops the background loop, then drains once more; throws only for a failure other than a busy destination. */
  async stop(): Promise<DrainResult | null> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
    try {
      return await this.drainOnce();
    } catch (error) {
      if (!(error instanceof DestinationLockedError)) throw error;
      const left = await this.options.spool.size().catch(() => 'some');
      this.log(
        `spool: ${left} deliveries left in ${this.options.spool.dir}: the destination is busy (${error.holder}); the next serve or sync loads them`,
      );
      return null;
    }
  }

  /**
   * Loads everything spooled now, oldest first, one transaction per chunk of files (each chunk's
   * files deleted once it committed). Throws `DestinationLockedError` when another writer holds
   * the destination.
   */
  drainOnce(): Promise<DrainResult> {
    return this.once.run(async () => {
      const total: DrainResult = { triggers: 0, events: 0, rejected: 0, files: 0 };
      const { spool } = this.options;
      if ((await spool.size()) === 0) return total;
      const opened = await this.options.open();
      try {
        // Listed under the lock: another process draining the same spool has finished by now.
        const files = await spool.pending();
        const chunk = Math.max(1, this.options.chunkFiles ?? DEFAULT_CHUNK_FILES);
        for (let at = 0; at < files.length; at += chunk) {
          const entries = await spool.read(files.slice(at, at + chunk), (file, reason) =>
            this.log(`spool: ${file} is unreadable (${reason}); set aside as ${file}.bad`),
          );
          if (entries.length === 0) continue;
          const { loaded, left } = await this.load(opened.destination, entries);
          await spool.remove(entries.filter((e) => !left.has(e.file)).map((e) => e.file));
          for (const key of Object.keys(total) as (keyof DrainResult)[]) total[key] += loaded[key];
        }
        // The deliveries are loaded and gone from the spool: a failed settle is said, not retried (the next open finishes it).
        await opened.destination.settle().catch((error: unknown) => this.log(`spool: ${firstLine(error)}`));
        return total;
      } finally {
        await opened.close().catch(() => undefined);
      }
    });
  }

  /** Loads one chunk; `left` names the files kept spooled (`leaveBatchCompleted`). */
  private async load(
    destination: Destination,
    entries: readonly SpoolEntry[],
  ): Promise<{ loaded: DrainResult; left: Set<string> }> {
    const { runId } = this.options;
    const left = new Set<string>();
    const triggers = new Map<string, Trigger>();
    const events = new Map<string, EventRow>();
    const rejected: RejectedRow[] = [];
    const jobIds: string[] = [];
    for (const { delivery, file } of entries) {
      if (delivery.rejected) {
        rejected.push({
          runId,
          stream: 'webhooks',
          table: delivery.rejected.table,
          record: delivery.raw,
          reason: delivery.rejected.reason,
        });
        continue;
      }
      const parsed = parseEvent(delivery.raw);
      if (!parsed.ok) {
        rejected.push({ runId, stream: 'webhooks', table: parsed.table, record: delivery.raw, reason: parsed.reason });
        continue;
      }
      const { event } = parsed;
      if (event.event === 'batch.completed' && this.options.leaveBatchCompleted) left.add(file);
      else if (event.event === 'signal.triggered') triggers.set(event.trigger.trigger_id, event.trigger);
      else {
        events.set(delivery.key, eventRow(delivery.key, delivery.receivedAt, event));
        if (event.event === 'batch.completed') jobIds.push(event.job.job_id);
      }
    }
    const ordered = [...triggers.values()].sort(
      (a, b) => a.signal_id.localeCompare(b.signal_id) || a.check_number - b.check_number,
    );
    const groups: ShapedRecords[] = [];
    if (ordered.length > 0) groups.push(this.options.shaper.shape({}, ordered));
    if (events.size > 0) groups.push({ table: webhookEventsTable, rows: [...events.values()], rejected: [] });
    const unkept = await notYetKept(destination, rejected);
    const writer = new LoadWriter(destination, runId, 'webhooks', new Mutex());
    const counts = await writer.inUnit(groups, async (unit) => {
      if (unkept.length > 0) await unit.reject(unkept);
    });
    this.report(ordered, events.size, unkept.length);
    if (jobIds.length > 0) await this.options.onBatchCompleted?.(jobIds, destination);
    return {
      loaded: {
        triggers: ordered.length,
        events: events.size,
        rejected: unkept.length + counts.rejected,
        files: entries.length - left.size,
      },
      left,
    };
  }

  private report(triggers: readonly Trigger[], events: number, rejected: number): void {
    if (triggers.length > 0) {
      const shown = triggers.slice(0, 5).map((t) => `${t.trigger_id} (Signal ${t.signal_id}, check ${t.check_number})`);
      this.log(
        `signal.triggered: loaded ${triggers.length} trigger${triggers.length === 1 ? '' : 's'} into triggers: ${shown.join(', ')}${triggers.length > 5 ? ', …' : ''}`,
      );
    }
    if (events > 0) this.log(`webhook_events: recorded ${events} event${events === 1 ? '' : 's'}`);
    if (rejected > 0)
      this.log(`_seedline_rejected: filed ${rejected} unreadable deliver${rejected === 1 ? 'y' : 'ies'}`);
  }

  private async run(): Promise<void> {
    while (this.wanted && !this.stopped) {
      this.wanted = false;
      try {
        await this.drainOnce();
        this.lastProblem = '';
      } catch (error) {
        const problem =
          error instanceof DestinationLockedError
            ? `the destination is busy (${error.holder}); deliveries stay spooled`
            : `load failed (${firstLine(error)}); deliveries stay spooled`;
        // A sync may hold the lock for minutes: say so once, not every second.
        if (problem !== this.lastProblem) this.log(`spool: ${problem}, trying again`);
        this.lastProblem = problem;
        this.wanted = true;
        await this.pause(this.options.retryMs ?? 1_000);
      }
    }
    this.loop = null;
  }

  /** Waits, or less when kicked or stopped. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = () => {
        this.wake = null;
        done();
      };
    });
  }
}

function eventRow(
  key: string,
  receivedAt: string,
  event: Exclude<WebhookEvent, { event: 'signal.triggered' }>,
): EventRow {
  const subject =
    event.event === 'batch.completed'
      ? event.job.job_id
      : event.event === 'signal.paused'
        ? event.signal.id
        : event.signal_id;
  return {
    delivery_key: key,
    event: event.event,
    subject_id: subject,
    test: event.event === 'signal.test',
    received_at: receivedAt,
    payload: event,
  };
}

/**
 * The unreadable deliveries not yet in `_seedline_rejected`: one without an event id has nothing
 * but its signed body to be known by, so a body replayed byte for byte (after its first copy left
 * the spool) is kept once, not twice.
 */
async function notYetKept(destination: Destination, rejected: readonly RejectedRow[]): Promise<RejectedRow[]> {
  const table = `${quoteIdentifier(destination.schema, 'schema')}.${quoteIdentifier('_seedline_rejected', 'table')}`;
  const seen = new Set<string>();
  const unkept: RejectedRow[] = [];
  for (const row of rejected) {
    if (seen.has(row.record)) continue;
    seen.add(row.record);
    const kept = await destination.query(`select 1 as kept from ${table} where stream = $1 and record = $2`, [
      row.stream,
      row.record,
    ]);
    if (kept.length === 0) unkept.push(row);
  }
  return unkept;
}

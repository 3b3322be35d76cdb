import { emit, emitStreamStates, errorTrace, streamStatus } from '../airbyte/airbyte-messages.js';
import { exportStreamState } from '../airbyte/airbyte-state.js';
import type { Destination } from '../destinations/destination.js';
import { emptyOutcome, type StreamOutcome } from '../engine/stream-context.js';
import { redact } from '../util/log.js';
import { loadedAtMs, rowsToEmit, type RowFilter } from './airbyte-rows.js';
import type { TableReport } from './stream-tables.js';

/** At least this long between two checkpoints of a stream, but for one after a paid answer (see `#due`). */
const CHECKPOINT_INTERVAL_MS = 2_000;
/** And at least this many times what the stream's last checkpoint took: checkpoints take at most ~1/10 of a read. */
const CHECKPOINT_COST_FACTOR = 10;
/** A STATE this long or longer (a compact ledger, thousands of partitions) is no longer emitted after every paid answer. */
const SMALL_STATE_CHARS = 64 * 1024;

/** What has been emitted of a table. */
interface TableProgress {
  /** `_loaded_at` (ms) of the last row emitted; none yet. */
  afterMs?: number;
  /** RECORDs since the table's last STATE (its `sourceStats.recordCount`). */
  sinceState: number;
  /** Its RUNNING status was emitted (with its first RECORD). */
  running: boolean;
}

/** A stream's last checkpoint: when, what it took (ms), and the length of its STATE. */
interface Checkpoint {
  at: number;
  tookMs: number;
  stateChars: number;
}

/**
 * Emits each stream's tables as its load units commit (see docs/airbyte.md#checkpoints): at a
 * checkpoint, the RECORDs the units committed since the last one, then the STATE that covers them
 * (seed ledger, cursors, open batch jobs, journaled answers). When the stream ends, the rest, its
 * STATE and its final status. A read killed at any point leaves a STATE that covers every RECORD
 * emitted before it, so the platform does not pay again for what they hold.
 */
export class StreamEmitter {
  readonly #ended = new Set<string>();
  readonly #progress = new Map<string, TableProgress>();
  readonly #checkpoints = new Map<string, Checkpoint>();

  /**
   * @param runId the run's id: an incremental table emits the rows this run loaded
   * @param fullRefresh tables the catalog reads in full (every current row)
   * @param stateRounding how much earlier than it was a stream's state may record a fetch (see `exportStreamState`)
   */
  constructor(
    private readonly destination: Destination,
    private readonly tables: readonly TableReport[],
    private readonly runId: string,
    private readonly fullRefresh: ReadonlySet<string>,
    private readonly stateRounding: (stream: string) => number | undefined = () => undefined,
  ) {}

  /**
   * A load unit of `stream` committed (called under the run's write lock: nothing else commits
   * while this reads). Emits a checkpoint when one is due; `paid`: the unit journaled a paid answer.
   */
  async unitCommitted(stream: string, paid: boolean): Promise<void> {
    if (this.#ended.has(stream) || !this.#due(stream, paid)) return;
    const tables = this.#tablesOf(stream);
    if (tables.length === 0) return;
    const started = performance.now();
    for (const table of tables) await this.#emitRows(table, { loadedBy: this.runId });
    const stateChars = await this.#emitState(stream, tables);
    this.#checkpoints.set(stream, { at: Date.now(), tookMs: performance.now() - started, stateChars });
  }

  /** A stream ended: the rest of its tables is emitted (the run waits for it before the next stream). */
  streamEnded(outcome: StreamOutcome): Promise<void> {
    this.#ended.add(outcome.stream);
    return this.#emitStream(outcome.stream, outcome);
  }

  /**
   * Emits the streams the run never ended (it stopped first) with what `outcomes` says of them;
   * `stopped`: a stop request ended the run, so a stream it never reached did not do its work.
   */
  async finish(outcomes: readonly StreamOutcome[], stopped = false): Promise<void> {
    for (const stream of new Set(this.tables.map((t) => t.stream)))
      if (!this.#ended.has(stream)) {
        this.#ended.add(stream);
        const outcome = outcomes.find((o) => o.stream === stream);
        await this.#emitStream(stream, outcome ?? (stopped ? notReached(stream) : undefined));
      }
  }

  /**
   * Whether a commit of `stream` calls for a checkpoint: its first, one after a paid answer while
   * its STATE is small (a kill then re-buys nothing), else once the interval has passed.
   */
  #due(stream: string, paid: boolean): boolean {
    const last = this.#checkpoints.get(stream);
    if (!last) return true;
    if (paid && last.stateChars < SMALL_STATE_CHARS) return true;
    return Date.now() - last.at >= Math.max(CHECKPOINT_INTERVAL_MS, CHECKPOINT_COST_FACTOR * last.tookMs);
  }

  #tablesOf(stream: string): TableReport[] {
    return this.tables.filter((t) => t.stream === stream);
  }

  async #emitStream(stream: string, outcome: StreamOutcome | undefined): Promise<void> {
    const tables = this.#tablesOf(stream);
    for (const table of tables) {
      await this.#emitRows(table, { loadedBy: this.runId });
      // A full refresh is every current row: those of earlier runs join the run's own, emitted as they committed.
      if (this.fullRefresh.has(table.table)) await this.#emitRows(table, { currentExcept: this.runId });
    }
    await this.#emitState(stream, tables);
    for (const table of tables) emitEnd(table, outcome);
  }

  /** Emits the table's rows `filter` selects; for the run's own rows, only those after the last emitted. */
  async #emitRows(table: TableReport, filter: RowFilter): Promise<void> {
    const progress = this.#progress.get(table.table) ?? { sinceState: 0, running: false };
    this.#progress.set(table.table, progress);
    const ownRows = 'loadedBy' in filter;
    const query = ownRows && progress.afterMs !== undefined ? { ...filter, afterMs: progress.afterMs } : filter;
    for await (const rows of rowsToEmit(this.destination, table, query)) {
      if (!progress.running) emit(streamStatus(table.table, 'RUNNING'));
      progress.running = true;
      const emittedAt = Date.now();
      for (const data of rows) {
        emit({ type: 'RECORD', record: { stream: table.table, data, emitted_at: emittedAt } });
        if (ownRows) progress.afterMs = Math.max(progress.afterMs ?? 0, loadedAtMs(data));
      }
      progress.sinceState += rows.length;
    }
  }

  /** Emits the stream's STATE for each of its tables; returns its length. */
  async #emitState(stream: string, tables: readonly TableReport[]): Promise<number> {
    const state = await exportStreamState(this.destination, stream, this.stateRounding(stream));
    const chars = emitStreamStates(
      state,
      tables.map((t) => ({ name: t.table, recordCount: this.#progress.get(t.table)?.sinceState ?? 0 })),
    );
    for (const table of tables) {
      const progress = this.#progress.get(table.table);
      if (progress) progress.sinceState = 0;
    }
    return chars;
  }
}

/** The outcome of a stream a stopped run never reached. */
function notReached(stream: string): StreamOutcome {
  return { ...emptyOutcome(stream), stoppedOnRequest: true };
}

/**
 * A table's last messages, as the protocol reads them: a stream that did its work is COMPLETE, even
 * when some seeds failed one by one (a private profile fails every read: it is said in a WARN LOG,
 * never as an error that would fail the platform's sync); a stream that failed, or stopped with
 * work left (the budget, a stop request), is INCOMPLETE after a TRACE ERROR saying why.
 */
function emitEnd(table: TableReport, outcome: StreamOutcome | undefined): void {
  const unfinished =
    outcome?.status === 'failed'
      ? `stream ${table.stream} failed: ${outcome.errors[0] ?? 'see the LOG messages'}`
      : outcome?.stopped === 'budget_exhausted'
        ? `stream ${table.stream} stopped at the budget: the rest of its work is pending for the next read`
        : outcome?.stoppedOnRequest
          ? `stream ${table.stream} stopped on request: the rest of its work is pending for the next read`
          : undefined;
  if (unfinished !== undefined) {
    emit(errorTrace(redact(unfinished), 'transient_error', table.table));
    emit(streamStatus(table.table, 'INCOMPLETE'));
    return;
  }
  if (outcome !== undefined && outcome.failed > 0 && !table.parent)
    emit({
      type: 'LOG',
      log: {
        level: 'WARN',
        message: redact(
          `stream ${table.stream}: ${outcome.failed} seeds or partitions failed one by one (the others loaded)${outcome.errors[0] ? `, e.g. ${outcome.errors[0]}` : ''}; they are in the working store's _seedline_seeds with status failed`,
        ),
      },
    });
  emit(streamStatus(table.table, 'COMPLETE'));
}

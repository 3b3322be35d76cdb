import { emit, emitStreamStates, errorTrace, streamStatus } from '../airbyte/airbyte-messages.js';
import { exportStreamState } from '../airbyte/airbyte-state.js';
import { quoteIdentifier } from '../destinations/identifiers.js';
import type { Destination } from '../destinations/destination.js';
import { emptyOutcome, type StreamOutcome } from '../engine/stream-context.js';
import { redact } from '../util/log.js';
import type { TableReport } from './stream-tables.js';

/** Rows read and emitted at a time (DuckDB answers in its own vector size, 2,048): what `airbyte read` holds of a table at once. */
const ROWS_PER_READ = 2_000;

/**
 * Emits each stream's tables as soon as the stream ends, before the run goes on to the next: its
 * RECORDs (read in pages, never a whole table at once), then the STATE that covers them, then its
 * final status. A read killed later keeps the STATE of every stream already emitted, so the
 * platform does not pay again for what those streams bought.
 */
export class StreamEmitter {
  readonly #emitted = new Set<string>();

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

  /** A stream ended: its tables are emitted (the run waits for it before the next stream). */
  streamEnded(outcome: StreamOutcome): Promise<void> {
    this.#emitted.add(outcome.stream);
    return this.#emitStream(outcome.stream, outcome);
  }

  /**
   * Emits the streams the run never ended (it stopped first) with what `outcomes` says of them;
   * `stopped`: a stop request ended the run, so a stream it never reached did not do its work.
   */
  async finish(outcomes: readonly StreamOutcome[], stopped = false): Promise<void> {
    for (const stream of new Set(this.tables.map((t) => t.stream)))
      if (!this.#emitted.has(stream)) {
        const outcome = outcomes.find((o) => o.stream === stream);
        await this.#emitStream(stream, outcome ?? (stopped ? notReached(stream) : undefined));
      }
  }

  async #emitStream(stream: string, outcome: StreamOutcome | undefined): Promise<void> {
    const tables = this.tables.filter((t) => t.stream === stream);
    const counts = new Map<string, number>();
    for (const table of tables) {
      const runId = this.fullRefresh.has(table.table) ? undefined : this.runId;
      let count = 0;
      for await (const rows of rowsToEmit(this.destination, table, runId)) {
        if (count === 0) emit(streamStatus(table.table, 'RUNNING'));
        const emittedAt = Date.now();
        for (const data of rows) emit({ type: 'RECORD', record: { stream: table.table, data, emitted_at: emittedAt } });
        count += rows.length;
      }
      counts.set(table.table, count);
    }
    emitStreamStates(
      await exportStreamState(this.destination, stream, this.stateRounding(stream)),
      tables.map((t) => ({ name: t.table, recordCount: counts.get(t.table) ?? 0 })),
    );
    for (const table of tables) emitEnd(table, outcome);
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

/**
 * A table's rows to emit, a chunk at a time as one query streams them (never a whole table, nor a
 * sort of it): all current ones (history: the open versions), or those the run loaded; none when
 * the table is not there yet.
 */
async function* rowsToEmit(
  destination: Destination,
  table: TableReport,
  runId: string | undefined,
): AsyncGenerator<Record<string, unknown>[]> {
  if (!(await destination.hasTable(table.table))) return;
  const columns = await columnsOf(destination, table.table);
  const from = `${quoteIdentifier(destination.schema, 'schema')}.${quoteIdentifier(table.table, 'table')}`;
  // The read-only path streams and takes no parameters: the run's id is a literal, its quotes doubled.
  const where =
    runId !== undefined
      ? `where _run_id = '${runId.replaceAll("'", "''")}'`
      : table.writeMode === 'history' && !table.parent
        ? 'where _valid_to is null'
        : '';
  const select = `select ${columns.map((c) => quoteIdentifier(c, 'column')).join(', ')} from ${from} ${where}`;
  for await (const rows of destination.readQueryChunks(select, ROWS_PER_READ))
    yield rows.map((values) => Object.fromEntries(columns.map((column, i) => [column, values[i]])));
}

/** A table's columns in their order, as the destination holds them (evolved columns included). */
async function columnsOf(destination: Destination, table: string): Promise<string[]> {
  const rows = await destination.query<{ column_name: string }>(
    'select column_name from information_schema.columns where table_schema = $1 and table_name = $2 order by ordinal_position',
    [destination.schema, table],
  );
  return rows.map((row) => row.column_name);
}

import { readFile } from 'node:fs/promises';
import {
  emit,
  errorTrace,
  logMessages,
  rowJsonSchema,
  streamStatus,
  type AirbyteStream,
} from '../airbyte/airbyte-messages.js';
import { exportStreamState, restoreStreamStates, stateBlobsOf } from '../airbyte/airbyte-state.js';
import { configJsonSchema } from '../config/config-json-schema.js';
import { loadConfig } from '../config/load-config.js';
import { quoteIdentifier } from '../destinations/identifiers.js';
import { type Destination } from '../destinations/destination.js';
import { planSync, prepareSync, type RunResult } from '../engine/pipeline.js';
import type { StreamOutcome } from '../engine/stream-context.js';
import { loadManifests } from '../manifest/load-manifests.js';
import { redact } from '../util/log.js';
import { runId } from '../util/run-id.js';
import { openServiceSession, openSession, type Session } from './open-session.js';
import { configuredTables, type TableReport } from './stream-tables.js';
import { syncInSession } from './sync-action.js';

/** The protocol version the messages follow. */
const PROTOCOL_VERSION = '0.5.2';
const DOCUMENTATION = 'https://github.com/seedline/seedline#airbyte-protocol';

/** `airbyte spec`: the connector specification, the config's JSON Schema. */
export async function airbyteSpec(): Promise<void> {
  emit({
    type: 'SPEC',
    spec: {
      documentationUrl: DOCUMENTATION,
      connectionSpecification: configJsonSchema(),
      supportsIncremental: true,
      supported_destination_sync_modes: ['append', 'overwrite', 'append_dedup'],
      protocol_version: PROTOCOL_VERSION,
    },
  });
}

/** `airbyte check`: the config loads and the service answers with its key (GET /v1/account, free). */
export async function airbyteCheck(opts: { config: string }): Promise<void> {
  try {
    const session = await openServiceSession(opts.config);
    await session.close();
    emit({ type: 'CONNECTION_STATUS', connectionStatus: { status: 'SUCCEEDED' } });
  } catch (error) {
    emit({
      type: 'CONNECTION_STATUS',
      connectionStatus: { status: 'FAILED', message: redact((error as Error).message) },
    });
  }
}

/** `airbyte discover`: the catalog, one stream per table a sync of the config creates. */
export async function airbyteDiscover(opts: { config: string }): Promise<void> {
  const { config } = await loadConfig(opts.config);
  const tables = configuredTables(
    await loadManifests(config),
    config.streams as Record<string, Record<string, unknown> | undefined>,
    String,
  );
  emit({ type: 'CATALOG', catalog: { streams: tables.map(catalogStream) } });
}

/** `airbyte read`: syncs the catalog's streams and emits their rows, state and statuses. */
export function airbyteRead(opts: { config: string; catalog: string; state?: string }): Promise<void> {
  return read(opts);
}

/** A table as a catalog stream: rows loaded by a sync carry `_loaded_at`, the cursor of incremental reads. */
function catalogStream(table: TableReport): AirbyteStream {
  return {
    name: table.table,
    json_schema: rowJsonSchema(table.columns),
    supported_sync_modes: ['full_refresh', 'incremental'],
    source_defined_cursor: true,
    default_cursor_field: ['_loaded_at'],
    source_defined_primary_key: table.primaryKey.map((key) => [key]),
    is_resumable: true,
  };
}

async function read(opts: { config: string; catalog: string; state?: string }): Promise<void> {
  const session = await openSession(opts.config, { lock: true });
  try {
    const manifests = await loadManifests(session.loaded.config);
    const catalog = JSON.parse(await readFile(opts.catalog, 'utf8')) as unknown;
    const tables = selectedTables(session, manifests, catalog);
    const streams = [...new Set(tables.map((t) => t.stream))];
    const { destination, loaded } = session;
    if (opts.state)
      await restoreStreamStates(
        destination,
        stateBlobsOf(JSON.parse(await readFile(opts.state, 'utf8')) as unknown),
        runId('airbyte_state'),
      );
    const prepared = await prepareSync({
      config: loaded.config,
      baseDir: loaded.baseDir,
      manifests,
      destination,
      only: streams,
    });
    for (const plan of await planSync(prepared)) {
      for (const table of tables.filter((t) => t.stream === plan.stream && !t.parent)) {
        // The rows the plan expects in this table; none when it has no bound (the protocol wants an integer).
        const rows = plan.rows?.[table.table] ? Math.ceil(plan.rows[table.table]!.expected) : plan.units;
        emit({
          type: 'TRACE',
          trace: {
            type: 'ESTIMATE',
            emitted_at: Date.now(),
            estimate: { name: table.table, type: 'STREAM', ...(Number.isFinite(rows) ? { row_estimate: rows } : {}) },
          },
        });
      }
    }
    for (const table of tables) emit(streamStatus(table.table, 'STARTED'));
    const result = await syncInSession(session, { config: opts.config, streams: streams.join(','), quiet: true });
    await emitResults(destination, tables, result, fullRefreshTables(catalog));
  } finally {
    await session.close();
  }
}

/** The catalog's streams among the configured tables; a name the config does not make is a config error. */
function selectedTables(
  session: Session,
  manifests: Awaited<ReturnType<typeof loadManifests>>,
  catalog: unknown,
): TableReport[] {
  const configured = configuredTables(
    manifests,
    session.loaded.config.streams as Record<string, Record<string, unknown> | undefined>,
    String,
  );
  const names = ((catalog as { streams?: { stream?: { name?: unknown } }[] })?.streams ?? []).map((s) =>
    String(s.stream?.name),
  );
  const unknown = names.filter((name) => !configured.some((t) => t.table === name));
  if (names.length === 0 || unknown.length > 0) {
    throw Object.assign(
      new Error(
        `the catalog ${names.length === 0 ? 'names no stream' : `names streams the config does not sync: ${unknown.join(', ')}`}; run discover for the streams offered`,
      ),
      { code: 'SEEDLINE_CONFIG_INVALID' },
    );
  }
  return configured.filter((t) => names.includes(t.table));
}

/** Tables the catalog reads in `full_refresh` mode (every current row each read); the others are incremental. */
function fullRefreshTables(catalog: unknown): Set<string> {
  const streams = (catalog as { streams?: { stream?: { name?: unknown }; sync_mode?: unknown }[] })?.streams ?? [];
  return new Set(streams.filter((s) => s.sync_mode === 'full_refresh').map((s) => String(s.stream?.name)));
}

/**
 * The rows as RECORD messages (a full-refresh table's every current row, an incremental one's rows
 * this run loaded), each stream's state after them, and its final status.
 */
async function emitResults(
  destination: Destination,
  tables: readonly TableReport[],
  result: RunResult,
  fullRefresh: ReadonlySet<string>,
): Promise<void> {
  const schema = quoteIdentifier(destination.schema, 'schema');
  const counts = new Map<string, number>();
  for (const table of tables) {
    const rows = await rowsToEmit(destination, schema, table, fullRefresh.has(table.table) ? undefined : result.runId);
    if (rows.length > 0) emit(streamStatus(table.table, 'RUNNING'));
    const emittedAt = Date.now();
    for (const data of rows) emit({ type: 'RECORD', record: { stream: table.table, data, emitted_at: emittedAt } });
    counts.set(table.table, rows.length);
  }
  for (const table of tables) {
    const stream_state = (await exportStreamState(destination, table.stream)) as unknown as Record<string, unknown>;
    emit({
      type: 'STATE',
      state: {
        type: 'STREAM',
        stream: { stream_descriptor: { name: table.table }, stream_state },
        sourceStats: { recordCount: counts.get(table.table) ?? 0 },
      },
    });
    emitEnd(
      table,
      result.streams.find((s) => s.stream === table.stream),
    );
  }
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

/** A table's rows to emit: all current ones (history: the open versions), or those a run loaded; none when the table is not there yet. */
async function rowsToEmit(
  destination: Destination,
  schema: string,
  table: TableReport,
  runId: string | undefined,
): Promise<Record<string, unknown>[]> {
  if (!(await destination.hasTable(table.table))) return [];
  const from = `select * from ${schema}.${quoteIdentifier(table.table, 'table')}`;
  if (runId !== undefined) return destination.query(`${from} where _run_id = $1`, [runId]);
  return destination.query(table.writeMode === 'history' && !table.parent ? `${from} where _valid_to is null` : from);
}

import { readFile } from 'node:fs/promises';
import { emit, rowJsonSchema, streamStatus, type AirbyteStream } from '../airbyte/airbyte-messages.js';
import { restoreStreamStates, stateBlobsOf } from '../airbyte/airbyte-state.js';
import { configJsonSchema } from '../config/config-json-schema.js';
import { loadConfig } from '../config/load-config.js';
import { batchStreamSeeds } from '../engine/batch/stream-seeds.js';
import { planSync, prepareSync, type PreparedSync } from '../engine/pipeline.js';
import { loadManifests } from '../manifest/load-manifests.js';
import { redact } from '../util/log.js';
import { runId } from '../util/run-id.js';
import { openServiceSession, openSession, type Session } from './open-session.js';
import { configuredTables, type TableReport } from './stream-tables.js';
import { syncInSession } from './sync-action.js';
import { StreamEmitter } from './airbyte-emit.js';
import { stopOnSignals } from './stop-on-signals.js';

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

/**
 * The read. SIGTERM (a platform cancelling the sync) or Ctrl-C lets the unit under way commit; the
 * stream under way then ends INCOMPLETE with a STATE covering what it committed, as do the streams
 * not reached, so the next read pays for none of it again.
 */
async function read(opts: { config: string; catalog: string; state?: string }): Promise<void> {
  const stop = stopOnSignals((signal) =>
    emit({ type: 'LOG', log: { level: 'INFO', message: `${signal}: stopping after the unit under way commits` } }),
  );
  const session = await openSession(opts.config, { lock: true, signal: stop.signal }).catch((error: unknown) => {
    stop.dispose();
    throw error;
  });
  try {
    const manifests = await loadManifests(session.loaded.config);
    const catalog = JSON.parse(await readFile(opts.catalog, 'utf8')) as unknown;
    const tables = selectedTables(session, manifests, catalog);
    const streams = [...new Set(tables.map((t) => t.stream))];
    const { destination, loaded } = session;
    const prepared = await prepareSync({
      config: loaded.config,
      baseDir: loaded.baseDir,
      manifests,
      destination,
      only: streams,
    });
    if (opts.state) await restoreState(prepared, opts.state);
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
    const run = runId('run');
    const emitter = new StreamEmitter(destination, tables, run, fullRefreshTables(catalog), stateRounding(prepared));
    const result = await syncInSession(session, {
      config: opts.config,
      streams: streams.join(','),
      quiet: true,
      runId: run,
      stop: stop.signal,
      afterStream: (outcome) => emitter.streamEnded(outcome),
      unitCommitted: (stream, paid) => emitter.unitCommitted(stream, paid),
    });
    await emitter.finish(result.streams, stop.signal.aborted);
  } finally {
    stop.dispose();
    await session.close();
  }
}

/**
 * Restores the streams' states from `--state`, a compact ledger read against each batch stream's
 * seeds now; seeds it cannot tell apart (the list changed too much) are said in a WARN LOG: they
 * are due, so this read fetches them again.
 */
async function restoreState(prepared: PreparedSync, path: string): Promise<void> {
  const { destination } = prepared.options;
  const { seeds } = prepared;
  const restored = await restoreStreamStates(
    destination,
    stateBlobsOf(JSON.parse(await readFile(path, 'utf8')) as unknown),
    runId('airbyte_state'),
    (stream) => {
      const compiled = prepared.streams.find((s) => s.name === stream);
      return compiled?.kind === 'batch' ? () => batchStreamSeeds(compiled, seeds, destination) : undefined;
    },
  );
  await warnOfEmptyParents(prepared);
  if (restored.unresolved > 0)
    emit({
      type: 'LOG',
      log: {
        level: 'WARN',
        message: `${restored.unresolved} seeds are due again: the seed list changed since the state was written more than its sketch can tell apart in their hash ranges (see docs/airbyte.md#state-that-fits)`,
      },
    });
}

/**
 * A STATE restores what was fetched, never the rows: in a fresh container a stream whose partitions
 * are the rows of a parent table (activity over profiles) finds that table empty, and runs only
 * over the rows this read loads. A WARN LOG says so once per stream.
 */
async function warnOfEmptyParents(prepared: PreparedSync): Promise<void> {
  const { destination } = prepared.options;
  for (const stream of prepared.streams) {
    const missing: string[] = [];
    for (const parent of stream.partitions.parents)
      if (!(await destination.hasTable(parent.table))) missing.push(parent.table);
    if (missing.length === 0) continue;
    emit({
      type: 'LOG',
      log: {
        level: 'WARN',
        message: `stream ${stream.name} reads its partitions from ${missing.join(', ')}, which this working store does not hold: it runs only over the rows this read loads there. Keep the working store between reads to refresh all of them (see docs/airbyte.md#a-working-store-that-lasts)`,
      },
    });
  }
}

/** How much earlier than it was a stream's state may record a fetch: a fortieth of its refresh_after. */
function stateRounding(prepared: PreparedSync): (stream: string) => number | undefined {
  return (stream) => {
    const compiled = prepared.streams.find((s) => s.name === stream);
    const refresh = compiled?.kind === 'batch' ? compiled.refreshAfterMs : undefined;
    return refresh === undefined ? undefined : refresh / 40;
  };
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

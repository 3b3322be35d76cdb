import { UnknownStreamError } from '../engine/engine-errors.js';
import { resetStreamState, summarizeState, type StreamStateSummary } from '../engine/books/stream-state.js';
import { loadManifests } from '../manifest/load-manifests.js';
import { compileContextOf, compileStream } from '../manifest/compile-stream.js';
import type { StreamManifest } from '../manifest/manifest-schema.js';
import { runId } from '../util/run-id.js';
import { formatTable } from './format-table.js';
import { writeJson } from './json-output.js';
import { openSession } from './open-session.js';
import { UsageError } from './run-command.js';
import { splitList } from './split-list.js';

/** Options of `seedline state show|reset`. */
export interface StateOptions {
  /** Config file path. */
  config: string;
  /** Comma-separated stream names; `show` defaults to every configured stream, `reset` requires them. */
  streams?: string;
  /** `reset` only this seed. Default: every seed of the streams. */
  seed?: string;
  /** Wait for another writer instead of failing. */
  wait: boolean;
  /** Print the result as JSON. */
  json: boolean;
  /** `show` also lists this many partitions' cursors per stream, the latest changed first. Default: none. */
  cursors?: string | boolean;
}

/** The most cursors `state show --cursors` prints per stream. */
const MAX_CURSORS = 1000;
/** A cursor's text is cut to this many characters in the table (`--json` has it whole). */
const CURSOR_WIDTH = 100;

/** `seedline state show`: seeds by status, partitions with a cursor, and the last change, per stream. */
export async function showStateAction(opts: StateOptions): Promise<void> {
  const session = await openSession(opts.config, { mustExist: true, waitForLock: opts.wait, offersWait: true });
  try {
    const manifests = await loadManifests(session.loaded.config);
    const configured = Object.keys(session.loaded.config.streams);
    const cursors = cursorCount(opts.cursors);
    const summaries = [];
    for (const manifest of chosen(manifests, splitList(opts.streams) ?? configured))
      summaries.push(await summarizeState(session.destination, manifest.name, cursors));
    if (opts.json) writeJson(summaries);
    else {
      const rows = summaries.map((s) => ({
        stream: s.stream,
        seeds: Object.entries(s.seeds)
          .map(([status, n]) => `${n} ${status}`)
          .join(', '),
        partitions: s.partitions,
        last_updated_at: s.lastUpdatedAt ?? '',
      }));
      process.stdout.write(`${formatTable(rows)}\n`);
      if (cursors > 0) process.stdout.write(cursorTables(summaries));
    }
  } finally {
    await session.close();
  }
}

/** `--cursors [N]`: none when absent, 20 when given bare, else N (1 to MAX_CURSORS). */
function cursorCount(value: string | boolean | undefined): number {
  if (value === undefined || value === false) return 0;
  if (value === true) return 20;
  const count = Number(value);
  if (!Number.isInteger(count) || count < 1 || count > MAX_CURSORS)
    throw new UsageError(`--cursors: expected a number of partitions from 1 to ${MAX_CURSORS}, got "${value}"`);
  return count;
}

/** Per stream with partitions: its latest cursors, one line each, cut to CURSOR_WIDTH; how many more there are. */
function cursorTables(summaries: readonly StreamStateSummary[]): string {
  return summaries
    .filter((s) => (s.cursors?.length ?? 0) > 0)
    .map((s) => {
      const rows = s.cursors!.map((c) => ({
        partition: c.partition,
        updated_at: c.updatedAt ?? '',
        cursor: cut(typeof c.cursor === 'string' ? c.cursor : JSON.stringify(c.cursor), CURSOR_WIDTH),
      }));
      const more = s.partitions - rows.length;
      return `\n${s.stream}: the ${rows.length} latest of ${s.partitions} partition state(s)\n${formatTable(rows)}\n${more > 0 ? `(${more} more: --cursors N shows more, --json shows them whole)\n` : ''}`;
    })
    .join('');
}

function cut(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, width - 1)}…`;
}

/** `seedline state reset`: makes the streams (or one seed) due at the next run; the data tables are left as they are. */
export async function resetStateAction(opts: StateOptions): Promise<void> {
  const names = splitList(opts.streams) ?? [];
  if (names.length === 0) throw new UsageError('--streams: name the streams to reset, e.g. --streams profiles');
  const session = await openSession(opts.config, { lock: true, waitForLock: opts.wait, offersWait: true });
  try {
    const streams = chosen(await loadManifests(session.loaded.config), names);
    const outcomes = [];
    const options = session.loaded.config.streams as Record<string, Record<string, unknown> | undefined>;
    const context = compileContextOf(await loadManifests(session.loaded.config));
    for (const manifest of streams) {
      const stream = compileStream(manifest, options[manifest.name] ?? {}, context);
      outcomes.push(await resetStreamState(session.destination, stream, runId('reset'), opts.seed));
    }
    if (opts.json) writeJson(outcomes);
    else
      process.stdout.write(
        `${formatTable(outcomes.map((o) => ({ ...o })))}\ndue at the next run; the data tables are unchanged\n`,
      );
  } finally {
    await session.close();
  }
}

/** The manifests of `names`, refusing an unknown name (exit 2). */
function chosen(manifests: ReadonlyMap<string, StreamManifest>, names: readonly string[]): StreamManifest[] {
  return names.map((name) => {
    const manifest = manifests.get(name);
    if (!manifest)
      throw new UnknownStreamError(`--streams: unknown stream "${name}" (known: ${[...manifests.keys()].join(', ')})`);
    return manifest;
  });
}

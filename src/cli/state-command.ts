import type { Command } from 'commander';
import { UnknownStreamError } from '../engine/engine-errors.js';
import { resetStreamState, summarizeState } from '../engine/stream-state.js';
import { loadManifests } from '../manifest/load-manifests.js';
import type { StreamManifest } from '../manifest/manifest-schema.js';
import { runId } from '../util/run-id.js';
import { formatTable } from './format-table.js';
import { jsonOption, writeJson } from './json-output.js';
import { openSession } from './open-session.js';
import { runCommand, UsageError } from './run-command.js';
import { splitList } from './sync-command.js';

/** Options of `seedline state show|reset`. */
interface StateOptions {
  config: string;
  streams?: string;
  seed?: string;
  wait: boolean;
  json: boolean;
}

/**
 * `seedline state show|reset`, as Meltano users expect: what the ledgers and cursors say per
 * stream, and making a stream (or one seed of it) due at the next run. Nothing is deleted from
 * the data tables.
 */
export function registerStateCommand(program: Command): void {
  const state = program
    .command('state')
    .description('Show the per-stream seed ledger and cursors, or make a stream or one seed due at the next run');
  state
    .command('show')
    .description('Seeds by status, partitions with a cursor, and the last change, per stream')
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .option('--streams <names>', 'only these streams, comma-separated (default: every configured stream)')
    .option('--wait', 'wait while a sync holds the destination instead of failing (Ctrl-C ends the wait)', false)
    .addOption(jsonOption())
    .action((opts: StateOptions) =>
      runCommand(async () => {
        const session = await openSession(opts.config, { mustExist: true, waitForLock: opts.wait, offersWait: true });
        try {
          const manifests = await loadManifests(session.loaded.config);
          const configured = Object.keys(session.loaded.config.streams);
          const summaries = [];
          for (const manifest of chosen(manifests, splitList(opts.streams) ?? configured))
            summaries.push(await summarizeState(session.destination, manifest.name));
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
          }
        } finally {
          await session.close();
        }
      }),
    );
  state
    .command('reset')
    .description(
      'Make the streams due at the next run (or only --seed): ledger rows lose their fetch time, cursors are deleted; data tables are left as they are',
    )
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .requiredOption('--streams <names>', 'the streams to reset, comma-separated')
    .option('--seed <seed>', 'only this seed (a profile or company URL or slug, a search id)')
    .option('--wait', 'wait for another writer to release the destination instead of failing', false)
    .addOption(jsonOption())
    .action((opts: StateOptions) =>
      runCommand(async () => {
        const names = splitList(opts.streams) ?? [];
        if (names.length === 0) throw new UsageError('--streams: name the streams to reset, e.g. --streams profiles');
        const session = await openSession(opts.config, { lock: true, waitForLock: opts.wait, offersWait: true });
        try {
          const streams = chosen(await loadManifests(session.loaded.config), names);
          const outcomes = [];
          for (const manifest of streams)
            outcomes.push(await resetStreamState(session.destination, manifest, runId('reset'), opts.seed));
          if (opts.json) writeJson(outcomes);
          else
            process.stdout.write(
              `${formatTable(outcomes.map((o) => ({ ...o })))}\ndue at the next run; the data tables are unchanged\n`,
            );
        } finally {
          await session.close();
        }
      }),
    );
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

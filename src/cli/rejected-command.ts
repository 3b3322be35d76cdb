import type { Command } from 'commander';
import { listRejected, retryRejected, type RejectedFilter } from '../engine/rejected-retry.js';
import { loadManifests } from '../manifest/load-manifests.js';
import { runId } from '../util/run-id.js';
import { formatTable } from './format-table.js';
import { jsonOption, writeJson } from './json-output.js';
import { openSession } from './open-session.js';
import { runCommand } from './run-command.js';

/** Options of `seedline rejected list|retry`. */
interface RejectedOptions extends RejectedFilter {
  config: string;
  wait: boolean;
  json: boolean;
}

/**
 * `seedline rejected list|retry`: the records kept in `_seedline_rejected`, and loading them again
 * with today's code and contract, without calling the service (they were paid for once).
 */
export function registerRejectedCommand(program: Command): void {
  const rejected = program
    .command('rejected')
    .description('List the records kept in _seedline_rejected, or load them again without calling the service');
  const common = (command: Command) =>
    command
      .requiredOption('-c, --config <file>', 'config file (YAML)')
      .option('--stream <name>', 'only records of this stream')
      .option('--reason <text>', 'only records whose reason contains this text')
      .option('--wait', 'wait while a sync holds the destination instead of failing (Ctrl-C ends the wait)', false)
      .addOption(jsonOption());
  common(rejected.command('list').description('Count the kept records by stream, table and reason')).action(
    (opts: RejectedOptions) =>
      runCommand(async () => {
        const session = await openSession(opts.config, { mustExist: true, waitForLock: opts.wait, offersWait: true });
        try {
          const rows = await listRejected(session.destination, opts);
          if (opts.json) writeJson(rows, { keys: 'as-is' });
          else
            process.stdout.write(
              `${rows.length === 0 ? 'no records are kept in _seedline_rejected' : formatTable(rows)}\n`,
            );
        } finally {
          await session.close();
        }
      }),
  );
  common(
    rejected
      .command('retry')
      .description(
        "Shape the kept records again with today's code and each stream's schema_contract and load what fits, in one unit per stream with their removal; no call, no credit",
      ),
  ).action((opts: RejectedOptions) =>
    runCommand(async () => {
      const session = await openSession(opts.config, { lock: true, waitForLock: opts.wait, offersWait: true });
      try {
        const manifests = await loadManifests(session.loaded.config);
        const streams = session.loaded.config.streams as Record<string, Record<string, unknown> | undefined>;
        const run = { id: runId('retry'), startedAt: new Date() };
        const outcomes = await retryRejected(
          session.destination,
          manifests,
          (stream) => streams[stream] ?? {},
          run,
          opts,
        );
        if (opts.json) writeJson({ runId: run.id, streams: outcomes });
        else if (outcomes.length === 0)
          process.stdout.write('nothing to retry: no kept records of a stream with a table match\n');
        else
          process.stdout.write(
            `retry ${run.id} (no call was made):\n${formatTable(outcomes.map((o) => ({ ...o })))}\n`,
          );
      } finally {
        await session.close();
      }
    }),
  );
}

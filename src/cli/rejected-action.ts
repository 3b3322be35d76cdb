import { listRejected, retryRejected, type RejectedFilter } from '../load/rejected-retry.js';
import { loadManifests } from '../manifest/load-manifests.js';
import { compileStream } from '../manifest/compile-stream.js';
import { runId } from '../util/run-id.js';
import { formatTable } from './format-table.js';
import { writeJson } from './json-output.js';
import { openSession } from './open-session.js';

/** Options of `seedline rejected list|retry`. */
export interface RejectedOptions extends RejectedFilter {
  /** Config file path. */
  config: string;
  /** Wait while a sync holds the destination instead of failing. */
  wait: boolean;
  /** Print the result as JSON. */
  json: boolean;
}

/** `seedline rejected list`: the kept records counted by stream, table and reason. */
export async function listRejectedAction(opts: RejectedOptions): Promise<void> {
  const session = await openSession(opts.config, { mustExist: true, waitForLock: opts.wait, offersWait: true });
  try {
    const rows = await listRejected(session.destination, opts);
    if (opts.json) writeJson(rows, { keys: 'as-is' });
    else
      process.stdout.write(`${rows.length === 0 ? 'no records are kept in _seedline_rejected' : formatTable(rows)}\n`);
  } finally {
    await session.close();
  }
}

/** `seedline rejected retry`: loads the kept records again with today's code and contract, without a call. */
export async function retryRejectedAction(opts: RejectedOptions): Promise<void> {
  const session = await openSession(opts.config, { lock: true, waitForLock: opts.wait, offersWait: true });
  try {
    const manifests = await loadManifests(session.loaded.config);
    const streams = session.loaded.config.streams as Record<string, Record<string, unknown> | undefined>;
    const run = { id: runId('retry'), startedAt: new Date() };
    const tableOf = (stream: string) => {
      const manifest = manifests.get(stream);
      return manifest && compileStream(manifest, streams[stream] ?? {}).table;
    };
    const outcomes = await retryRejected(session.destination, tableOf, run, opts);
    if (opts.json) writeJson({ runId: run.id, streams: outcomes });
    else if (outcomes.length === 0)
      process.stdout.write('nothing to retry: no kept records of a stream with a table match\n');
    else process.stdout.write(`retry ${run.id} (no call was made):\n${formatTable(outcomes.map((o) => ({ ...o })))}\n`);
  } finally {
    await session.close();
  }
}

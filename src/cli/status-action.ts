import { quoteIdentifier } from '../destinations/identifiers.js';
import { formatTable } from './format-table.js';
import { writeJson } from './json-output.js';
import { openSession } from './open-session.js';

/** Options of `seedline status`. */
export interface StatusOptions {
  /** Config file path. */
  config: string;
  /** Wait while a sync holds the destination instead of failing. */
  wait: boolean;
  /** Print the tables as one JSON document. */
  json: boolean;
}

/** Prints the recent runs, the seed ledger by stream and status, open batch jobs and repaired fields. */
export async function statusAction(opts: StatusOptions): Promise<void> {
  const session = await openSession(opts.config, { mustExist: true, waitForLock: opts.wait, offersWait: true });
  try {
    const { destination } = session;
    const schema = quoteIdentifier(destination.schema, 'schema');
    const runs = (await destination.readRuns(5)).map((r) => ({
      run: r.runId,
      started: r.startedAt.toISOString(),
      status: r.status,
      group: r.scheduleGroup ?? '',
      credits: r.creditsUsed ?? 0,
      at_risk: r.creditsAtRisk ?? 0,
      expected: r.creditsEstimated ?? 0,
      stopped: r.stopReason ?? '',
    }));
    const seeds = await destination.readQuery(
      `select stream, status, count(*) as seeds, sum(credits) as credits from ${schema}._seedline_seeds group by stream, status order by stream, status`,
    );
    const batches = await destination.readQuery(
      `select stream, status, count(*) as jobs, sum(item_count) as items from ${schema}._seedline_batches group by stream, status order by stream, status`,
    );
    // Of the runs shown: values that did not fit their column, kept in _extra or discarded so their records loaded.
    const repairs = await destination.readQuery(
      `select stream, "table", field, change, sum("count") as "values" from ${schema}._seedline_repairs ` +
        `where run_id in (select run_id from ${schema}._seedline_runs order by started_at desc limit 5) group by stream, "table", field, change order by stream, "table", field, change`,
    );
    if (opts.json) writeJson({ runs, seeds, batches, repairs });
    else {
      const repaired = repairs.length === 0 ? '(none: every value fit its column)' : formatTable(repairs);
      process.stdout.write(
        `Recent runs:\n${formatTable(runs)}\n\nSeed ledger:\n${formatTable(seeds)}\n\nBatch jobs:\n${formatTable(batches)}\n\nRepaired fields (recent runs; values as received in _extra unless discarded):\n${repaired}\n`,
      );
    }
  } finally {
    await session.close();
  }
}

import type { Destination, RunRow } from '../destinations/destination.js';
import type { WorkersSeen } from '../destinations/fleet-store.js';
import { quoteIdentifier } from '../destinations/identifiers.js';
import type { StreamOutcome } from '../engine/stream-context.js';
import { formatTable } from './format-table.js';
import { writeJson } from './json-output.js';
import { openSession } from './open-session.js';
import { UsageError } from './run-command.js';
import { LOST_AFTER_LEASES, workerState } from './worker-state.js';

/** Options of `seedline status`. */
export interface StatusOptions {
  /** Config file path. */
  config: string;
  /** Wait while a sync holds the destination instead of failing. */
  wait: boolean;
  /** Print the tables as one JSON document. */
  json: boolean;
  /** Show this run alone, stream by stream. Default: the recent runs and the ledgers. */
  run?: string;
}

/** Prints the recent runs, the seed ledger by stream and status, open batch jobs and repaired fields. */
export async function statusAction(opts: StatusOptions): Promise<void> {
  const session = await openSession(opts.config, { mustExist: true, waitForLock: opts.wait, offersWait: true });
  try {
    const { destination } = session;
    if (opts.run !== undefined) return await showRun(destination, opts.run, opts.json);
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
    const seen = await destination.fleetStore?.().inspectWorkers();
    const workers = seen ? fleetWorkers(seen) : undefined;
    const keys = seen?.keys.map((k) => ({
      round: k.roundId,
      started: k.startedAt.toISOString(),
      key: k.keyId,
      limit: k.creditLimit,
      spent: k.spent,
      refused: k.refusal ?? '',
    }));
    if (opts.json) writeJson({ runs, seeds, batches, repairs, ...(seen ? { workers, keys } : {}) });
    else {
      const repaired = repairs.length === 0 ? '(none: every value fit its column)' : formatTable(repairs);
      const fleet = workers
        ? `\n\nWorkers (lost: no heartbeat for ${LOST_AFTER_LEASES} leases):\n${formatTable(workers)}` +
          (keys?.length ? `\n\nCredits per key (last rounds; spent: billed or at risk):\n${formatTable(keys)}` : '')
        : '';
      process.stdout.write(
        `Recent runs:\n${formatTable(runs)}\n\nSeed ledger:\n${formatTable(seeds)}\n\nBatch jobs:\n${formatTable(batches)}\n\nRepaired fields (recent runs; values as received in _extra unless discarded):\n${repaired}${fleet}\n`,
      );
    }
  } finally {
    await session.close();
  }
}

/** The fleet's workers (`seedline worker`), when the destination has its tables: read only, none is created. */
function fleetWorkers(seen: WorkersSeen): Record<string, unknown>[] {
  return seen.workers.map((w) => ({
    worker: w.workerId,
    host: w.host,
    pid: w.pid,
    key: w.keyId,
    started: w.startedAt.toISOString(),
    last_heartbeat: w.heartbeatAt.toISOString(),
    leases: w.leases,
    credits_in_flight: w.creditsInFlight,
    state: workerState(w, seen.now),
  }));
}

/** Runs looked through for `--run`: a year of hourly runs. */
const RUNS_KEPT_IN_VIEW = 10_000;

/**
 * One run, stream by stream: requests, seconds, records and rows, failures, credits against
 * expected, and why a stream stopped, then the errors it noted. Streams of runs recorded before
 * requests and seconds were counted show them empty.
 */
async function showRun(destination: Destination, runId: string, json: boolean): Promise<void> {
  const run = (await destination.readRuns(RUNS_KEPT_IN_VIEW)).find((r) => r.runId === runId);
  if (!run) throw new UsageError(`--run: no run ${runId} in this warehouse; \`seedline status\` lists the recent ones`);
  const streams = JSON.parse(run.streams ?? '[]') as StreamOutcome[];
  if (json) {
    writeJson({ run: runSummary(run), streams });
    return;
  }
  const rows = streams.map((s) => ({
    stream: s.stream,
    status: s.status,
    requests: s.requests ?? '',
    seconds: s.seconds ?? '',
    records: s.records,
    rows: s.rows,
    skipped: s.skipped,
    failed: s.failed,
    rejected: s.rejected,
    credits: s.credits,
    at_risk: s.creditsAtRisk,
    expected: s.estimatedCredits,
    stopped: s.stopped ?? (s.stoppedOnRequest ? 'on request' : ''),
  }));
  const problems = streams.flatMap((s) => s.errors.map((e) => `  ${s.stream}: ${e}`));
  process.stdout.write(
    `${formatTable([runSummary(run)])}\n\n${formatTable(rows)}\n${problems.length ? `\nProblems:\n${problems.join('\n')}\n` : ''}`,
  );
}

function runSummary(run: RunRow): Record<string, unknown> {
  const seconds = run.finishedAt ? Math.round((run.finishedAt.getTime() - run.startedAt.getTime()) / 100) / 10 : null;
  return {
    run: run.runId,
    status: run.status,
    started: run.startedAt.toISOString(),
    seconds: seconds ?? '',
    credits: run.creditsUsed ?? 0,
    at_risk: run.creditsAtRisk ?? 0,
    expected: run.creditsEstimated ?? 0,
    stopped: run.stopReason ?? '',
    error: run.error ?? '',
  };
}

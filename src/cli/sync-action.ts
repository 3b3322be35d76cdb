import { primaryApiKey } from '../config/config-schema.js';
import type { RateLimiter } from '../client/index.js';
import { quoteIdentifier } from '../destinations/identifiers.js';
import { prepareSync, runSync, type RunResult } from '../engine/pipeline.js';
import type { StreamOutcome } from '../engine/stream-context.js';
import { loadManifests } from '../manifest/load-manifests.js';
import { firstLine } from '../util/first-line.js';
import { log } from '../util/log.js';
import { formatTable } from './format-table.js';
import { writeJson } from './json-output.js';
import { loadCostModel } from './load-cost-model.js';
import { openSession, type Session } from './open-session.js';
import { openSpoolDrainer } from './open-spool-drainer.js';
import { createReporter } from './progress-reporter.js';
import { splitList } from './split-list.js';
import { stopOnSignals } from './stop-on-signals.js';

const sampleQuery = (schema: string) => `select p.full_name, p.headline, count(pos._index) as positions
from ${schema}.profiles p left join ${schema}.profiles__positions pos on pos._parent_url = p.url
group by p.full_name, p.headline order by p.full_name limit 5`;

/** Options of one sync run from the command line. */
export interface SyncRunOptions {
  /** Config file path. */
  config: string;
  /** Comma-separated stream names; default every configured stream. */
  streams?: string;
  /** Ignore freshness and incremental cursors. */
  fullRefresh?: boolean;
  /** Wait for another writer instead of failing. */
  wait?: boolean;
  /** Print a sample query of the loaded profiles afterwards. */
  sampleQuery?: boolean;
  /** Print the run's result as JSON (snake_case keys) instead of the summary table. Default: false. */
  json?: boolean;
  /** Print nothing on stdout: the caller reports the result (`airbyte read`). Default: false. */
  quiet?: boolean;
  /** Only read the results of batch jobs recorded by earlier runs; submit nothing new. */
  resumeOnly?: boolean;
  /** With `resumeOnly`, read only these batch jobs (what `serve` passes on `batch.completed`). Default: every submitted job. */
  resumeJobs?: readonly string[];
  /** Group of `schedule:` the run belongs to (recorded in `_seedline_runs`). Default: none. */
  scheduleGroup?: string;
  /** Aborted to stop after the page under way commits. Default: SIGTERM/SIGINT of this process, via `syncOnce`. */
  stop?: AbortSignal;
  /** Id to record the run under. Default: a new one. */
  runId?: string;
  /** Awaited after each stream ends, before the next starts (`airbyte read` emits its rows then). Default: none. */
  afterStream?: (outcome: StreamOutcome) => Promise<void>;
  /** The limiter the run's client calls through (`--metrics` counts its calls). Default: the client's own. */
  limiter?: RateLimiter;
  /** Awaited after each load unit commits (`airbyte read` emits a checkpoint then). Default: none. */
  unitCommitted?: (stream: string, paid: boolean) => Promise<void>;
}

/**
 * One sync run: open the config and destination, prepare (no call yet), connect, run, print the
 * summary, close. SIGTERM or Ctrl-C (or `opts.stop`) lets the page under way commit, then the run
 * stops; during a wait for the lock it ends the wait (`LockWaitAbortedError`).
 */
export async function syncOnce(opts: SyncRunOptions): Promise<RunResult> {
  const own = opts.stop ? undefined : stopOnSignals();
  const stop = opts.stop ?? own!.signal;
  try {
    // The stop also ends a wait for the lock: another writer may hold it for hours.
    const session = await openSession(opts.config, {
      lock: true,
      waitForLock: opts.wait ?? false,
      signal: stop,
      offersWait: true,
    });
    try {
      return await syncInSession(session, { ...opts, stop });
    } finally {
      await session.close();
    }
  } finally {
    own?.dispose();
  }
}

/** A sync run on an open, locked session; the caller closes it. */
export async function syncInSession(session: Session, opts: SyncRunOptions): Promise<RunResult> {
  const { destination, loaded } = session;
  const manifests = await loadManifests(loaded.config);
  await drainSpool(session);
  const only = splitList(opts.streams);
  const prepared = await prepareSync({
    config: loaded.config,
    baseDir: loaded.baseDir,
    manifests,
    destination,
    ...(only ? { only } : {}),
    fullRefresh: opts.fullRefresh ?? false,
    resumeOnly: opts.resumeOnly ?? false,
    ...(opts.resumeJobs ? { resumeJobs: opts.resumeJobs } : {}),
    ...(opts.scheduleGroup ? { scheduleGroup: opts.scheduleGroup } : {}),
  });
  const client = await session.connect(opts.limiter ? { limiter: opts.limiter } : {});
  const result = await runSync(prepared, {
    client,
    reporter: createReporter(),
    ...(opts.runId ? { runId: opts.runId } : {}),
    ...(opts.afterStream ? { afterStream: opts.afterStream } : {}),
    ...(opts.unitCommitted ? { unitCommitted: opts.unitCommitted } : {}),
    concurrentBatchJobs: client.limiter.concurrentBatchJobs,
    balance: client.account?.credits_remaining,
    costs: await loadCostModel(client.baseUrl),
    ...(opts.stop ? { stop: opts.stop } : {}),
  });
  if (opts.quiet) return result;
  const sql =
    opts.sampleQuery && result.streams.some((s) => s.stream === 'profiles')
      ? sampleQuery(quoteIdentifier(destination.schema, 'schema'))
      : undefined;
  const sample = sql === undefined ? undefined : await destination.query(sql);
  if (opts.json) {
    writeJson({ ...result, ...(sample ? { sampleQuery: { sql, rows: sample } } : {}) });
    return result;
  }
  // --sample-query is the demo's (`npm start`): its summary also says which failure is staged.
  const demo = opts.sampleQuery === true;
  process.stdout.write(`${summary(result, { billsNothing: isTestKey(primaryApiKey(loaded.config)), demo })}\n`);
  if (sample) {
    process.stdout.write(
      `\nSample query (seedline query --config ${opts.config} "…"):\n${sql}\n\n${formatTable(sample)}\n`,
    );
    process.stdout.write(
      `\nSee where the credits went: seedline report --config ${opts.config} writes an HTML page of credits, freshness, failures and runs\n`,
    );
  }
  return result;
}

/**
 * Loads the webhook deliveries `serve` spooled but could not load (it was stopped, or a sync held
 * the lock) before the run's own work. A spool that cannot be loaded never stops the sync: its
 * deliveries stay spooled for `serve` or the next sync, and one line says why. `batch.completed`
 * deliveries stay spooled for `serve`: its drain reads the finished job (this run may not read it).
 */
async function drainSpool({ destination, loaded }: Session): Promise<void> {
  try {
    const drained = await (
      await openSpoolDrainer(loaded, {
        open: async () => ({ destination, close: async () => undefined }),
        leaveBatchCompleted: true,
      })
    )?.drainOnce();
    if (drained?.files)
      log.info(`spool: loaded ${drained.files} webhook deliveries waiting in the spool`, { files: drained.files });
  } catch (error) {
    log.warn(`webhook spool not loaded (${firstLine(error)}); its deliveries stay spooled for serve or the next sync`);
  }
}

/** Keys the spec says bill nothing (`svc_test_…`: fixtures, zero spend), so the balance cannot move. */
function isTestKey(apiKey: string): boolean {
  return apiKey.startsWith('svc_test_');
}

/**
 * The run's books against the account: credits the service reported billing, beside how far the
 * balance fell over the run. Any difference is named with its likely causes; none for a test key.
 */
export function booksLine(result: Pick<RunResult, 'books' | 'balanceChange'>, billsNothing = false): string {
  const { books, balanceChange } = result;
  const earlier =
    books.earlierBilled > 0
      ? ` (${books.earlierBilled} of them for batch jobs earlier runs submitted, billed then)`
      : '';
  const atRisk =
    books.atRisk > 0
      ? `, ${books.atRisk} at risk (answers lost after their request went out, counted at worst case)`
      : '';
  const head = `books: ${books.billed} credits billed${earlier}${atRisk}`;
  if (billsNothing) return `${head}; a svc_test_ key bills nothing, so the balance does not move`;
  if (balanceChange === null)
    return `${head}; the balance could not be read at the start and the end, so it is not compared`;
  const difference = balanceChange - (books.billed - books.earlierBilled);
  if (difference === 0) return `${head}; the balance fell by ${balanceChange}: they agree`;
  return (
    `${head}; the balance fell by ${balanceChange}, ${Math.abs(difference)} ${difference > 0 ? 'more' : 'less'} than this run's own calls were billed. ` +
    'Causes: spending outside this run (Signal checks, another client or run on the key), answers lost on the wire (at risk above), or batch items settling after their run.'
  );
}

/** The end-of-run table: rows loaded, skipped, failed, and credits per stream (expected against actual). */
export function summary(result: RunResult, options: { billsNothing?: boolean; demo?: boolean } = {}): string {
  const rows = result.streams.map((s) => ({
    stream: s.stream,
    status: s.status,
    records: s.records,
    rows: s.rows,
    skipped: s.skipped,
    failed: s.failed,
    rejected: s.rejected,
    est_credits: s.estimatedCredits,
    credits: s.credits,
    stopped: s.stopped ?? '',
  }));
  const problems = result.streams.flatMap((s) => s.errors.map((e) => `  ${s.stream}: ${e}`));
  return [
    `run ${result.runId}: ${result.status}, ${result.credits} credits (expected ${result.estimatedCredits})`,
    formatTable(rows),
    'est_credits: what the plan expected (each unit reading what such a unit typically holds: `seedline plan` shows it before a run); credits: what the service billed.',
    booksLine(result, options.billsNothing),
    ...(result.limits.perRunFrom === 'default'
      ? [
          `budget: ${result.limits.perRun} credits a run, the default: the config sets no budget.max_credits_per_run (set it to spend more or less)`,
        ]
      : []),
    ...(problems.length ? ['', 'Problems:', ...problems, ...legendOf(problems)] : []),
    ...(options.demo && problems.some((p) => p.includes('/in/private-'))
      ? ['  (The demo seeds one private profile on purpose, to show how a failure is reported.)']
      : []),
  ].join('\n');
}

/** What the kinds of failure named in `problems` mean, a line each, for the ones a newcomer meets first. */
function legendOf(problems: readonly string[]): string[] {
  const legend: [RegExp, string][] = [
    [
      /unprocessable_target/,
      'unprocessable_target: the network shows that target to nobody (private, deleted or unreachable); the service bills the attempt, and it is not asked again until refresh_after.',
    ],
    [/budget is exhausted/, 'budget: the rest is pending and the next run goes on from there.'],
  ];
  return legend.filter(([pattern]) => problems.some((p) => pattern.test(p))).map(([, line]) => `  (${line})`);
}

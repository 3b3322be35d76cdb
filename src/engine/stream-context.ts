import type { RunScope } from '../manifest/components/table.js';
import type { RefreshSaving } from './books/refresh-saving.js';
import type { Destination } from '../destinations/destination.js';
import { LoadWriter, type UnitCommitted } from '../load/load-writer.js';
import type { Mutex } from '../util/mutex.js';
import type { RunRowCarrier } from '../load/load-writer.js';
import type { Budget } from './books/budget.js';
import type { CostModel } from './books/cost-model.js';
import type { PageShapingPool } from './batch/page-shaping-pool.js';
import type { ServiceClient } from './service-calls.js';

/** Progress events of a run, rendered by the CLI as bars on a terminal or as log lines. */
export interface Reporter {
  /** A stream starts with `total` units of work (seeds or partitions). */
  streamStarted(stream: string, total: number): void;
  /** Progress of a stream: units done so far and credits spent by it. */
  streamProgress(stream: string, progress: { done: number; credits: number }): void;
  /** A stream ended. */
  streamFinished(outcome: StreamOutcome): void;
  /** A one-line notice (a retry, a skipped partition, a budget stop). */
  notice(stream: string, message: string): void;
}

/** What one stream did in a run. */
export interface StreamOutcome {
  stream: string;
  /** `succeeded`, `partial` (some units failed or the budget stopped it), `failed`, or `skipped`. */
  status: 'succeeded' | 'partial' | 'failed' | 'skipped';
  /** Parent records loaded. */
  records: number;
  /** Rows loaded including child rows. */
  rows: number;
  /** Units skipped because they are fresh (or final and loaded). */
  skipped: number;
  /** Units that failed (seed ledger `failed`, or partitions with an error). */
  failed: number;
  /** Records sent to `_seedline_rejected`. */
  rejected: number;
  /** Values kept in `_extra` or discarded so that their records load (per field in `_seedline_repairs`). Default: absent (0). */
  repaired?: number;
  /** Credits the service said it billed for this stream's calls (`meta.creditsUsed`, batch `credits_used`). */
  credits: number;
  /** Credits it may have billed without saying so (answers lost after the request went out), at their worst case. */
  creditsAtRisk: number;
  /** Up to a few error messages. */
  errors: string[];
  /** Expected credits of the work this run selected (the cost model's estimate, to reconcile with `credits`). */
  estimatedCredits: number;
  /** Worst-case credits of that work. */
  worstCaseCredits: number;
  /** Why the stream stopped before its work was done: `budget_exhausted` (a budget limit or a 402). Absent when it finished. */
  stopped?: 'budget_exhausted';
  /** True when a stop request (SIGTERM) left some of the stream's work for the next run. Default: absent. */
  stoppedOnRequest?: true;
  /** Requests the stream sent to the service, retries and batch result polls included. Default: absent (runs before 2026-11-28). */
  requests?: number;
  /** Seconds from the stream's start to its end (its tables settled). Default: absent (runs before 2026-11-28). */
  seconds?: number;
  /**
   * Refresh on change: watched seeds fetched before that this run took again because a Trigger
   * reported a change (`byChange`) or because refresh_after_watched passed (`byAge`). Absent when none was.
   */
  refreshes?: { byChange: number; byAge: number };
  /** Rows (history: versions) that took what a Trigger said at no cost (refresh on change, `apply`). */
  fromTriggers?: number;
}

/** What a stream would do now (from `seedline plan`), without spending. */
export interface StreamPlan {
  stream: string;
  /** Seeds or partitions that need a call. */
  units: number;
  /** Items of recorded batch jobs a run would re-attach to (already paid for). */
  resumed: number;
  /** Units skipped as fresh. */
  skipped: number;
  /** Of the units, the seeds due because a Trigger reported a change (refresh on change); absent: by age only. */
  dueByChange?: number;
  /** Refresh on change over the last runs against refresh by age alone; absent: by age only. */
  refreshSaving?: RefreshSaving;
  /** Calls the units need at least (batch: submissions; paged: first pages; searches: one each). */
  calls: number;
  /** Worst-case credits of the units: every page of every feed up to its max_pages, every search full. */
  worstCaseCredits: number;
  /** Expected credits: every call succeeds, each pass reads what its partition typically holds (see `passCost`). */
  estimatedCredits: number;
  /** Units in the order a run takes them, at most a few (the first ones a small budget covers). */
  next: string[];
  /** The most one billed single call of this stream can bill (what a crash can lose per call on the wire). Default: 0. */
  maxCallCredits?: number;
  /** Rows the units may load, per table: what bounds the partitions of a stream reading that table. Default: none. */
  rows?: Record<string, PlannedRows>;
}

/** Rows a run may load into one table: at most (every page full), and as expected (what partitions typically hold). */
export interface PlannedRows {
  worst: number;
  expected: number;
}

/** Adds `add` to the rows planned for `table`. */
export function addRows(rows: Record<string, PlannedRows>, table: string, add: PlannedRows): void {
  const into = (rows[table] ??= { worst: 0, expected: 0 });
  into.worst += add.worst;
  into.expected += add.expected;
}

/** Everything a stream runner needs; built once per run. */
export interface StreamContext {
  /** Id of the run (`_run_id` of every row it writes). */
  runId: string;
  /** When the run started (`{{ run.started_at }}` in manifests). */
  runStartedAt: Date;
  /** The stream's options from the config (`streams.<name>`). */
  options: Record<string, unknown>;
  /** Resolved seed lists by config key. */
  seeds: Record<string, unknown>;
  /** Where rows, ledgers and state go. */
  destination: Destination;
  /** The service. */
  client: ServiceClient;
  /** The run's credit budget, shared by every stream. */
  budget: Budget;
  /** What each call costs (worst and expected), for reservations and plans alike. */
  costs: CostModel;
  /** Progress events. */
  reporter: Reporter;
  /** Serialises load units: one transaction at a time per destination. */
  writeLock: Mutex;
  /** The run's row in `_seedline_runs`, saved with a load unit when it changed. Default: saved on its own. */
  runRow?: RunRowCarrier;
  /** Ignore freshness: fetch everything again. */
  fullRefresh: boolean;
  /** Calls in flight at once for request streams (`api.max_concurrency`). */
  concurrency: number;
  /**
   * Batch settings: items per job, result poll interval, jobs the account may run at once, the
   * `batch.completed` URL (default: none), and how often an item whose failure was billed is asked
   * again alone (`batch.retry_billed_failures`, default 1).
   */
  batch: {
    chunkSize: number;
    pollIntervalMs: number;
    concurrentJobs: number;
    webhookUrl?: string;
    retryBilledFailures?: number;
  };
  /** Now (injectable for tests). */
  now(): Date;
  /** Only read the results of batch jobs recorded by earlier runs: submit nothing, retry nothing. Default: false. */
  resumeOnly?: boolean;
  /** With `resumeOnly`, read only these jobs (those `batch.completed` named), never wait on other open jobs. Default: every submitted job. */
  resumeJobs?: readonly string[];
  /**
   * Sends a billed single call when one of the run's `api.max_billed_in_flight` places is free:
   * the bound on answers a crash can lose on the wire. Default: sends at once.
   */
  billedCalls?: <T>(send: () => Promise<T>) => Promise<T>;
  /** Aborted when the run should stop after the page under way (SIGTERM). Default: never. */
  stop?: AbortSignal;
  /**
   * Says the destination went away (see `isDestinationLost`): from then on no billed single call
   * is sent in this run, and the run stops, failed, after the stream under way. Default: none.
   */
  destinationLost?: (error: unknown) => void;
  /** Worker threads that read and shape batch results pages off the main thread. Default: none (the main thread does). */
  shapingPool?: PageShapingPool;
  /** Awaited after each of the stream's load units commits, under the write lock (`SyncIo.unitCommitted`). Default: none. */
  unitCommitted?: UnitCommitted;
  /**
   * Whether a partition key is this run's to work on (a worker's item is a shard of a stream's
   * partitions): open batches and journaled answers of other keys are left to their own items.
   * Default: every key.
   */
  owns?: (partitionKey: string) => boolean;
  /**
   * The API key this run calls with, when the fleet has several (`seedline worker`): jobs recorded
   * with another key are that key's to re-attach to (their seeds are not asked again meanwhile);
   * `primary`: jobs recorded without a key are this key's. Default: one key, every job is this run's.
   */
  apiKey?: { keyId: string; primary: boolean };
  /**
   * Holds one of the account's batch job slots, shared with other workers on the key, until the
   * returned release is called. Default: none (the account's slots are this run's alone).
   */
  jobSlot?: () => Promise<() => Promise<void>>;
}

/** The stream's load writer, calling the context's `unitCommitted` after each commit. */
export function streamWriter(ctx: StreamContext, stream: string): LoadWriter {
  return new LoadWriter(ctx.destination, ctx.runId, stream, ctx.writeLock, {
    runRow: ctx.runRow,
    committed: ctx.unitCommitted,
  });
}

/** A fresh outcome with zero counts. */
export function emptyOutcome(stream: string): StreamOutcome {
  return {
    stream,
    status: 'succeeded',
    records: 0,
    rows: 0,
    skipped: 0,
    failed: 0,
    rejected: 0,
    credits: 0,
    creditsAtRisk: 0,
    errors: [],
    estimatedCredits: 0,
    worstCaseCredits: 0,
  };
}

/** Adds what a call cost to an outcome. */
export function addCharge(outcome: StreamOutcome, charge: { billed: number; atRisk: number }): void {
  outcome.credits += charge.billed;
  outcome.creditsAtRisk += charge.atRisk;
}

/**
 * Adds a load's counts to an outcome. Records `schema_contract: freeze` refused make the stream
 * `partial` with the advice, so a frozen contract that bites is seen, not only counted.
 */
export function addLoad(
  outcome: StreamOutcome,
  load: { records: number; rows: number; rejected: number; repaired?: number; frozen?: number },
): void {
  outcome.records += load.records;
  outcome.rows += load.rows;
  outcome.rejected += load.rejected;
  if (load.repaired) outcome.repaired = (outcome.repaired ?? 0) + load.repaired;
  if (!load.frozen) return;
  if (outcome.status === 'succeeded') outcome.status = 'partial';
  const advice = `records refused by schema_contract freeze are kept in _seedline_rejected with the reason: loosen streams.${outcome.stream}.schema_contract, then seedline rejected retry loads them without calling the service`;
  if (!outcome.errors.includes(advice)) noteError(outcome, advice);
}

/** Notes that a stop request left work of the stream for the next run. */
export function noteStoppedOnRequest(outcome: StreamOutcome, error: Error): void {
  outcome.stoppedOnRequest = true;
  noteError(outcome, error.message);
}

/** Notes an error on an outcome (keeps the first few). */
export function noteError(outcome: StreamOutcome, message: string): void {
  if (outcome.errors.length < 5) outcome.errors.push(message);
}

/** The run as a table's added columns read it (`{{ run.id }}`). */
export function runScope(ctx: Pick<StreamContext, 'runId' | 'runStartedAt'>): RunScope {
  return { id: ctx.runId, started_at: ctx.runStartedAt.toISOString() };
}

import PQueue from 'p-queue';
import { runId as newRunId } from '../util/run-id.js';
import { isSeedList, type SeedlineConfig } from '../config/config-schema.js';
import { SeedList } from '../config/seed-list.js';
import type { Destination } from '../destinations/destination.js';
import {
  compileStreams,
  entriesSources,
  type CompiledStream,
  type ManifestsByName,
} from '../manifest/compile-stream.js';
import { Mutex } from '../util/mutex.js';
import { planBatchStream, runBatchStream } from './batch/batch-stream.js';
import { Budget, type Books, type BudgetLimits } from './books/budget.js';
import { budgetLimits } from './books/run-limits.js';
export { budgetLimits, creditsThisMonth } from './books/run-limits.js';
import { CostModel } from './books/cost-model.js';
import { isDestinationLost, StreamDefinitionError, UnknownStreamError } from './engine-errors.js';
import { runRequestStream } from './request/request-runner.js';
import { planRequestStream } from './request/request-stream-plan.js';
import { booksFields, RunRecorder } from './books/run-recorder.js';
import type { ServiceClient } from './service-calls.js';
import { LostDestination, streamMeasure } from './run-watch.js';
import { PageShapingPool } from './batch/page-shaping-pool.js';
import { inShard, shardStream, type Shard } from './fleet/shard.js';
import {
  emptyOutcome,
  noteError,
  type Reporter,
  type StreamContext,
  type StreamOutcome,
  type StreamPlan,
} from './stream-context.js';

/** What a sync or a plan works on; nothing here calls the service. */
export interface SyncOptions {
  /** The validated config. */
  config: SeedlineConfig;
  /** Folder that relative seed files resolve against. */
  baseDir: string;
  /** Stream manifests by name. */
  manifests: ManifestsByName;
  /** The destination, opened (and, for a sync, locked). */
  destination: Destination;
  /** Only these streams (default: every stream under `streams` in the config). */
  only?: readonly string[];
  /** Ignore freshness and incremental cursors. Default: false. */
  fullRefresh?: boolean;
  /** Clock, injectable for tests. Default: `() => new Date()`. */
  now?: () => Date;
  /** Only read the results of batch jobs recorded by earlier runs (after `batch.completed`); other streams are skipped. Default: false. */
  resumeOnly?: boolean;
  /** With `resumeOnly`, read only these batch jobs (the ones `batch.completed` named). Default: every submitted job. */
  resumeJobs?: readonly string[];
  /** Group of `schedule:` this run belongs to, recorded in `_seedline_runs.schedule_group`. Default: none (a run by hand). */
  scheduleGroup?: string;
  /** Only the partitions of this shard of each stream (a worker's item, see `shardStream`). Default: every partition. */
  shard?: Shard;
}

/** A sync made ready without any call: the streams in order and the resolved seeds. */
export interface PreparedSync {
  /** The options it was prepared from. */
  options: SyncOptions;
  /** Streams to run, dependencies first, compiled with their options. */
  streams: CompiledStream[];
  /** Seed lists by config key: a `SeedList` each (read in chunks), `headcount` an inline array. */
  seeds: Record<string, unknown>;
}

/** What running a prepared sync needs beyond it: the service and where progress goes. */
export interface SyncIo {
  /** The connected client. */
  client: ServiceClient;
  /** Progress events. */
  reporter: Reporter;
  /** Batch jobs the account may run at once. Default: 1. */
  concurrentBatchJobs?: number;
  /** `credits_remaining` of GET /v1/account at the start, for `budget.keep_balance`. Default: unknown (no floor applied). */
  balance?: number;
  /** What calls cost. Default: the built-in spec table. */
  costs?: CostModel;
  /** Aborted to stop after the page under way commits (SIGTERM); the run is recorded `stopped`. Default: never. */
  stop?: AbortSignal;
  /** Id to record the run under, for a caller that reads the run's rows while it goes (`airbyte read`). Default: a new one. */
  runId?: string;
  /**
   * The run's credit limits as the caller worked them out (a worker: the credits its item was
   * granted from the round's). Other runs' rows are then left as they are (a worker's peers are
   * running). Default: from the config and `balance` (`budgetLimits`), and runs left `running` by a
   * killed process are marked `interrupted`.
   */
  limits?: BudgetLimits;
  /** Holds one of the account's batch job slots shared with other workers (`StreamContext.jobSlot`). Default: none. */
  jobSlot?: () => Promise<() => Promise<void>>;
  /** The key `client` calls with when the fleet has several (`StreamContext.apiKey`). Default: one key. */
  apiKey?: { keyId: string; primary: boolean };
  /** Awaited after each stream ends, its tables settled and its outcome recorded, before the next starts (`airbyte read` emits it). Default: none. */
  afterStream?: (outcome: StreamOutcome) => Promise<void>;
  /**
   * Awaited after each load unit of a stream commits, under the run's write lock, before the
   * stream goes on (`airbyte read` emits a checkpoint; `paid`: the unit journaled a paid answer).
   * Default: none.
   */
  unitCommitted?: (stream: string, paid: boolean) => Promise<void>;
}

/** What a run did. */
export interface RunResult {
  /** Id of the run in `_seedline_runs`. */
  runId: string;
  /** `succeeded`, `partial` (some seeds or partitions failed, or the budget stopped a stream), `failed`, or `stopped` (on request). */
  status: 'succeeded' | 'partial' | 'failed' | 'stopped';
  /** One outcome per stream, in the order they ran. */
  streams: StreamOutcome[];
  /** Credits the service said it billed, as this run read them (`books.billed`). */
  credits: number;
  /** The run's books: billed, at risk, and what earlier runs' jobs contributed. */
  books: Books;
  /** How far `credits_remaining` fell over the run (GET /v1/account at start and end); null when either read is missing. */
  balanceChange: number | null;
  /** Expected credits of the work the run selected (sum over streams), to reconcile with `credits`. */
  estimatedCredits: number;
  /** The credit limits the run worked under. */
  limits: BudgetLimits;
}

type OfKind<K extends CompiledStream['kind']> = Extract<CompiledStream, { kind: K }>;

const runners = {
  batch: (stream, ctx, outcome) => runBatchStream(stream as OfKind<'batch'>, ctx, outcome),
  request: (stream, ctx, outcome) => runRequestStream(stream as OfKind<'request'>, ctx, outcome),
} satisfies Record<
  CompiledStream['kind'],
  (stream: CompiledStream, ctx: StreamContext, outcome: StreamOutcome) => Promise<StreamOutcome>
>;

const planners = {
  batch: (stream, ctx, upstream) => planBatchStream(stream as OfKind<'batch'>, ctx, upstream),
  request: (stream, ctx, upstream) => planRequestStream(stream as OfKind<'request'>, ctx, upstream),
} satisfies Record<
  CompiledStream['kind'],
  (stream: CompiledStream, ctx: StreamContext, upstream: readonly StreamPlan[]) => Promise<StreamPlan>
>;

const silentReporter: Reporter = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };
const noCalls = new Proxy({} as ServiceClient, {
  get: (_target, name) => () => Promise.reject(new StreamDefinitionError(`a plan makes no calls (${String(name)})`)),
});

/**
 * Selects the streams and resolves every seed source, so a bad `--streams` or an unreadable seed
 * file fails before the service is called.
 */
export async function prepareSync(options: SyncOptions): Promise<PreparedSync> {
  const { shard } = options;
  const streams = selectStreams(options).map((stream) => (shard ? shardStream(stream, shard) : stream));
  return { options, streams, seeds: await resolveAllSeeds(options, streams) };
}

/**
 * One sync run: extract and load each stream in dependency order, recording the run in
 * `_seedline_runs` (a run that throws is recorded `failed`; runs left `running` by a killed
 * process are marked `interrupted`). The caller has locked the destination.
 */
export async function runSync(prepared: PreparedSync, io: SyncIo): Promise<RunResult> {
  const { destination } = prepared.options;
  const runId = io.runId ?? newRunId('run');
  const startedAt = new Date();
  const scheduleGroup = prepared.options.scheduleGroup ?? null;
  if (!io.limits) await markInterruptedRuns(destination);
  const limits = io.limits ?? (await budgetLimits(prepared.options, io.balance));
  const writeLock = new Mutex();
  const record = new RunRecorder(destination, writeLock, { runId, startedAt, status: 'running', scheduleGroup });
  await record.save({});
  const budget = new Budget(limits, (books) => record.committed(books));
  const workers = prepared.options.config.batch.shaping_workers;
  const shapingPool =
    workers > 0
      ? new PageShapingPool(workers, (scope, reason) =>
          io.reporter.notice(scope, `results pages are shaped on the main thread from now on: ${reason}`),
        )
      : undefined;
  const lost = new LostDestination();
  const contextOf = contextFactory(prepared, io, runId, startedAt, budget, writeLock, shapingPool, lost);
  const contextFor = (stream: string): StreamContext => ({ ...contextOf(stream), runRow: record });
  const outcomes: StreamOutcome[] = [];
  try {
    for (const stream of prepared.streams) {
      if (io.stop?.aborted) break;
      // The outcome is shared with the runner, so a stream that throws still reports what it spent.
      const outcome = emptyOutcome(stream.name);
      const measure = streamMeasure(io.client, outcome);
      if (prepared.options.resumeOnly && stream.kind !== 'batch') outcome.status = 'skipped';
      else
        await runners[stream.kind](stream, contextFor(stream.name), outcome).catch((error: Error) => {
          outcome.status = 'failed';
          noteError(outcome, error.message);
          if (isDestinationLost(error)) lost.note(error);
        });
      // The destination went away: the next stream would buy answers it cannot save. The run stops, failed.
      if (lost.error) {
        measure.end();
        io.reporter.streamFinished(outcome);
        outcomes.push(outcome);
        throw lost.error;
      }
      // Before the next stream reads the tables (a child stream reads its parent's): see Destination.settle. Unsettled,
      // they could hold a key's earlier rows beside its new ones: the run stops (what it loaded is kept).
      const settled = await writeLock
        .run(() => destination.settle())
        .then(
          () => null,
          (error: Error) => {
            outcome.status = 'failed';
            noteError(outcome, error.message);
            return error;
          },
        );
      measure.end();
      io.reporter.streamFinished(outcome);
      outcomes.push(outcome);
      await record.save({ streams: JSON.stringify(outcomes) });
      if (settled) throw settled;
      await io.afterStream?.(outcome);
    }
  } catch (error) {
    await record.save({
      finishedAt: new Date(),
      status: 'failed',
      streams: JSON.stringify(outcomes),
      ...booksFields(budget.books),
      error: (error as Error).message,
    });
    throw error;
  } finally {
    await shapingPool?.close();
  }
  const books = budget.books;
  const result: RunResult = {
    runId,
    status: runStatus(outcomes, prepared.streams.length),
    streams: outcomes,
    credits: books.billed,
    books,
    balanceChange: await balanceChange(io),
    estimatedCredits: outcomes.reduce((n, o) => n + o.estimatedCredits, 0),
    limits,
  };
  await record.save({
    finishedAt: new Date(),
    status: result.status,
    streams: JSON.stringify(outcomes),
    creditsEstimated: result.estimatedCredits,
    ...booksFields(books),
    balanceChange: result.balanceChange,
    stopReason: outcomes.some((o) => o.stopped) ? 'budget_exhausted' : null,
    error: outcomes.flatMap((o) => o.errors.map((e) => `${o.stream}: ${e}`)).join('\n') || null,
  });
  return result;
}

/** What a run would do now, per stream, with its worst-case and expected credits: no call is made. */
export async function planSync(prepared: PreparedSync, costs: CostModel = CostModel.builtIn()): Promise<StreamPlan[]> {
  const contextFor = contextFactory(
    prepared,
    { client: noCalls, reporter: silentReporter, costs },
    'plan',
    new Date(),
    new Budget(undefined),
  );
  const plans: StreamPlan[] = [];
  for (const stream of prepared.streams)
    plans.push(await planners[stream.kind](stream, contextFor(stream.name), plans));
  return plans;
}

/** The streams to run: configured ones (optionally narrowed by `only`), dependencies first, compiled with their options. */
export function selectStreams(options: Pick<SyncOptions, 'config' | 'manifests' | 'only'>): CompiledStream[] {
  const configured = Object.keys(options.config.streams).filter(
    (name) => options.config.streams[name as keyof typeof options.config.streams] !== undefined,
  );
  for (const name of options.only ?? []) {
    if (!options.manifests.has(name))
      throw new UnknownStreamError(
        `--streams: unknown stream "${name}" (known: ${[...options.manifests.keys()].join(', ')})`,
      );
    if (!configured.includes(name))
      throw new UnknownStreamError(`--streams: stream "${name}" is not configured under streams: in the config`);
  }
  const wanted = new Set(options.only?.length ? options.only : configured);
  const compiled = compileStreams(options.manifests, options.config.streams as Record<string, Record<string, unknown>>);
  const ordered: CompiledStream[] = [];
  const visit = (name: string, path: string[]) => {
    if (path.includes(name))
      throw new StreamDefinitionError(`streams depend on each other in a cycle: ${[...path, name].join(' → ')}`);
    const stream = compiled.get(name);
    if (!stream || ordered.includes(stream)) return;
    stream.dependsOn.filter((d) => wanted.has(d)).forEach((d) => visit(d, [...path, name]));
    ordered.push(stream);
  };
  [...wanted].forEach((name) => visit(name, []));
  return ordered;
}

/** The fall of `credits_remaining` since the run started (GET /v1/account is free); null when unknown. */
async function balanceChange(io: SyncIo): Promise<number | null> {
  if (io.balance === undefined) return null;
  try {
    const account = (await io.client.getAccount()).data as { credits_remaining?: unknown };
    return typeof account.credits_remaining === 'number' ? io.balance - account.credits_remaining : null;
  } catch {
    return null;
  }
}

function contextFactory(
  prepared: PreparedSync,
  io: SyncIo,
  runId: string,
  runStartedAt: Date,
  budget: Budget,
  writeLock = new Mutex(),
  shapingPool?: PageShapingPool,
  lost = new LostDestination(),
): (stream: string) => StreamContext {
  const { config, shard } = prepared.options;
  const costs = io.costs ?? CostModel.builtIn();
  const billed = new PQueue({ concurrency: billedInFlight(config) });
  // Once the destination is gone, a billed call's answer could not be saved: none is sent. The loss is
  // noted before the place is freed, so the call waiting for it never goes out.
  const billedCalls = <T>(send: () => Promise<T>) =>
    billed.add(async () => {
      if (lost.error) throw lost.error;
      try {
        return await send();
      } catch (error) {
        if (isDestinationLost(error)) lost.note(error);
        throw error;
      }
    });
  return (stream) => ({
    runId,
    runStartedAt,
    options: streamOptions(config, stream),
    seeds: prepared.seeds,
    destination: prepared.options.destination,
    client: io.client,
    budget,
    costs,
    reporter: io.reporter,
    writeLock,
    fullRefresh: prepared.options.fullRefresh ?? false,
    concurrency: config.api.max_concurrency,
    billedCalls,
    batch: {
      chunkSize: config.batch.chunk_size,
      pollIntervalMs: config.batch.poll_interval_ms,
      concurrentJobs: io.concurrentBatchJobs ?? 1,
      retryBilledFailures: config.batch.retry_billed_failures,
      ...(config.batch.webhook_url ? { webhookUrl: config.batch.webhook_url } : {}),
    },
    now: prepared.options.now ?? (() => new Date()),
    resumeOnly: prepared.options.resumeOnly ?? false,
    ...(prepared.options.resumeJobs ? { resumeJobs: prepared.options.resumeJobs } : {}),
    ...(io.stop ? { stop: io.stop } : {}),
    ...(shapingPool ? { shapingPool } : {}),
    destinationLost: (error) => lost.note(error),
    ...(io.unitCommitted ? { unitCommitted: (paid: boolean) => io.unitCommitted!(stream, paid) } : {}),
    ...(shard ? { owns: (key: string) => inShard(key, shard) } : {}),
    ...(io.jobSlot ? { jobSlot: io.jobSlot } : {}),
    ...(io.apiKey ? { apiKey: io.apiKey } : {}),
  });
}

/** A stream's options as configured (`streams.<name>`, defaults applied); none when it is not configured. */
function streamOptions(config: SeedlineConfig, stream: string): Record<string, unknown> {
  return (config.streams[stream as keyof typeof config.streams] ?? {}) as Record<string, unknown>;
}

/** Billed single calls on the wire at once (`api.max_billed_in_flight`, default `max_concurrency`). */
export function billedInFlight(config: SyncOptions['config']): number {
  return config.api.max_billed_in_flight ?? config.api.max_concurrency;
}

/**
 * The seed sources the selected streams read, opened: a seed list is read in chunks (a file, a
 * query), entries the config writes out are taken as they are. A source only unselected streams
 * read is not opened, so `--streams profiles` runs while a companies query names a table that
 * profiles will load.
 */
async function resolveAllSeeds(
  options: SyncOptions,
  streams: readonly CompiledStream[],
): Promise<Record<string, unknown>> {
  const { seeds } = options.config;
  const query = (sql: string, size: number) => options.destination.readQueryChunks(sql, size);
  const resolved: Record<string, unknown> = {};
  const entries = entriesSources(options.manifests);
  const read = new Set(streams.flatMap((stream) => stream.partitions.seedsRead(seeds)));
  for (const [name, source] of Object.entries(seeds))
    if (source !== undefined && (read.has(name) || entries.has(name) || !isSeedList(source)))
      resolved[name] =
        entries.has(name) || !isSeedList(source)
          ? source
          : await SeedList.open(`seeds.${name}`, source, options.baseDir, query);
  return resolved;
}

async function markInterruptedRuns(destination: Destination): Promise<void> {
  // Every run still `running`, however many runs came since (a killed run must not stay running).
  for (const run of await destination.readRuns(100_000, 'running')) {
    await destination.saveRun({
      ...run,
      status: 'interrupted',
      error: run.error ?? 'the process ended before the run finished; the next run resumed its work',
    });
  }
}

/** `failed` first; then `stopped` when a stop request left work (a stream cut short, or streams not started); else from the streams. */
function runStatus(outcomes: readonly StreamOutcome[], streams: number): RunResult['status'] {
  const overall = overallStatus(outcomes);
  if (overall === 'failed') return overall;
  return outcomes.length < streams || outcomes.some((o) => o.stoppedOnRequest) ? 'stopped' : overall;
}

function overallStatus(outcomes: readonly StreamOutcome[]): RunResult['status'] {
  if (outcomes.some((o) => o.status === 'failed')) return 'failed';
  return outcomes.some((o) => o.status === 'partial') ? 'partial' : 'succeeded';
}

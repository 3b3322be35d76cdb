import { randomUUID } from 'node:crypto';
import type { SeedlineConfig } from '../config/config-schema.js';
import { resolveSeeds } from '../config/resolve-seeds.js';
import type { Destination } from '../destinations/destination.js';
import type { StreamManifest } from '../manifest/manifest-schema.js';
import { Mutex } from '../util/mutex.js';
import { planBatchStream, runBatchStream } from './batch-runner.js';
import { Budget } from './budget.js';
import { StreamDefinitionError } from './engine-errors.js';
import { planRequestStream, runRequestStream } from './request-runner.js';
import type { ServiceClient } from './service-calls.js';
import { emptyOutcome, noteError, type Reporter, type StreamContext, type StreamOutcome, type StreamPlan } from './stream-context.js';

/** Inputs of a sync run. */
export interface SyncOptions {
  config: SeedlineConfig;
  /** Folder that relative seed files resolve against. */
  baseDir: string;
  manifests: ReadonlyMap<string, StreamManifest>;
  destination: Destination;
  client: ServiceClient;
  reporter: Reporter;
  /** Only these streams (default: every stream under `streams` in the config). */
  only?: readonly string[];
  /** Ignore freshness and incremental cursors. Default: false. */
  fullRefresh?: boolean;
  /** Concurrent batch jobs allowed by the account. Default: 1. */
  concurrentBatchJobs?: number;
  /** Clock, injectable for tests. Default: `() => new Date()`. */
  now?: () => Date;
}

/** What a run did. */
export interface RunResult {
  runId: string;
  /** `succeeded`, `partial` (some seeds or partitions failed, or the budget stopped a stream) or `failed`. */
  status: 'succeeded' | 'partial' | 'failed';
  streams: StreamOutcome[];
  credits: number;
}

const runners = {
  batch: (manifest, ctx) => runBatchStream(manifest as Extract<StreamManifest, { type: 'batch' }>, ctx),
  request: (manifest, ctx) => runRequestStream(manifest as Extract<StreamManifest, { type: 'request' }>, ctx),
} satisfies Record<StreamManifest['type'], (m: StreamManifest, ctx: StreamContext) => Promise<StreamOutcome>>;

const planners = {
  batch: (manifest, ctx) => planBatchStream(manifest as Extract<StreamManifest, { type: 'batch' }>, ctx),
  request: (manifest, ctx) => planRequestStream(manifest as Extract<StreamManifest, { type: 'request' }>, ctx),
} satisfies Record<StreamManifest['type'], (m: StreamManifest, ctx: StreamContext) => Promise<StreamPlan>>;

/**
 * One sync run: resolve seeds, then extract and load each selected stream in dependency order,
 * recording the run in `_seedline_runs`. The caller has opened and locked the destination.
 */
export async function runSync(options: SyncOptions): Promise<RunResult> {
  const runId = `run_${new Date().toISOString().replace(/[-:.TZ]/g, '').slice(0, 14)}_${randomUUID().slice(0, 8)}`;
  const startedAt = new Date();
  const streams = selectStreams(options);
  await options.destination.saveRun({ runId, startedAt, status: 'running' });
  const contextFor = await contextFactory(options, runId, startedAt);
  const outcomes: StreamOutcome[] = [];
  for (const manifest of streams) {
    const ctx = contextFor(manifest.name);
    let outcome: StreamOutcome;
    try {
      outcome = await runners[manifest.type](manifest, ctx);
    } catch (error) {
      outcome = { ...emptyOutcome(manifest.name), status: 'failed' };
      noteError(outcome, (error as Error).message);
    }
    options.reporter.streamFinished(outcome);
    outcomes.push(outcome);
  }
  const result: RunResult = { runId, status: overallStatus(outcomes), streams: outcomes, credits: outcomes.reduce((n, o) => n + o.credits, 0) };
  await options.destination.saveRun({
    runId,
    startedAt,
    finishedAt: new Date(),
    status: result.status,
    streams: JSON.stringify(outcomes),
    creditsUsed: result.credits,
    error: outcomes.flatMap((o) => o.errors.map((e) => `${o.stream}: ${e}`)).join('\n') || null,
  });
  return result;
}

/** Inputs of a plan: those of a sync, without a client (a plan makes no call). */
export type PlanOptions = Omit<SyncOptions, 'client' | 'reporter'>;

const silentReporter: Reporter = { streamStarted() {}, streamProgress() {}, streamFinished() {}, notice() {} };
const noCalls = new Proxy({} as ServiceClient, {
  get: (_target, name) => () => Promise.reject(new Error(`a plan makes no calls (${String(name)})`)),
});

/** What a run would do now, per stream, with its worst-case credits: no call is made. */
export async function planSync(options: PlanOptions): Promise<StreamPlan[]> {
  const contextFor = await contextFactory({ ...options, client: noCalls, reporter: silentReporter }, 'plan', new Date());
  const plans: StreamPlan[] = [];
  for (const manifest of selectStreams(options)) plans.push(await planners[manifest.type](manifest, contextFor(manifest.name)));
  return plans;
}

/** The streams to run: configured ones (optionally narrowed by `only`), dependencies first. */
export function selectStreams(options: Pick<SyncOptions, 'config' | 'manifests' | 'only'>): StreamManifest[] {
  const configured = Object.keys(options.config.streams).filter((name) => options.config.streams[name as keyof typeof options.config.streams] !== undefined);
  for (const name of options.only ?? []) {
    if (!options.manifests.has(name)) throw new StreamDefinitionError(`--streams: unknown stream "${name}" (known: ${[...options.manifests.keys()].join(', ')})`);
    if (!configured.includes(name)) throw new StreamDefinitionError(`--streams: stream "${name}" is not configured under streams: in the config`);
  }
  const wanted = new Set(options.only?.length ? options.only : configured);
  const ordered: StreamManifest[] = [];
  const visit = (name: string, path: string[]) => {
    if (path.includes(name)) throw new StreamDefinitionError(`streams depend on each other in a cycle: ${[...path, name].join(' → ')}`);
    const manifest = options.manifests.get(name);
    if (!manifest || ordered.includes(manifest)) return;
    manifest.depends_on.filter((d) => wanted.has(d)).forEach((d) => visit(d, [...path, name]));
    ordered.push(manifest);
  };
  [...wanted].forEach((name) => visit(name, []));
  return ordered;
}

async function contextFactory(options: SyncOptions, runId: string, runStartedAt: Date): Promise<(stream: string) => StreamContext> {
  const { config } = options;
  const seeds = await resolveAllSeeds(options);
  const budget = new Budget(config.budget.max_credits_per_run);
  const writeLock = new Mutex();
  return (stream) => ({
    runId,
    runStartedAt,
    options: (config.streams[stream as keyof typeof config.streams] ?? {}) as Record<string, unknown>,
    seeds,
    destination: options.destination,
    client: options.client,
    budget,
    reporter: options.reporter,
    writeLock,
    fullRefresh: options.fullRefresh ?? false,
    concurrency: config.api.max_concurrency,
    batch: { chunkSize: config.batch.chunk_size, pollIntervalMs: config.batch.poll_interval_ms, concurrentJobs: options.concurrentBatchJobs ?? 1 },
    now: options.now ?? (() => new Date()),
  });
}

async function resolveAllSeeds(options: SyncOptions): Promise<Record<string, unknown>> {
  const { seeds } = options.config;
  const query = (sql: string) => options.destination.query(sql);
  const resolved: Record<string, unknown> = { headcount: seeds.headcount ?? [] };
  for (const key of ['profiles', 'companies', 'posts'] as const) {
    const source = seeds[key];
    resolved[key] = source ? await resolveSeeds(`seeds.${key}`, source, options.baseDir, query) : [];
  }
  return resolved;
}

function overallStatus(outcomes: readonly StreamOutcome[]): RunResult['status'] {
  if (outcomes.some((o) => o.status === 'failed')) return 'failed';
  return outcomes.some((o) => o.status === 'partial') ? 'partial' : 'succeeded';
}

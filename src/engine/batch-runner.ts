import PQueue from 'p-queue';
import type { BatchResultEntry } from '../../schemas/batch.js';
import type { BatchRow, SeedRow } from '../destinations/destination.js';
import type { BatchStreamNode } from '../manifest/manifest-schema.js';
import { renderTemplate } from '../manifest/template.js';
import { sleep } from '../util/sleep.js';
import { sha256, stableJson } from '../util/stable-json.js';
import { crashPoint } from './crash-point.js';
import { BudgetExhaustedError } from './engine-errors.js';
import { LoadWriter } from './load-writer.js';
import { partitionContext } from './partition-context.js';
import { resolvePartitions, type Partition } from './partitions.js';
import { refreshAfterMs } from './request-runner.js';
import { addLoad, emptyOutcome, noteError, type StreamContext, type StreamOutcome, type StreamPlan } from './stream-context.js';
import { TableShaper, type ShapedRecords } from './table-shaper.js';

/** Bump when the shape of submitted bodies changes, so old idempotency keys are never reused for new bodies. */
const KEY_VERSION = 'v1';
/** Error types after which a seed is not retried until its refresh_after passes (it was paid for). */
const PERMANENT_FAILURES = new Set(['unprocessable_target', 'not_found', 'invalid_request']);
/** Error types of items worth another attempt in the same run. */
const TRANSIENT_FAILURES = new Set(['upstream_timeout', 'internal_error', 'upstream_error', 'rate_limited']);
/** Result entries per read of `GET /v1/batch/{id}/results` (the service's maximum). */
const RESULTS_PAGE_SIZE = 500;
/** Extra rounds for items that failed for a passing reason. */
const TRANSIENT_RETRY_ROUNDS = 2;

type BatchItemBody = { operation: string; params: Record<string, unknown>; ref: string };

/**
 * Runs a batch stream: chunks stale seeds into jobs of at most `chunkSize` items; records each
 * intent (key, body hash, body) before the POST and the job id after it; reads results page by
 * page, each page committed with the seed ledger and the results cursor. A restarted run
 * re-attaches to recorded jobs and resubmits unanswered intents with the same Idempotency-Key.
 */
export async function runBatchStream(manifest: BatchStreamNode, ctx: StreamContext): Promise<StreamOutcome> {
  const outcome = emptyOutcome(manifest.name);
  const runner = new BatchRunner(manifest, ctx, outcome);
  const open = (await ctx.destination.readBatches(manifest.name)).filter((b) => b.status === 'intent' || b.status === 'submitted');
  const todo = await runner.seedsToFetch(open);
  const affordable = todo.slice(0, ctx.budget.itemsThatFit(manifest.credits_per_item));
  if (affordable.length < todo.length) {
    const message = `budget: ${todo.length - affordable.length} seeds left for a later run (budget.max_credits_per_run)`;
    outcome.status = 'partial';
    noteError(outcome, message);
    ctx.reporter.notice(manifest.name, message);
  }
  // Submission is free, so spread the seeds over every job slot the account allows: five jobs of
  // 200 resolve about five times sooner than one job of 1,000.
  const chunks = chunk(affordable, Math.min(ctx.batch.chunkSize, Math.max(1, Math.ceil(affordable.length / Math.max(1, ctx.batch.concurrentJobs)))));
  ctx.reporter.streamStarted(manifest.name, affordable.length + open.reduce((n, b) => n + b.itemCount, 0));

  const queue = new PQueue({ concurrency: Math.max(1, ctx.batch.concurrentJobs) });
  const enqueue = (job: () => Promise<void>) =>
    void queue.add(async () => {
      try {
        await job();
      } catch (error) {
        runner.fail(error as Error);
      }
    });
  for (const batch of open) enqueue(() => runner.resume(batch));
  for (const seeds of chunks) enqueue(() => runner.submitAndRead(seeds));
  await queue.onIdle();
  // Jobs the service no longer knows (expired, or an embedded sandbox that restarted) lost their
  // results: their seeds are fetched again, within the budget.
  const resubmit = (seeds: Partition[]) => {
    for (const part of chunk(seeds.slice(0, ctx.budget.itemsThatFit(manifest.credits_per_item)), ctx.batch.chunkSize)) {
      enqueue(() => runner.submitAndRead(part));
    }
  };
  resubmit(await runner.orphanedSeeds());
  await queue.onIdle();
  // Items that failed for a passing reason (timeout, upstream error) get a bounded number of new
  // attempts in this run; a failed attempt is not the thing paid for, so this is not paying twice.
  for (let round = 0; round < TRANSIENT_RETRY_ROUNDS; round++) {
    const retry = runner.takeTransientFailures();
    if (retry.length === 0) break;
    ctx.reporter.notice(manifest.name, `retrying ${retry.length} items that failed for a passing reason`);
    resubmit(retry);
    await queue.onIdle();
  }
  const stillFailing = runner.takeTransientFailures();
  outcome.failed += stillFailing.length;
  if (stillFailing.length > 0) noteError(outcome, `${stillFailing.length} items still failing after retries; they are retried on the next run`);
  if (outcome.failed > 0 && outcome.status === 'succeeded') outcome.status = 'partial';
  return outcome;
}

/** What a batch stream would do now, without calling the service: seeds to fetch and their worst-case credits. */
export async function planBatchStream(manifest: BatchStreamNode, ctx: StreamContext): Promise<StreamPlan> {
  const runner = new BatchRunner(manifest, ctx, emptyOutcome(manifest.name));
  const open = (await ctx.destination.readBatches(manifest.name)).filter((b) => b.status === 'intent' || b.status === 'submitted');
  const todo = await runner.seedsToFetch(open);
  const resumed = open.reduce((n, b) => n + b.itemCount, 0);
  return { stream: manifest.name, units: todo.length, resumed, skipped: runner.skipped, estimatedCredits: todo.length * manifest.credits_per_item };
}

class BatchRunner {
  private readonly shaper: TableShaper;
  private readonly writer: LoadWriter;
  private ledger = new Map<string, SeedRow>();
  /** Seeds skipped as fresh by the last `seedsToFetch`. */
  skipped = 0;
  /** Recorded jobs the service answered 404 for. */
  private readonly lost: BatchRow[] = [];
  /** Items of this run that failed for a passing reason, not yet retried. */
  private transient: Partition[] = [];
  private done = 0;

  constructor(
    private readonly manifest: BatchStreamNode,
    private readonly ctx: StreamContext,
    private readonly outcome: StreamOutcome,
  ) {
    this.shaper = new TableShaper(manifest.table, { options: ctx.options, run: { id: ctx.runId, started_at: ctx.runStartedAt.toISOString() } });
    this.writer = new LoadWriter(ctx.destination, ctx.runId, manifest.name);
  }

  /** The seeds needing a fetch: not fresh, not failed for good recently, not in a recorded job. */
  async seedsToFetch(open: readonly BatchRow[]): Promise<Partition[]> {
    const partitions = await resolvePartitions(this.manifest.partitions, partitionContext(this.ctx));
    this.ledger = await this.ctx.destination.readSeeds(this.manifest.name);
    const inFlight = new Set(open.flatMap((batch) => itemsOf(batch).map((item) => item.ref)));
    const refreshMs = refreshAfterMs(this.manifest.refresh_after, this.ctx.options);
    const now = this.ctx.now().getTime();
    const todo = partitions.filter((p) => !inFlight.has(p.key) && (this.ctx.fullRefresh || !this.isFresh(this.ledger.get(p.key), refreshMs, now)));
    this.outcome.skipped = partitions.length - todo.length - partitions.filter((p) => inFlight.has(p.key)).length;
    this.skipped = this.outcome.skipped;
    return todo;
  }

  /** Seeds of lost jobs whose results were never loaded, as partitions to submit again. */
  async orphanedSeeds(): Promise<Partition[]> {
    const ledger = await this.ctx.destination.readSeeds(this.manifest.name);
    return this.lost.flatMap((batch) =>
      itemsOf(batch)
        .filter((item) => ledger.get(item.ref)?.jobId === batch.jobId && ledger.get(item.ref)?.status === 'submitted')
        .map((item) => ({ key: item.ref, values: { ...item.params, key: item.ref, seed: seedOf(item) } })),
    );
  }

  /** Hands over the items that failed for a passing reason since the last call (and forgets them). */
  takeTransientFailures(): Partition[] {
    const taken = this.transient;
    this.transient = [];
    return taken;
  }

  /** Records the intent, submits it and reads its results. */
  async submitAndRead(seeds: Partition[]): Promise<void> {
    const batch = this.intentFor(seeds);
    await this.commit([], {
      batches: [batch],
      seeds: seeds.map((p) => this.seedRow(p.key, String(p.values.seed), { status: 'pending', jobId: null })),
    });
    crashPoint('after-intent');
    await this.resume(batch);
  }

  /**
   * Continues a recorded batch: submits an unanswered intent (same key), then reads results from
   * its cursor. A new submission holds a worst-case reservation of the budget until its items
   * have resolved; a job re-attached from an earlier run was reserved by that run.
   */
  async resume(batch: BatchRow): Promise<void> {
    const needsSubmit = !(batch.status === 'submitted' && batch.jobId);
    const reservation = needsSubmit ? this.ctx.budget.reserve(batch.itemCount * this.manifest.credits_per_item) : undefined;
    const spent = { credits: 0 };
    try {
      const submitted = needsSubmit ? await this.submit(batch) : batch;
      await this.readResults(submitted, spent);
    } catch (error) {
      if ((error as { type?: string }).type !== 'not_found' || needsSubmit) throw error;
      await this.commit([], { batches: [{ ...batch, status: 'failed' }] });
      this.lost.push(batch);
      this.ctx.reporter.notice(this.manifest.name, `batch job ${batch.jobId} no longer exists at the service: its unread seeds will be fetched again`);
    } finally {
      if (reservation) reservation.settle(spent.credits);
      else this.ctx.budget.record(spent.credits);
    }
  }

  /** Notes a failure of a whole chunk (budget, 402, network after retries): its seeds stay for a later run. */
  fail(error: Error): void {
    if (error instanceof BudgetExhaustedError || (error as { type?: string }).type === 'insufficient_credits') this.outcome.status = 'partial';
    else this.outcome.status = this.outcome.records > 0 ? 'partial' : 'failed';
    noteError(this.outcome, error.message);
    this.ctx.reporter.notice(this.manifest.name, error.message);
  }

  private async submit(batch: BatchRow): Promise<BatchRow> {
    const body = JSON.parse(batch.body) as { items: BatchItemBody[] };
    let job;
    try {
      job = await this.ctx.client.submitBatch(body, { idempotencyKey: batch.idempotencyKey });
      crashPoint('after-submit');
    } catch (error) {
      // 402 creates nothing: retire the intent so its seeds are chunked afresh next run.
      if ((error as { type?: string }).type === 'insufficient_credits') await this.commit([], { batches: [{ ...batch, status: 'failed' }] });
      throw error;
    }
    const submitted: BatchRow = { ...batch, status: 'submitted', jobId: job.data.job_id };
    await this.commit([], {
      batches: [submitted],
      seeds: body.items.map((item) => this.seedRow(item.ref, seedOf(item), { status: 'submitted', jobId: job.data.job_id })),
    });
    return submitted;
  }

  private async readResults(batch: BatchRow, spent: { credits: number }): Promise<void> {
    const items = new Map(itemsOf(batch).map((item) => [item.ref, item]));
    let cursor = batch.resultsCursor ?? undefined;
    let idle = 0;
    for (;;) {
      const page = await this.ctx.client.getBatchResults(batch.jobId!, { cursor, limit: RESULTS_PAGE_SIZE });
      const next = page.meta.nextCursor ?? null;
      const completed = next === null;
      if (page.data.length > 0 || completed) await this.loadResults(batch, items, page.data, next, completed, spent);
      if (completed) return;
      cursor = next;
      // Result reads count against the rate limit: read again at once only when a full page came
      // back; otherwise wait, longer while nothing resolves.
      if (page.data.length < RESULTS_PAGE_SIZE) await sleep(Math.min(this.ctx.batch.pollIntervalMs * 2 ** (page.data.length > 0 ? 0 : idle++), 5_000));
      if (page.data.length > 0) idle = 0;
    }
  }

  private async loadResults(
    batch: BatchRow,
    items: Map<string, BatchItemBody>,
    entries: BatchResultEntry[],
    cursor: string | null,
    completed: boolean,
    spent: { credits: number },
  ): Promise<void> {
    const groups: ShapedRecords[] = [];
    const seeds: SeedRow[] = [];
    const fetchedAt = this.ctx.now();
    for (const entry of entries) {
      const item = items.get(entry.ref);
      const values = { ...(item?.params ?? {}), key: entry.ref, seed: item ? seedOf(item) : entry.ref };
      this.outcome.credits += entry.credits_used;
      spent.credits += entry.credits_used;
      const base = { jobId: batch.jobId, credits: entry.credits_used, fetchedAt };
      if (entry.status === 'succeeded') {
        const shaped = this.shaper.shape(values, [entry.data]);
        groups.push(shaped);
        const canonical = (entry.data as { url?: string } | undefined)?.url ?? null;
        const rejected = shaped.rejected[0]?.reason;
        seeds.push(this.seedRow(entry.ref, String(values.seed), { ...base, status: 'fetched', canonicalUrl: canonical, error: rejected ? `record rejected: ${rejected}` : null }));
      } else {
        const error = `${entry.error?.type ?? 'failed'}: ${entry.error?.message ?? 'no message'}`;
        if (TRANSIENT_FAILURES.has(entry.error?.type ?? '')) this.transient.push({ key: entry.ref, values });
        else {
          this.outcome.failed++;
          noteError(this.outcome, `${String(values.seed)}: ${error}`);
        }
        seeds.push(this.seedRow(entry.ref, String(values.seed), { ...base, status: 'failed', error }));
      }
    }
    const saved: BatchRow = { ...batch, resultsCursor: cursor ?? batch.resultsCursor ?? null, status: completed ? 'completed' : 'submitted' };
    await this.commit(groups, { batches: [saved], seeds });
    crashPoint('mid-results');
    batch.resultsCursor = saved.resultsCursor;
    this.done += entries.length;
    this.ctx.reporter.streamProgress(this.manifest.name, { done: this.done, credits: this.outcome.credits });
  }

  private intentFor(seeds: Partition[]): BatchRow {
    const sorted = [...seeds].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const items: BatchItemBody[] = sorted.map((p) => ({
      operation: this.manifest.operation,
      params: renderTemplate(this.manifest.params, { partition: p.values, options: this.ctx.options }) as Record<string, unknown>,
      ref: p.key,
    }));
    const body = JSON.stringify({ items });
    // Keys derive from what is asked and from the last fetch of those seeds: a retry of the same
    // intent reuses its key; a later refresh of the same seeds gets a new one.
    const generation = sorted.map((p) => this.ledger.get(p.key)?.fetchedAt?.toISOString() ?? '').join(',');
    const idempotencyKey = `seedline-${KEY_VERSION}-${sha256(stableJson({ stream: this.manifest.name, items, generation })).slice(0, 40)}`;
    return { idempotencyKey, stream: this.manifest.name, bodyHash: sha256(body), body, status: 'intent', itemCount: items.length, jobId: null, resultsCursor: null };
  }

  private isFresh(row: SeedRow | undefined, refreshMs: number | undefined, now: number): boolean {
    if (!row?.fetchedAt || refreshMs === undefined) return false;
    const recent = now - row.fetchedAt.getTime() < refreshMs;
    if (row.status === 'fetched') return recent;
    return row.status === 'failed' && recent && PERMANENT_FAILURES.has(String(row.error).split(':')[0] ?? '');
  }

  private seedRow(key: string, seed: string, fields: Partial<SeedRow> & Pick<SeedRow, 'status'>): SeedRow {
    const previous = this.ledger.get(key);
    return { stream: this.manifest.name, seedKey: key, seed, canonicalUrl: previous?.canonicalUrl ?? null, fetchedAt: previous?.fetchedAt ?? null, ...fields };
  }

  private async commit(groups: ShapedRecords[], ledgers: { batches?: BatchRow[]; seeds?: SeedRow[] }): Promise<void> {
    await this.ctx.writeLock.run(async () => {
      await this.writer.ensure(groups.map((g) => g.table));
      const unit = await this.ctx.destination.beginUnit(this.ctx.runId);
      try {
        addLoad(this.outcome, await this.writer.write(unit, groups));
        if (ledgers.seeds?.length) await unit.saveSeeds(ledgers.seeds);
        if (ledgers.batches?.length) await unit.saveBatches(ledgers.batches);
        await unit.commit();
      } catch (error) {
        await unit.rollback();
        throw error;
      }
    });
    for (const seed of ledgers.seeds ?? []) this.ledger.set(seed.seedKey, seed);
  }
}

function itemsOf(batch: BatchRow): BatchItemBody[] {
  return (JSON.parse(batch.body) as { items: BatchItemBody[] }).items;
}

function seedOf(item: BatchItemBody): string {
  return String(item.params.url ?? item.params.company_url ?? item.ref);
}

function chunk<T>(items: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}

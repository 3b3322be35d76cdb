import { BatchSubmitBody, describeIssues } from '../../schemas/index.js';
import type { BatchOperation } from '../../schemas/index.js';
import type { SandboxAccount } from './accounts.js';
import { invalidRequest, notFound, rateLimited, SandboxError } from './errors.js';
import type { TargetRef } from './fixtures/canonical.js';
import { hash53, stableStringify } from './fixtures/random.js';
import type { Reply } from './http.js';
import { BATCH_OPERATIONS } from './operations.js';
import type { Operation } from './operations.js';
import { performScrape } from './scrape-runner.js';
import type { SandboxState } from './state.js';

/** Idempotency keys are kept this long (virtual time). */
const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
/** Time per item the estimate assumes when the sandbox simulates no latency: the middle of the spec's 2 to 8 s. */
const NOMINAL_ITEM_MS = 5_000;

interface JobItem {
  index: number;
  ref: string;
  operation: Operation;
  opName: BatchOperation;
  params: unknown;
  target: TargetRef | null;
  /** Credits billed at submission (rule 1) or held as a reservation (rule 2). */
  upfront: number;
  resolved: boolean;
  /** Relative scrape time of the item (a second scrape, `slow-*` targets), for `estimated_completion`. */
  weight: number;
  /** Ledger target: the canonical URL, or the operation and its params for searches. */
  label: string;
}

/** A result entry (docs/service-assumptions.md#batch-items-and-results). */
export interface ResultEntry {
  ref: string;
  index: number;
  operation: string;
  status: 'succeeded' | 'failed';
  credits_used: number;
  data?: unknown;
  error?: { type: string; message: string };
}

interface Job {
  id: string;
  account: SandboxAccount;
  status: 'queued' | 'running' | 'completed';
  items: JobItem[];
  results: ResultEntry[];
  succeeded: number;
  failed: number;
  createdAt: string;
  estimatedCompletion: string;
  completedAt: string | null;
  webhookUrl: string | null;
  requestId: string;
  done: Promise<void>;
}

const yieldToIo = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Batch jobs: validation, idempotent submission, billing rules 1–3, asynchronous resolution, results paging. */
export class BatchEngine {
  private readonly jobs = new Map<string, Job>();
  private readonly idempotency = new Map<string, { hash: number; jobId: string; expiresAt: number }>();

  constructor(private readonly state: SandboxState) {}

  /** POST /v1/batch. */
  submit(account: SandboxAccount, rawBody: unknown, requestId: string, key: string | undefined): Reply {
    const parsed = BatchSubmitBody.safeParse(rawBody ?? {});
    if (!parsed.success) throw invalidRequest(describeIssues(parsed.error));
    const body = parsed.data;
    const items = this.validateItems(body.items);
    if (body.webhook_url !== undefined && !/^https?:\/\/[^\s/]+/.test(body.webhook_url))
      throw invalidRequest('webhook_url is not a valid URL');

    const bodyHash = hash53(stableStringify(body));
    const replay = key === undefined ? undefined : this.replay(account, key, bodyHash);
    if (replay)
      return {
        status: 200,
        data: this.view(replay),
        meta: { creditsUsed: 0, creditsRemaining: account.balance, billed: false, reason: 'idempotent_replay' },
      };

    const fault = this.state.faults.draw('request');
    if (fault) throw fault;
    const running = [...this.jobs.values()].filter(
      (job) => job.account === account && job.status !== 'completed',
    ).length;
    if (running >= this.state.options.concurrentBatchJobs) {
      throw rateLimited(`${running} batch jobs are running; the limit is ${this.state.options.concurrentBatchJobs}`, 5);
    }
    const upfront = items.reduce((sum, item) => sum + item.upfront, 0);
    if (!this.state.billing.canAfford(account, upfront)) {
      throw new SandboxError(
        'insufficient_credits',
        `the balance cannot cover this submission (${upfront} credits billed or reserved)`,
      );
    }

    const job = this.create(account, items, body.webhook_url ?? null, requestId);
    if (key !== undefined)
      this.idempotency.set(`${account.id}|${key}`, {
        hash: bodyHash,
        jobId: job.id,
        expiresAt: this.state.clock.nowMs() + IDEMPOTENCY_TTL_MS,
      });
    const billedNow = items
      .filter((item) => item.operation.billAtSubmission)
      .reduce((sum, item) => sum + item.upfront, 0);
    return {
      status: 202,
      data: this.view(job),
      meta: {
        ...this.state.billing.meta(account, billedNow),
        reason: 'batch_accepted',
        creditsReserved: upfront - billedNow,
      },
    };
  }

  /** A job of `account`; 404 otherwise. */
  get(account: SandboxAccount, id: string): Job {
    const job = this.jobs.get(id);
    if (!job || job.account !== account) throw notFound(`batch job ${id} does not exist`);
    return job;
  }

  /** Job record; `results` and `failures` once completed. */
  view(job: Job): Record<string, unknown> {
    let creditsUsed = 0;
    for (const entry of job.results) creditsUsed += entry.credits_used;
    let reserved = 0;
    for (const item of job.items) if (!item.resolved) reserved += item.upfront;
    const view: Record<string, unknown> = {
      job_id: job.id,
      status: job.status,
      total: job.items.length,
      resolved: job.results.length,
      succeeded: job.succeeded,
      failed: job.failed,
      credits_used: creditsUsed,
      credits_reserved: reserved,
      created_at: job.createdAt,
      estimated_completion: job.estimatedCompletion,
      completed_at: job.completedAt,
      webhook_url: job.webhookUrl,
    };
    if (job.status === 'completed') {
      view.results = job.results.filter((entry) => entry.status === 'succeeded');
      view.failures = job.results.filter((entry) => entry.status === 'failed');
    }
    return view;
  }

  /** Entries resolved after `position`, in resolution order; the next position is null only at the very end. */
  page(
    job: Job,
    status: string | null,
    position: number,
    limit: number,
  ): { entries: ResultEntry[]; next: number | null } {
    const entries: ResultEntry[] = [];
    let at = Math.min(position, job.results.length);
    while (at < job.results.length && entries.length < limit) {
      const entry = job.results[at++] as ResultEntry;
      if (status === null || entry.status === status) entries.push(entry);
    }
    return { entries, next: at >= job.results.length && job.status === 'completed' ? null : at };
  }

  /** Resolves when every job has completed (test helper). */
  async idle(): Promise<void> {
    await Promise.all([...this.jobs.values()].map((job) => job.done));
  }

  private validateItems(items: BatchSubmitBody['items']): JobItem[] {
    const env = { seed: this.state.options.seed, nowMs: this.state.clock.nowMs() };
    const refs = new Set<string>();
    return items.map((item, index) => {
      const operation = BATCH_OPERATIONS[item.operation];
      const params = operation.schema.safeParse(item.params);
      if (!params.success) throw invalidRequest(`items[${index}] (${item.operation}): ${describeIssues(params.error)}`);
      let target: TargetRef | null;
      try {
        target = operation.target(params.data, env);
      } catch (error) {
        throw invalidRequest(`items[${index}] (${item.operation}): ${(error as Error).message}`);
      }
      const ref = item.ref ?? String(index);
      if (refs.has(ref))
        throw invalidRequest(`items[${index}]: ref ${JSON.stringify(ref)} is not unique within the job`);
      refs.add(ref);
      const label = target?.url ?? `${item.operation}:${stableStringify(params.data)}`;
      const weight = operation.latencyFactor(params.data) * (target?.slug.startsWith('slow-') ? 3 : 1);
      return {
        index,
        ref,
        operation,
        opName: item.operation,
        params: params.data,
        target,
        upfront: operation.worstCase(params.data),
        resolved: false,
        weight,
        label,
      };
    });
  }

  private replay(account: SandboxAccount, key: string, bodyHash: number): Job | undefined {
    const known = this.idempotency.get(`${account.id}|${key}`);
    if (!known || known.expiresAt <= this.state.clock.nowMs()) return undefined;
    if (known.hash !== bodyHash)
      throw new SandboxError('idempotency_conflict', 'this Idempotency-Key was used with a different body');
    return this.jobs.get(known.jobId);
  }

  private create(account: SandboxAccount, items: JobItem[], webhookUrl: string | null, requestId: string): Job {
    const { state } = this;
    const id = state.ids.resource('job');
    for (const item of items) {
      // Rule 1 items bill in full now; every other item holds its worst case until it settles.
      if (item.operation.billAtSubmission)
        state.billing.charge(account, item.upfront, this.charge(item, id, requestId));
      else state.billing.hold(account, item.upfront);
    }
    const job: Job = {
      id,
      account,
      status: 'queued',
      items,
      results: [],
      succeeded: 0,
      failed: 0,
      createdAt: state.clock.now().toISOString(),
      estimatedCompletion: '',
      completedAt: null,
      webhookUrl,
      requestId,
      done: Promise.resolve(),
    };
    job.estimatedCompletion = this.estimate(job);
    this.jobs.set(id, job);
    job.done = this.run(job);
    return job;
  }

  /**
   * When the job should finish, seen from now: the unresolved items' scrape time spread over the item
   * concurrency. Recomputed as each item resolves, so it moves with progress; once all are resolved it is now.
   */
  private estimate(job: Job): string {
    const { latencyMs, timeScale, batchItemConcurrency } = this.state.options;
    const perItemMs = latencyMs[1] > 0 ? ((latencyMs[0] + latencyMs[1]) / 2) * timeScale : NOMINAL_ITEM_MS;
    let remaining = 0;
    for (const item of job.items) if (!item.resolved) remaining += item.weight;
    return new Date(
      this.state.clock.nowMs() + Math.round((remaining / batchItemConcurrency) * perItemMs),
    ).toISOString();
  }

  private charge(item: JobItem, jobId: string, requestId: string) {
    return { operation: item.operation.name, target: item.label, requestId, jobId, ref: item.ref };
  }

  private async run(job: Job): Promise<void> {
    await yieldToIo();
    job.status = 'running';
    let next = 0;
    const worker = async () => {
      while (!this.state.closed && next < job.items.length) {
        const item = job.items[next++] as JobItem;
        await yieldToIo();
        await this.resolve(job, item);
      }
    };
    await Promise.all(
      Array.from({ length: Math.min(this.state.options.batchItemConcurrency, job.items.length) }, worker),
    );
    if (this.state.closed) return;
    job.status = 'completed';
    job.completedAt = this.state.clock.now().toISOString();
    if (job.webhookUrl !== null) {
      const view = this.view(job);
      this.state.webhooks.enqueue({
        accountId: job.account.id,
        event: 'batch.completed',
        url: job.webhookUrl,
        payload: {
          event: 'batch.completed',
          job: { job_id: job.id, status: job.status, total: view.total, estimated_completion: job.estimatedCompletion },
        },
        secret: job.account.webhookSecret,
      });
    }
  }

  private async resolve(job: Job, item: JobItem): Promise<void> {
    const { state } = this;
    const attemptKey = `${job.account.id}|${item.operation.path}|${hash53(stableStringify(item.params))}`;
    const entry: ResultEntry = {
      ref: item.ref,
      index: item.index,
      operation: item.opName,
      status: 'succeeded',
      credits_used: 0,
    };
    try {
      await state.options.beforeBatchItem?.({ ref: item.ref, operation: item.opName });
      const { result } = await performScrape(state, item.operation, item.params, item.target, 'item', attemptKey);
      entry.data = result.data;
      entry.credits_used = this.settle(job, item, result.credits);
    } catch (error) {
      const failure = error instanceof SandboxError ? error : new SandboxError('internal_error', 'item failed');
      entry.status = 'failed';
      entry.error = { type: failure.type, message: failure.message };
      entry.credits_used = this.settle(job, item, null);
    }
    item.resolved = true;
    if (entry.status === 'succeeded') job.succeeded++;
    else job.failed++;
    job.results.push(entry);
    job.estimatedCompletion = this.estimate(job);
  }

  /** Applies billing rules 1 and 2 to a resolved item; `actual` is null when it failed. Returns the item's final cost. */
  private settle(job: Job, item: JobItem, actual: number | null): number {
    const { billing } = this.state;
    const context = this.charge(item, job.id, job.requestId);
    if (item.operation.billAtSubmission) {
      // Rule 1: billed whatever the outcome; only a search's unused reservation comes back.
      const refund = actual === null ? 0 : Math.max(0, item.upfront - actual);
      billing.charge(job.account, -refund, context);
      return item.upfront - refund;
    }
    // Rule 2: the reservation settles to the actual cost; failures and empty results cost nothing.
    billing.release(job.account, item.upfront);
    const cost = actual ?? 0;
    billing.charge(job.account, cost, context);
    return cost;
  }
}

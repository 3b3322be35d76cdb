import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { ProfileWatchedField, SignalInterval } from '../../schemas/index.js';
import type { SandboxAccount } from './accounts.js';
import { invalidRequest, notFound, SandboxError } from './errors.js';
import { canonicalCompany, canonicalProfile } from './fixtures/canonical.js';
import type { TargetRef } from './fixtures/canonical.js';
import { watchedValues } from './fixtures/profile.js';
import { BATCH_OPERATIONS } from './operations.js';
import { dropExpired } from './retention.js';
import { performScrape } from './scrape-runner.js';
import type { SandboxState } from './state.js';
import type {
  CheckResult,
  SignalInput,
  SignalRecord,
  SignalTargetInput,
  TriggerRecord,
  UsageEntry,
} from './signal-records.js';
import type { DeliveryOutcome, DeliveryRecord } from './webhook-dispatcher.js';

const DAY_MS = 86_400_000;
/** Cost of one check of a company_jobs Signal is the jobs returned; its estimate assumes a full default page. */
const COMPANY_JOBS_ESTIMATE = 25;
const COMPANY_JOBS_FIELDS = ['jobs'];
/**
 * Trigger events in a row whose webhook retries ran out before the Signal pauses with `webhook_failing`
 * (spec: "retries are exhausted on consecutive events"; the spec gives no count, two is the least that is consecutive).
 */
export const FAILED_EVENTS_BEFORE_PAUSE = 2;

export type { CheckResult, SignalInput, SignalRecord, SignalTargetInput, TriggerRecord } from './signal-records.js';

/** Days of an allowed interval; 400 otherwise. */
export function intervalDays(interval: string): number {
  if (!SignalInterval.safeParse(interval).success)
    throw invalidRequest(`schedule.interval must be one of ${SignalInterval.options.join(', ')}`);
  return Number.parseInt(interval, 10);
}

function checkTimezone(timezone: string): string {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return timezone;
  } catch {
    throw invalidRequest(`schedule.timezone is not an IANA time zone: ${timezone}`);
  }
}

/** A webhook URL must be absolute http(s). */
export function checkWebhookUrl(url: string, field: string): string {
  if (!/^https?:\/\/[^\s/]+/.test(url)) throw invalidRequest(`${field} is not a valid URL`);
  return url;
}

/** Signals, their scheduled checks on the virtual clock, Triggers and usage logs. */
export class SignalStore {
  private readonly signals = new Map<string, SignalRecord>();
  private readonly triggers: TriggerRecord[] = [];
  private readonly usage: UsageEntry[] = [];

  constructor(private readonly state: SandboxState) {}

  /** Validates a target and criteria pair; 400 with the reason otherwise. */
  resolveTarget(target: SignalTargetInput, fields: string[], mode: string): TargetRef {
    if (mode !== 'field_change') throw invalidRequest('criteria.mode must be field_change');
    const allowed: readonly string[] = target.type === 'profile' ? ProfileWatchedField.options : COMPANY_JOBS_FIELDS;
    const unknown = fields.filter((field) => !allowed.includes(field));
    if (fields.length === 0 || unknown.length > 0)
      throw invalidRequest(`criteria.fields must be a non-empty subset of ${allowed.join(', ')}`);
    return target.type === 'profile' ? canonicalProfile(target.site_url) : canonicalCompany(target.company_url);
  }

  /** Creates a Signal; its baseline check is due at once (it runs at the next clock advance). */
  create(account: SandboxAccount, input: SignalInput): SignalRecord {
    const ref = this.resolveTarget(input.target, input.criteria.fields, input.criteria.mode);
    intervalDays(input.schedule.interval);
    const now = this.state.clock.nowMs();
    const signal: SignalRecord = {
      id: this.state.ids.resource('sig'),
      account,
      name: input.name,
      tags: input.tags ?? [],
      status: 'active',
      paused_reason: null,
      target: input.target,
      ref,
      schedule: { interval: input.schedule.interval, timezone: checkTimezone(input.schedule.timezone ?? 'UTC') },
      criteria: { mode: input.criteria.mode, fields: [...input.criteria.fields] },
      webhookUrl: input.notify ? checkWebhookUrl(input.notify.webhook_url, 'notify.webhook_url') : null,
      secret: `whsec_${randomBytes(24).toString('hex')}`,
      external_id: input.external_id ?? null,
      metadata: input.metadata ?? null,
      created_at: new Date(now).toISOString(),
      nextCheckMs: now,
      checkNumber: 0,
      snapshot: null,
      failedEvents: 0,
      deleted: false,
      task: null,
    };
    this.signals.set(signal.id, signal);
    this.schedule(signal);
    return signal;
  }

  /** A live Signal of `account`; 404 otherwise. */
  get(account: SandboxAccount, id: string): SignalRecord {
    const signal = this.signals.get(id);
    if (!signal || signal.deleted || signal.account !== account) throw notFound(`signal ${id} does not exist`);
    return signal;
  }

  /** Live Signals of `account` in creation order. */
  list(account: SandboxAccount): SignalRecord[] {
    return [...this.signals.values()].filter((signal) => signal.account === account && !signal.deleted);
  }

  /** Whether `account` already watches this target with a live Signal. */
  watches(account: SandboxAccount, url: string): boolean {
    return this.list(account).some((signal) => signal.ref.url === url);
  }

  /** Estimated monthly credits: ceil(30 / interval days) × the cost of one check. */
  estimate(signal: Pick<SignalRecord, 'schedule' | 'target'>): number {
    return (
      Math.ceil(30 / intervalDays(signal.schedule.interval)) *
      (signal.target.type === 'profile' ? 1 : COMPANY_JOBS_ESTIMATE)
    );
  }

  /** Signal resource; `withSecret` only in a create response. */
  view(signal: SignalRecord, withSecret = false): Record<string, unknown> {
    const notify: Record<string, unknown> = { webhook_url: signal.webhookUrl };
    if (withSecret) notify.webhook_secret = signal.secret;
    return {
      id: signal.id,
      name: signal.name,
      tags: signal.tags,
      status: signal.status,
      paused_reason: signal.paused_reason,
      target: signal.target,
      schedule: signal.schedule,
      criteria: signal.criteria,
      notify,
      external_id: signal.external_id,
      metadata: signal.metadata,
      estimated_monthly_credits: this.estimate(signal),
      next_check_at: signal.status === 'active' ? new Date(signal.nextCheckMs).toISOString() : null,
      created_at: signal.created_at,
    };
  }

  /** The `signals` block of the account resource. */
  summary(accountId: string): { active: number; paused: number; estimated_monthly_credits: number } {
    let active = 0;
    let paused = 0;
    let estimated = 0;
    for (const signal of this.signals.values()) {
      if (signal.deleted || signal.account.id !== accountId) continue;
      if (signal.status === 'active') {
        active++;
        estimated += this.estimate(signal);
      } else paused++;
    }
    return { active, paused, estimated_monthly_credits: estimated };
  }

  /** Moves the next check to `nextMs` and (re)schedules it. */
  reschedule(signal: SignalRecord, nextMs: number): void {
    signal.nextCheckMs = nextMs;
    this.schedule(signal);
  }

  /** Pauses a Signal: scheduled checks stop, the snapshot is kept. */
  pause(signal: SignalRecord, reason: string): void {
    signal.status = 'paused';
    signal.paused_reason = reason;
    signal.task?.cancel();
    signal.task = null;
  }

  /** Resumes a Signal: the next check is due at once and diffs against the last snapshot. */
  resume(signal: SignalRecord): void {
    signal.status = 'active';
    signal.paused_reason = null;
    this.reschedule(signal, this.state.clock.nowMs());
  }

  /** Deletes a Signal (its Triggers and usage stay). */
  delete(signal: SignalRecord): void {
    this.pause(signal, 'deleted');
    signal.deleted = true;
  }

  /** Triggers of `accountId`, ordered by checked_at then trigger_id. */
  triggersOf(accountId: string): TriggerRecord[] {
    dropExpired(this.triggers, (trigger) => Date.parse(trigger.checked_at), this.state.clock.nowMs());
    return this.triggers
      .filter((trigger) => trigger.accountId === accountId)
      .sort((a, b) =>
        a.checked_at === b.checked_at ? (a.trigger_id < b.trigger_id ? -1 : 1) : a.checked_at < b.checked_at ? -1 : 1,
      );
  }

  /** Usage rows by external_id in [fromMs, toMs), highest credits first, at most 1000. */
  usageRows(accountId: string, fromMs: number, toMs: number): Array<Record<string, unknown>> {
    dropExpired(this.usage, (entry) => entry.atMs, this.state.clock.nowMs());
    const rows = new Map<
      string | null,
      {
        external_id: string | null;
        checks: number;
        successful_checks: number;
        failed_checks: number;
        matched_checks: number;
        credits_charged: number;
      }
    >();
    for (const entry of this.usage) {
      if (entry.accountId !== accountId || entry.atMs < fromMs || entry.atMs >= toMs) continue;
      let row = rows.get(entry.external_id);
      if (!row)
        rows.set(
          entry.external_id,
          (row = {
            external_id: entry.external_id,
            checks: 0,
            successful_checks: 0,
            failed_checks: 0,
            matched_checks: 0,
            credits_charged: 0,
          }),
        );
      row.checks++;
      if (entry.ok) row.successful_checks++;
      else row.failed_checks++;
      if (entry.matched) row.matched_checks++;
      row.credits_charged += entry.credits;
    }
    return [...rows.values()].sort((a, b) => b.credits_charged - a.credits_charged).slice(0, 1000);
  }

  /**
   * Runs one check: scrape, bill, diff against the snapshot, Trigger and webhook on a non-baseline match.
   * `awaitDelivery` makes a scheduled check wait for the webhook's first attempt, so a clock advance is deterministic.
   */
  async check(signal: SignalRecord, requestId: string, awaitDelivery: boolean): Promise<CheckResult> {
    const { state } = this;
    const result: CheckResult = {
      signal_id: signal.id,
      check_number: signal.checkNumber + 1,
      status: 'not_matched',
      matched: false,
      is_baseline: false,
      billed: false,
      credits_used: 0,
      trigger_id: null,
      criteria_matched: [],
      diff: {},
    };
    if (signal.status === 'paused') {
      result.status = 'paused';
      return result;
    }
    const account = signal.account;
    const cost = signal.target.type === 'profile' ? 1 : 0;
    if (!state.billing.canAfford(account, Math.max(1, cost))) {
      this.pause(signal, 'insufficient_credits');
      result.status = 'paused';
      return result;
    }
    signal.checkNumber++;
    const atMs = state.clock.nowMs();
    const usage: UsageEntry = {
      accountId: account.id,
      atMs,
      external_id: signal.external_id,
      ok: false,
      matched: false,
      credits: 0,
    };
    dropExpired(this.usage, (entry) => entry.atMs, atMs);
    this.usage.push(usage);
    let values: Record<string, unknown>;
    let credits: number;
    try {
      ({ values, credits } = await this.scrape(signal));
    } catch (error) {
      const failure = error instanceof SandboxError ? error : new SandboxError('internal_error', 'check failed');
      result.status = 'failed';
      result.error_type = failure.type;
      result.error_message = failure.message;
      return result;
    }
    state.billing.charge(account, credits, { operation: 'signal.check', target: signal.id, requestId });
    usage.ok = true;
    usage.credits = credits;
    result.credits_used = credits;
    result.billed = account.live && credits > 0;
    const previous = signal.snapshot;
    signal.snapshot = values;
    if (previous === null) {
      result.is_baseline = true;
      return result;
    }
    for (const field of signal.criteria.fields) {
      if (!isDeepStrictEqual(previous[field], values[field]))
        result.diff[field] = diffOf(previous[field], values[field]);
    }
    result.criteria_matched = Object.keys(result.diff);
    if (result.criteria_matched.length === 0) return result;
    usage.matched = true;
    result.status = 'matched';
    result.matched = true;
    const trigger = this.recordTrigger(signal, result, atMs);
    result.trigger_id = trigger.trigger_id;
    const { accountId: _owner, ...payloadTrigger } = trigger;
    const delivery = this.deliver(
      signal,
      'signal.triggered',
      { event: 'signal.triggered', trigger: payloadTrigger },
      true,
    );
    if (delivery) {
      result.webhook = { status: delivery.status, attempts: delivery.attempts, delivery_id: delivery.id };
      if (awaitDelivery) await delivery.inFlight;
    }
    return result;
  }

  /** Sends a Signal event to its webhook (or the account default); null when neither is set. */
  deliver(signal: SignalRecord, event: string, payload: unknown, pauseOnFailure: boolean): DeliveryRecord | null {
    const url = signal.webhookUrl ?? signal.account.defaultWebhookUrl;
    if (url === null) return null;
    return this.state.webhooks.enqueue({
      accountId: signal.account.id,
      event,
      url,
      payload,
      secret: signal.secret,
      ...(pauseOnFailure ? { onFinal: (outcome: DeliveryOutcome) => this.afterEvent(signal, outcome) } : {}),
    });
  }

  /** The pause rules of the spec: a gone endpoint pauses at once; failing retries pause only on consecutive events. */
  private afterEvent(signal: SignalRecord, outcome: DeliveryOutcome): void {
    if (outcome === 'delivered') {
      signal.failedEvents = 0;
      return;
    }
    if (outcome === 'failed') signal.failedEvents++;
    if (signal.status !== 'active' || signal.deleted) return;
    if (outcome === 'gone') this.autoPause(signal, 'webhook_gone');
    else if (signal.failedEvents >= FAILED_EVENTS_BEFORE_PAUSE) this.autoPause(signal, 'webhook_failing');
  }

  private autoPause(signal: SignalRecord, reason: string): void {
    // A resumed Signal starts a fresh count: the user is expected to have fixed the receiver.
    signal.failedEvents = 0;
    this.pause(signal, reason);
    const fallback = signal.account.fallbackWebhookUrl;
    if (fallback === null) return;
    this.state.webhooks.enqueue({
      accountId: signal.account.id,
      event: 'signal.paused',
      url: fallback,
      payload: {
        event: 'signal.paused',
        signal: { id: signal.id, status: signal.status, paused_reason: signal.paused_reason },
      },
      secret: signal.account.webhookSecret,
    });
  }

  private recordTrigger(signal: SignalRecord, result: CheckResult, atMs: number): TriggerRecord {
    const trigger: TriggerRecord = {
      trigger_id: this.state.ids.resource('trg'),
      signal_id: signal.id,
      check_number: result.check_number,
      checked_at: new Date(atMs).toISOString(),
      diff: result.diff,
      criteria_matched: result.criteria_matched,
      target: signal.target,
      accountId: signal.account.id,
    };
    if (signal.external_id !== null) trigger.external_id = signal.external_id;
    if (signal.metadata !== null) trigger.metadata = signal.metadata;
    dropExpired(this.triggers, (t) => Date.parse(t.checked_at), atMs);
    this.triggers.push(trigger);
    return trigger;
  }

  private async scrape(signal: SignalRecord): Promise<{ values: Record<string, unknown>; credits: number }> {
    const attemptKey = `${signal.id}|check`;
    if (signal.target.type === 'profile') {
      const operation = BATCH_OPERATIONS['profiles.enrich'];
      const { result } = await performScrape(
        this.state,
        operation,
        { url: signal.ref.url },
        signal.ref,
        'item',
        attemptKey,
      );
      return { values: watchedValues(result.data), credits: result.credits };
    }
    const operation = BATCH_OPERATIONS['search.jobs'];
    const { result } = await performScrape(
      this.state,
      operation,
      { company_url: signal.ref.url },
      signal.ref,
      'item',
      attemptKey,
    );
    const jobs = (result.data.jobs as Array<{ url: string }>).map((job) => job.url).sort();
    return { values: { jobs }, credits: result.credits };
  }

  private schedule(signal: SignalRecord): void {
    signal.task?.cancel();
    signal.task = null;
    if (signal.status !== 'active' || signal.deleted) return;
    signal.task = this.state.clock.schedule(signal.nextCheckMs, async () => {
      signal.task = null;
      signal.nextCheckMs += intervalDays(signal.schedule.interval) * DAY_MS;
      this.schedule(signal);
      await this.check(signal, this.state.ids.request(), true);
    });
  }
}

function diffOf(
  before: unknown,
  after: unknown,
): { before: unknown; after: unknown; added?: unknown[]; removed?: unknown[] } {
  if (!Array.isArray(before) || !Array.isArray(after)) return { before, after };
  return {
    before,
    after,
    added: after.filter((v) => !before.includes(v)),
    removed: before.filter((v) => !after.includes(v)),
  };
}

import { SignalBulkBody, SignalCreateBody, SignalPatchBody, SignalPauseByTagBody } from '../../../schemas/index.js';
import { invalidRequest, SandboxError } from '../errors.js';
import { canonicalProfile } from '../fixtures/canonical.js';
import { hash53, stableStringify } from '../fixtures/random.js';
import { decodeCursor, encodeCursor, idempotencyKey, intQuery, parseBody } from '../http.js';
import type { Reply, RequestContext } from '../http.js';
import type { Router } from '../router.js';
import { checkWebhookUrl, intervalDays } from '../signals.js';
import type { CheckResult } from '../signals.js';

const DAY_MS = 86_400_000;

function free(context: RequestContext, reason?: string): Record<string, unknown> {
  const meta: Record<string, unknown> = { creditsUsed: 0, creditsRemaining: context.account.balance, billed: false };
  if (reason !== undefined) meta.reason = reason;
  return meta;
}

/** Cursor-paged slice of a list (`cursor`, `limit`); `nextCursor` is null at the end. */
export function pageOf<T>(
  context: RequestContext,
  items: T[],
  defaultLimit: number,
  maxLimit: number,
): { page: T[]; nextCursor: string | null } {
  const start = decodeCursor(context.query.get('cursor'));
  const limit = intQuery(context.query, 'limit', 1, maxLimit, defaultLimit);
  const page = items.slice(start, start + limit);
  return { page, nextCursor: start + limit < items.length ? encodeCursor(start + limit) : null };
}

const CHECK_REASONS: Record<CheckResult['status'], string> = {
  matched: 'check_matched',
  not_matched: 'check_completed',
  failed: 'check_failed',
  paused: 'check_paused',
};

async function checkNow(context: RequestContext, legacy: boolean): Promise<Reply> {
  const { state, account, params, requestId } = context;
  const signal = state.signals.get(account, params.id as string);
  const result = await state.signals.check(signal, requestId, false);
  const reason = result.is_baseline ? 'baseline_established' : CHECK_REASONS[result.status];
  const data: Record<string, unknown> = { ...result };
  // The earlier /test response shape also carried a check id.
  if (legacy) data.check_id = `chk_${signal.id.slice(4)}_${result.check_number}`;
  return { data, meta: { ...state.billing.meta(account, result.credits_used), billed: result.billed, reason } };
}

/** Signal routes: create, bulk, list, get, PATCH, delete, pause (one or by tag), resume, check-now (+/test), test-webhook. */
export function registerSignalRoutes(router: Router): void {
  const bulkReplays = new Map<string, { hash: number; data: unknown }>();
  const testDeliveries = new Map<string, string>();

  router.add('POST', '/v1/signals', (context) => {
    const body = parseBody(SignalCreateBody, context.body);
    const signal = context.state.signals.create(context.account, body);
    return { status: 201, data: context.state.signals.view(signal, true), meta: free(context, 'signal_created') };
  });

  router.add('POST', '/v1/signals/bulk', (context) => {
    const { state, account } = context;
    const body = parseBody(SignalBulkBody, context.body);
    const key = idempotencyKey(context);
    const hash = hash53(stableStringify(body));
    const known = key === undefined ? undefined : bulkReplays.get(`${account.id}|${key}`);
    if (known && known.hash !== hash)
      throw new SandboxError('idempotency_conflict', 'this Idempotency-Key was used with a different body');
    if (known) return { status: 201, data: known.data, meta: free(context, 'bulk_created') };
    const { template } = body;
    intervalDays(template.schedule.interval);
    if (template.notify) checkWebhookUrl(template.notify.webhook_url, 'template.notify.webhook_url');
    const rejected: Array<{ site_url: string; reason: string }> = [];
    const created = [];
    const seen = new Set<string>();
    for (const target of body.targets) {
      let url: string;
      try {
        url = canonicalProfile(target.site_url).url;
      } catch {
        rejected.push({ site_url: target.site_url, reason: 'invalid_url' });
        continue;
      }
      if (seen.has(url) || state.signals.watches(account, url)) {
        rejected.push({ site_url: target.site_url, reason: 'duplicate_target' });
        continue;
      }
      seen.add(url);
      created.push(
        state.signals.create(account, {
          name: `${template.name_prefix} — ${url}`,
          target: { type: 'profile', site_url: url },
          schedule: template.schedule,
          criteria: template.criteria,
          notify: template.notify,
          tags: template.tags,
        }),
      );
    }
    const data = {
      created: created.length,
      rejected,
      estimated_monthly_credits: created.reduce((sum, signal) => sum + state.signals.estimate(signal), 0),
      signals: created.map((signal) => state.signals.view(signal, true)),
    };
    if (key !== undefined) bulkReplays.set(`${account.id}|${key}`, { hash, data });
    return { status: 201, data, meta: free(context, 'bulk_created') };
  });

  router.add('GET', '/v1/signals', (context) => {
    const { state, account, query } = context;
    const tag = query.get('tag');
    const status = query.get('status');
    if (status !== null && status !== 'active' && status !== 'paused')
      throw invalidRequest('status must be active or paused');
    const all = state.signals
      .list(account)
      .filter((s) => (tag === null || s.tags.includes(tag)) && (status === null || s.status === status));
    const { page, nextCursor } = pageOf(context, all, 50, 100);
    return { data: page.map((signal) => state.signals.view(signal)), meta: { ...free(context), nextCursor } };
  });

  router.add('GET', '/v1/signals/:id', (context) => ({
    data: context.state.signals.view(context.state.signals.get(context.account, context.params.id as string)),
    meta: free(context),
  }));

  router.add('PATCH', '/v1/signals/:id', (context) => {
    const { state, account } = context;
    const signal = state.signals.get(account, context.params.id as string);
    const patch = parseBody(SignalPatchBody, context.body);
    if (patch.criteria) state.signals.resolveTarget(signal.target, patch.criteria.fields, patch.criteria.mode);
    if (patch.notify?.webhook_url) checkWebhookUrl(patch.notify.webhook_url, 'notify.webhook_url');
    if (patch.schedule) {
      const days = intervalDays(patch.schedule.interval);
      signal.schedule = {
        interval: patch.schedule.interval,
        timezone: patch.schedule.timezone ?? signal.schedule.timezone,
      };
      if (signal.status === 'active' && signal.snapshot !== null)
        state.signals.reschedule(signal, state.clock.nowMs() + days * DAY_MS);
    }
    if (patch.name !== undefined) signal.name = patch.name;
    if (patch.tags !== undefined) signal.tags = patch.tags;
    if (patch.external_id !== undefined) signal.external_id = patch.external_id;
    if (patch.metadata !== undefined) signal.metadata = patch.metadata;
    // The snapshot is kept, so tightening criteria causes no spurious re-triggers.
    if (patch.criteria !== undefined) signal.criteria = { mode: patch.criteria.mode, fields: patch.criteria.fields };
    if (patch.notify !== undefined) signal.webhookUrl = patch.notify.webhook_url;
    return { data: state.signals.view(signal), meta: free(context, 'signal_updated') };
  });

  router.add('DELETE', '/v1/signals/:id', (context) => {
    const signal = context.state.signals.get(context.account, context.params.id as string);
    context.state.signals.delete(signal);
    return { data: { id: signal.id, deleted: true }, meta: free(context, 'signal_deleted') };
  });

  router.add('POST', '/v1/signals/pause', (context) => {
    const { tag } = parseBody(SignalPauseByTagBody, context.body);
    let paused = 0;
    for (const signal of context.state.signals.list(context.account)) {
      if (signal.status !== 'active' || !signal.tags.includes(tag)) continue;
      context.state.signals.pause(signal, 'user');
      paused++;
    }
    return { data: { paused }, meta: free(context, 'signals_paused') };
  });

  router.add('POST', '/v1/signals/:id/pause', (context) => {
    const signal = context.state.signals.get(context.account, context.params.id as string);
    context.state.signals.pause(signal, 'user');
    return {
      data: { id: signal.id, status: signal.status, paused_reason: signal.paused_reason },
      meta: free(context, 'signal_paused'),
    };
  });

  router.add('POST', '/v1/signals/:id/resume', (context) => {
    const signal = context.state.signals.get(context.account, context.params.id as string);
    context.state.signals.resume(signal);
    return {
      data: { id: signal.id, status: signal.status, next_check_at: new Date(signal.nextCheckMs).toISOString() },
      meta: free(context, 'signal_resumed'),
    };
  });

  router.add('POST', '/v1/signals/:id/check-now', (context) => checkNow(context, false));
  router.add('POST', '/v1/signals/:id/test', (context) => checkNow(context, true));

  router.add('POST', '/v1/signals/:id/test-webhook', (context) => {
    const { state, account } = context;
    const signal = state.signals.get(account, context.params.id as string);
    const key = idempotencyKey(context);
    const knownId = key === undefined ? undefined : testDeliveries.get(`${signal.id}|${key}`);
    let record = knownId === undefined ? undefined : state.webhooks.get(account.id, knownId);
    if (!record) {
      const payload = {
        event: 'signal.test',
        test: true,
        signal_id: signal.id,
        diff: { headline: { before: 'Engineer at Example Co', after: 'Senior Engineer at Example Co' } },
      };
      const created = state.signals.deliver(signal, 'signal.test', payload, false);
      if (!created) throw invalidRequest('no webhook URL is configured for this Signal or the account');
      record = created;
      if (key !== undefined) testDeliveries.set(`${signal.id}|${key}`, record.id);
    }
    const view = state.webhooks.view(record);
    return {
      data: {
        delivery_id: record.id,
        event: 'signal.test',
        url: record.url,
        status: view.status,
        attempts: view.attempts,
        created_at: record.created_at,
      },
      meta: free(context, 'webhook_test_enqueued'),
    };
  });
}

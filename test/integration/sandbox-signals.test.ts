import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  BatchCompletedEvent,
  CheckResult,
  envelope,
  Signal,
  SignalBulkResult,
  SignalPausedEvent,
  SignalTestEvent,
  SignalTriggeredEvent,
  SignalUsageRow,
  TestWebhookResult,
  Trigger,
  WebhookDelivery,
} from '../../schemas/index.js';
import { startHarness, startReceiver, useHarness, verifySignature } from '../helpers/sandbox.js';
import type { WebhookReceiver } from '../helpers/sandbox.js';

const DAY = 86_400_000;
const h = useHarness({ seed: 11 });
let receiver: WebhookReceiver;
let keyCounter = 0;
let key: string;

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});
beforeEach(() => {
  key = `svc_live_sig${keyCounter++}`;
  receiver.received = [];
  receiver.status = 200;
});

const signalBody = (over: Record<string, unknown> = {}) => ({
  name: 'Watch Ada',
  target: { type: 'profile', site_url: 'https://www.network.example/in/ada-watch' },
  schedule: { interval: '1d' },
  criteria: { mode: 'field_change', fields: ['headline', 'position', 'company'] },
  notify: { webhook_url: `${receiver.url}/hook` },
  ...over,
});

async function createSignal(over: Record<string, unknown> = {}, k = key) {
  const res = await h.post('/v1/signals', signalBody(over), { key: k });
  expect(res.status).toBe(201);
  return envelope(Signal).parse(res.body).data;
}

describe('Signals: create, get, list, PATCH, delete', () => {
  it('given a valid body, when created, then 201 with a one-time webhook_secret and the estimate', async () => {
    const signal = await createSignal();
    expect(signal.id).toMatch(/^sig_/);
    expect(signal.notify?.webhook_secret).toMatch(/^whsec_/);
    expect(signal.estimated_monthly_credits).toBe(30);
    const fetched = envelope(Signal).parse((await h.get(`/v1/signals/${signal.id}`, { key })).body).data;
    expect(fetched.notify?.webhook_secret).toBeUndefined();
    expect(fetched.schedule.timezone).toBe('UTC');
  });

  it('given bad intervals, fields, targets or unknown fields, when created, then 400 invalid_request', async () => {
    for (const over of [
      { schedule: { interval: '2d' } },
      { criteria: { mode: 'field_change', fields: ['shoe_size'] } },
      { criteria: { mode: 'magic', fields: ['headline'] } },
      { target: { type: 'posts', site_url: 'x' } },
      { target: { type: 'profile', site_url: 'https://x.example/company/acme' } },
      { colour: 'red' },
      { schedule: { interval: '1d', timezone: 'Mars/Olympus' } },
    ]) {
      const res = await h.post('/v1/signals', signalBody(over), { key });
      expect(res.status).toBe(400);
      expect(res.body.error.type).toBe('invalid_request');
    }
  });

  it('given several Signals, when listed by tag and status with a small limit, then cursor pagination covers them once', async () => {
    for (let i = 0; i < 5; i++)
      await createSignal({ tags: i % 2 ? ['odd'] : ['even'], target: { type: 'profile', site_url: `list-${i}` } });
    const ids: string[] = [];
    let cursor = '';
    for (;;) {
      const page = await h.get(`/v1/signals?limit=2&tag=even${cursor ? `&cursor=${cursor}` : ''}`, { key });
      ids.push(...page.body.data.map((s: { id: string }) => s.id));
      if (page.body.meta.nextCursor === null) break;
      cursor = page.body.meta.nextCursor;
    }
    expect(ids).toHaveLength(3);
    const paused = await h.post('/v1/signals/pause', { tag: 'odd' }, { key });
    expect(paused.body.data).toEqual({ paused: 2 });
    expect((await h.get('/v1/signals?status=paused', { key })).body.data).toHaveLength(2);
  });

  it('given a Signal, when patched, then only sent fields change and reason is signal_updated', async () => {
    const signal = await createSignal({ external_id: 'cust-1', metadata: { a: 1 } });
    const res = await h.call(`/v1/signals/${signal.id}`, {
      method: 'PATCH',
      key,
      body: { schedule: { interval: '7d' }, metadata: { b: 2 }, external_id: null },
    });
    expect(res.body.meta.reason).toBe('signal_updated');
    expect(res.body.data).toMatchObject({
      id: signal.id,
      schedule: { interval: '7d' },
      estimated_monthly_credits: 5,
      metadata: { b: 2 },
      external_id: null,
      name: 'Watch Ada',
    });
    expect(
      (await h.call(`/v1/signals/${signal.id}`, { method: 'PATCH', key, body: { metadata: { x: 'y'.repeat(9000) } } }))
        .status,
    ).toBe(400);
  });

  it('given a Signal, when deleted, then it is gone (404) and unknown ids are 404 too', async () => {
    const signal = await createSignal();
    expect((await h.call(`/v1/signals/${signal.id}`, { method: 'DELETE', key })).body.data).toEqual({
      id: signal.id,
      deleted: true,
    });
    expect((await h.get(`/v1/signals/${signal.id}`, { key })).status).toBe(404);
    expect((await h.get('/v1/signals/sig_nope', { key })).body.error.type).toBe('not_found');
  });
});

describe('Signals: checks, Triggers and webhooks', () => {
  it('given a new Signal, when checked now, then the baseline is established, billed, and never triggers', async () => {
    const signal = await createSignal();
    const res = await h.post(`/v1/signals/${signal.id}/check-now`, undefined, { key });
    const result = envelope(CheckResult).parse(res.body);
    expect(result.data).toMatchObject({
      check_number: 1,
      status: 'not_matched',
      is_baseline: true,
      billed: true,
      credits_used: 1,
      trigger_id: null,
    });
    expect(result.meta.reason).toBe('baseline_established');
    expect(h.sandbox.ledger.countFor('signal.check', signal.id)).toBe(1);
    const legacy = await h.post(`/v1/signals/${signal.id}/test`, undefined, { key });
    expect(legacy.body.data).toMatchObject({ check_number: 2, is_baseline: false, check_id: expect.any(String) });
  });

  it('given the profile drifts, when the clock advances, then a signed signal.triggered webhook carries the diff', async () => {
    const signal = await createSignal({ external_id: 'crm-42', metadata: { owner: 'me' } });
    await h.sandbox.clock.advance(90 * DAY);
    const triggers = (await h.get(`/v1/triggers?signal_id=${signal.id}`, { key })).body.data.map((t: unknown) =>
      Trigger.parse(t),
    );
    expect(triggers.length).toBeGreaterThan(0);
    expect(triggers[0]).toMatchObject({ signal_id: signal.id, external_id: 'crm-42', metadata: { owner: 'me' } });
    expect(triggers[0].check_number).toBeGreaterThan(1);
    const hooks = receiver.received.filter(
      (r) => r.headers['x-service-event'] === 'signal.triggered' && r.body.trigger.signal_id === signal.id,
    );
    expect(hooks).toHaveLength(triggers.length);
    const first = hooks[0]!;
    expect(SignalTriggeredEvent.parse(first.body).trigger.trigger_id).toBe(triggers[0].trigger_id);
    expect(
      await verifySignature(signal.notify?.webhook_secret as string, first.headers['x-service-signature'], first.raw),
    ).toBe(true);
    expect(await verifySignature('whsec_wrong', first.headers['x-service-signature'], first.raw)).toBe(false);
  });

  it('given a paused Signal, when time passes, then nothing is billed; when resumed, then the change made while paused triggers', async () => {
    const signal = await createSignal();
    await h.sandbox.clock.advance(1);
    const pause = await h.post(`/v1/signals/${signal.id}/pause`, undefined, { key });
    expect(pause.body).toMatchObject({
      data: { id: signal.id, status: 'paused', paused_reason: 'user' },
      meta: { reason: 'signal_paused' },
    });
    const billedBefore = h.sandbox.ledger.countFor('signal.check', signal.id);
    await h.sandbox.clock.advance(90 * DAY);
    expect(h.sandbox.ledger.countFor('signal.check', signal.id)).toBe(billedBefore);
    const paused = await h.post(`/v1/signals/${signal.id}/check-now`, undefined, { key });
    expect(paused.body.data).toMatchObject({ status: 'paused', billed: false, credits_used: 0 });
    const resume = await h.post(`/v1/signals/${signal.id}/resume`, undefined, { key });
    expect(resume.body).toMatchObject({
      data: { id: signal.id, status: 'active' },
      meta: { reason: 'signal_resumed' },
    });
    const check = await h.post(`/v1/signals/${signal.id}/check-now`, undefined, { key });
    expect(check.body.data).toMatchObject({ status: 'matched', check_number: 2, matched: true });
    expect(check.body.meta.reason).toBe('check_matched');
  });

  it('given a balance too small, when a check is due, then the Signal pauses with insufficient_credits and is not billed', async () => {
    const poor = await startHarness({ balance: 1 });
    try {
      const created = await poor.post('/v1/signals', signalBody({ notify: undefined }), { key: 'svc_live_poor' });
      const id = created.body.data.id;
      expect(
        (await poor.post(`/v1/signals/${id}/check-now`, undefined, { key: 'svc_live_poor' })).body.data.billed,
      ).toBe(true);
      const second = await poor.post(`/v1/signals/${id}/check-now`, undefined, { key: 'svc_live_poor' });
      expect(second.body.data).toMatchObject({ status: 'paused', billed: false, credits_used: 0 });
      expect((await poor.get(`/v1/signals/${id}`, { key: 'svc_live_poor' })).body.data).toMatchObject({
        status: 'paused',
        paused_reason: 'insufficient_credits',
      });
    } finally {
      await poor.sandbox.close();
    }
  });

  it('given a webhook answering 410, when a Trigger fires, then the Signal pauses (webhook_gone) and signal.paused goes to the fallback', async () => {
    const patch = await h.call('/v1/account', {
      method: 'PATCH',
      key,
      body: { default_webhook_url: `${receiver.url}/default`, fallback_webhook_url: `${receiver.url}/fallback` },
    });
    const accountSecret = patch.body.data.webhook_secret as string;
    const signal = await createSignal();
    await h.sandbox.clock.advance(1);
    receiver.status = 410;
    await h.sandbox.clock.advance(90 * DAY);
    const state = (await h.get(`/v1/signals/${signal.id}`, { key })).body.data;
    expect(state).toMatchObject({ status: 'paused', paused_reason: 'webhook_gone' });
    await h.sandbox.idle();
    const fallback = receiver.received.find((r) => r.url === '/fallback');
    expect(SignalPausedEvent.parse(fallback?.body).signal).toMatchObject({
      id: signal.id,
      paused_reason: 'webhook_gone',
    });
    expect(await verifySignature(accountSecret, fallback?.headers['x-service-signature'], fallback?.raw ?? '')).toBe(
      true,
    );
  });

  it('given a webhook answering 500, when retries are exhausted on the virtual clock, then the delivery fails; one event alone does not pause the Signal', async () => {
    const signal = await createSignal();
    await h.sandbox.clock.advance(1);
    receiver.status = 500;
    // Pause while the profile drifts, so the resumed check-now is the one that matches.
    await h.post(`/v1/signals/${signal.id}/pause`, undefined, { key });
    await h.sandbox.clock.advance(90 * DAY);
    await h.post(`/v1/signals/${signal.id}/resume`, undefined, { key });
    const check = await h.post(`/v1/signals/${signal.id}/check-now`, undefined, { key });
    expect(check.body.data.webhook).toMatchObject({ status: 'retrying', attempts: 0 });
    const deliveryId = check.body.data.webhook.delivery_id as string;
    await h.sandbox.idle();
    await h.sandbox.clock.advance(60_000);
    let delivery = WebhookDelivery.parse((await h.get(`/v1/webhook-deliveries/${deliveryId}`, { key })).body.data);
    expect(delivery).toMatchObject({ status: 'retrying', attempts: 2, last_error: 'receiver answered 500' });
    await h.sandbox.clock.advance(300_000 + 1_800_000 + 7_200_000 + 21_600_000);
    delivery = WebhookDelivery.parse((await h.get(`/v1/webhook-deliveries/${deliveryId}`, { key })).body.data);
    expect(delivery).toMatchObject({ status: 'failed', attempts: 6 });
    // The pause needs retries exhausted on consecutive events (sandbox-webhook-pause.test.ts).
    expect((await h.get(`/v1/signals/${signal.id}`, { key })).body.data).toMatchObject({
      status: 'active',
      paused_reason: null,
    });
    expect((await h.get(`/v1/webhook-deliveries/${deliveryId}`, { key: 'svc_live_other' })).status).toBe(404);
  });

  it('given test-webhook with an Idempotency-Key, when called twice, then one signed signal.test delivery is made', async () => {
    const signal = await createSignal();
    const first = await h.post(`/v1/signals/${signal.id}/test-webhook`, undefined, {
      key,
      headers: { 'idempotency-key': 't-1' },
    });
    const data = envelope(TestWebhookResult).parse(first.body);
    expect(data.data).toMatchObject({ event: 'signal.test', status: 'retrying', attempts: 0 });
    expect(data.meta.reason).toBe('webhook_test_enqueued');
    const second = await h.post(`/v1/signals/${signal.id}/test-webhook`, undefined, {
      key,
      headers: { 'idempotency-key': 't-1' },
    });
    expect(second.body.data.delivery_id).toBe(first.body.data.delivery_id);
    await h.sandbox.idle();
    const tests = receiver.received.filter((r) => r.body.event === 'signal.test');
    expect(tests).toHaveLength(1);
    expect(SignalTestEvent.parse(tests[0]?.body).test).toBe(true);
    expect(
      await verifySignature(
        signal.notify?.webhook_secret as string,
        tests[0]?.headers['x-service-signature'],
        tests[0]?.raw ?? '',
      ),
    ).toBe(true);
    expect(h.sandbox.ledger.countFor('signal.check', signal.id)).toBe(0);
  });

  it('given no webhook configured anywhere, when test-webhook is called, then 400 invalid_request', async () => {
    const signal = await createSignal({ notify: undefined });
    expect((await h.post(`/v1/signals/${signal.id}/test-webhook`, undefined, { key })).body.error.type).toBe(
      'invalid_request',
    );
  });
});

describe('company_jobs Signals', () => {
  it('given a company board, when postings open and close over time, then the jobs diff lists added and removed URLs', async () => {
    const signal = await createSignal({
      target: { type: 'company_jobs', company_url: 'https://www.network.example/company/initech' },
      criteria: { mode: 'field_change', fields: ['jobs'] },
      schedule: { interval: '30d' },
    });
    expect(signal.estimated_monthly_credits).toBe(25);
    expect((await h.post(`/v1/signals/${signal.id}/check-now`, undefined, { key })).body.data.is_baseline).toBe(true);
    await h.sandbox.clock.advance(20 * DAY);
    const check = await h.post(`/v1/signals/${signal.id}/check-now`, undefined, { key });
    expect(check.body.data.status).toBe('matched');
    const diff = check.body.data.diff.jobs;
    expect(diff.added.length + diff.removed.length).toBeGreaterThan(0);
    expect(check.body.data.credits_used).toBe(diff.after.length);
  });

  it('given criteria fields that do not fit the target, when created, then 400', async () => {
    const res = await h.post('/v1/signals', signalBody({ target: { type: 'company_jobs', company_url: 'initech' } }), {
      key,
    });
    expect(res.status).toBe(400);
  });
});

describe('POST /v1/signals/bulk', () => {
  it('given invalid and duplicate targets, when bulk-created, then they are rejected with reasons and the rest succeed; a replay returns the same', async () => {
    await createSignal({ target: { type: 'profile', site_url: 'already-here' } });
    const body = {
      template: {
        name_prefix: 'Bulk',
        tags: ['bulk'],
        schedule: { interval: '7d' },
        criteria: { mode: 'field_change', fields: ['headline'] },
      },
      targets: [
        { type: 'profile', site_url: 'https://www.network.example/in/bulk-one' },
        { type: 'profile', site_url: 'https://other.example/in/bulk-one/' },
        { type: 'profile', site_url: 'already-here' },
        { type: 'profile', site_url: 'not a url/' },
        { type: 'profile', site_url: 'bulk-two' },
      ],
    };
    const res = await h.post('/v1/signals/bulk', body, { key, headers: { 'idempotency-key': 'b-1' } });
    expect(res.status).toBe(201);
    const result = envelope(SignalBulkResult).parse(res.body).data;
    expect(result.created).toBe(2);
    expect(result.rejected.map((r) => r.reason).sort()).toEqual([
      'duplicate_target',
      'duplicate_target',
      'invalid_url',
    ]);
    expect(result.estimated_monthly_credits).toBe(10);
    expect(result.signals[0]?.name).toBe('Bulk — https://www.network.example/in/bulk-one');
    expect(res.body.meta.reason).toBe('bulk_created');
    const replay = await h.post('/v1/signals/bulk', body, { key, headers: { 'idempotency-key': 'b-1' } });
    expect(replay.body.data.signals.map((s: { id: string }) => s.id)).toEqual(result.signals.map((s) => s.id));
    expect(
      (
        await h.post(
          '/v1/signals/bulk',
          { ...body, targets: body.targets.slice(0, 1) },
          { key, headers: { 'idempotency-key': 'b-1' } },
        )
      ).status,
    ).toBe(409);
  });
});

describe('GET /v1/triggers and GET /v1/usage/signals', () => {
  it('given many Triggers, when paged with since and a cursor, then each appears once in checked_at order', async () => {
    const signal = await createSignal({ criteria: { mode: 'field_change', fields: ['headline'] } });
    await h.sandbox.clock.advance(400 * DAY);
    const all = (await h.get(`/v1/triggers?signal_id=${signal.id}&limit=100`, { key })).body.data as Array<{
      trigger_id: string;
      checked_at: string;
    }>;
    // Only the last 90 days of Triggers are retained (sandbox-retention.test.ts).
    expect(all.length).toBeGreaterThanOrEqual(3);
    expect(Date.parse(all[0]?.checked_at as string)).toBeGreaterThan(h.sandbox.clock.nowMs() - 90 * DAY);
    const paged: string[] = [];
    let cursor = '';
    for (;;) {
      const page = await h.get(`/v1/triggers?signal_id=${signal.id}&limit=2${cursor ? `&cursor=${cursor}` : ''}`, {
        key,
      });
      paged.push(...page.body.data.map((t: { trigger_id: string }) => t.trigger_id));
      if (page.body.meta.nextCursor === null) break;
      cursor = page.body.meta.nextCursor;
    }
    expect(paged).toEqual(all.map((t) => t.trigger_id));
    const since = all[2]?.checked_at as string;
    const recent = (await h.get(`/v1/triggers?signal_id=${signal.id}&since=${since}`, { key })).body.data;
    expect(recent).toHaveLength(all.length - 2);
  });

  it('given external_id changes between checks, when usage is read, then each check keeps the attribution it had', async () => {
    const start = h.sandbox.clock.now().toISOString();
    const signal = await createSignal({ external_id: 'tenant-a' });
    await h.post(`/v1/signals/${signal.id}/check-now`, undefined, { key });
    await h.post(`/v1/signals/${signal.id}/check-now`, undefined, { key });
    await h.call(`/v1/signals/${signal.id}`, { method: 'PATCH', key, body: { external_id: 'tenant-b' } });
    await h.post(`/v1/signals/${signal.id}/check-now`, undefined, { key });
    const res = await h.get(`/v1/usage/signals?from=${start}`, { key });
    const rows = res.body.data.map((r: unknown) => SignalUsageRow.parse(r));
    expect(rows).toEqual([
      {
        external_id: 'tenant-a',
        checks: 2,
        successful_checks: 2,
        failed_checks: 0,
        matched_checks: 0,
        credits_charged: 2,
      },
      {
        external_id: 'tenant-b',
        checks: 1,
        successful_checks: 1,
        failed_checks: 0,
        matched_checks: 0,
        credits_charged: 1,
      },
    ]);
    expect(res.body.meta).toMatchObject({ group_by: 'external_id', from: start });
    expect((await h.get('/v1/usage/signals?group_by=tag', { key })).status).toBe(400);
  });
});

describe('batch.completed webhook', () => {
  it('given a batch with webhook_url, when it completes, then a batch.completed event signed with the account secret arrives', async () => {
    const patch = await h.call('/v1/account', {
      method: 'PATCH',
      key,
      body: { default_webhook_url: `${receiver.url}/default` },
    });
    const res = await h.post(
      '/v1/batch',
      { items: [{ operation: 'profiles.enrich', params: { url: 'hook-me' } }], webhook_url: `${receiver.url}/batch` },
      { key },
    );
    await h.sandbox.idle();
    const event = receiver.received.find((r) => r.url === '/batch');
    expect(BatchCompletedEvent.parse(event?.body).job).toMatchObject({
      job_id: res.body.data.job_id,
      status: 'completed',
      total: 1,
    });
    expect(event?.headers['x-service-event']).toBe('batch.completed');
    expect(
      await verifySignature(patch.body.data.webhook_secret, event?.headers['x-service-signature'], event?.raw ?? ''),
    ).toBe(true);
  });
});

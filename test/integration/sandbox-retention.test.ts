import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignalUsageRow, Trigger } from '../../schemas/index.js';
import { matchAfterDrift, startReceiver, useHarness } from '../helpers/sandbox.js';
import type { WebhookReceiver } from '../helpers/sandbox.js';

const DAY = 86_400_000;
const RETENTION = 90 * DAY;
const key = 'svc_live_retention';
const h = useHarness({ seed: 11 });
let receiver: WebhookReceiver;

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

const triggersOf = async (signalId: string) =>
  (await h.get(`/v1/triggers?signal_id=${signalId}`, { key })).body.data.map((t: unknown) => Trigger.parse(t));
const usageOf = async (externalId: string) =>
  ((await h.get('/v1/usage/signals?from=2000-01-01T00:00:00Z', { key })).body.data as unknown[])
    .map((row) => SignalUsageRow.parse(row))
    .find((row) => row.external_id === externalId);

describe('90-day retention on the virtual clock', () => {
  it('given a deleted Signal with a Trigger, a delivered webhook and check logs, when 90 days pass, then each is gone at its own 90 days', async () => {
    const created = await h.post(
      '/v1/signals',
      {
        name: 'retained',
        target: { type: 'profile', site_url: 'ada-retain' },
        schedule: { interval: '1d' },
        criteria: { mode: 'field_change', fields: ['headline', 'position', 'company'] },
        notify: { webhook_url: receiver.url },
        external_id: 'ret-1',
      },
      { key },
    );
    const id = created.body.data.id as string;
    expect((await h.post(`/v1/signals/${id}/check-now`, undefined, { key })).body.data.is_baseline).toBe(true);
    const deliveryId = await matchAfterDrift(h, id, key);
    // Deleted Signals still count for retained logs; deleting also stops its scheduled checks.
    await h.call(`/v1/signals/${id}`, { method: 'DELETE', key });
    expect(await triggersOf(id)).toHaveLength(1);
    expect(await usageOf('ret-1')).toMatchObject({ checks: 2, matched_checks: 1, credits_charged: 2 });

    // The baseline log is 90 days old 29 days from now; the Trigger, its log and its delivery 90 days from now.
    await h.sandbox.clock.advance(29 * DAY);
    expect(await usageOf('ret-1')).toMatchObject({ checks: 1, matched_checks: 1, credits_charged: 1 });
    await h.sandbox.clock.advance(RETENTION - 29 * DAY - 1);
    expect(await triggersOf(id)).toHaveLength(1);
    expect((await h.get(`/v1/webhook-deliveries/${deliveryId}`, { key })).body.data.status).toBe('delivered');

    await h.sandbox.clock.advance(1);
    expect(await triggersOf(id)).toEqual([]);
    expect(await usageOf('ret-1')).toBeUndefined();
    const gone = await h.get(`/v1/webhook-deliveries/${deliveryId}`, { key });
    expect(gone.status).toBe(404);
    expect(gone.body.error.type).toBe('not_found');
  });

  it('given a failed delivery, when 90 days pass after its last attempt, then its record is gone too', async () => {
    const created = await h.post(
      '/v1/signals',
      {
        name: 'failing',
        target: { type: 'profile', site_url: 'ada-retain-2' },
        schedule: { interval: '30d' },
        criteria: { mode: 'field_change', fields: ['headline'] },
        notify: { webhook_url: receiver.url },
      },
      { key },
    );
    // Paused, so no scheduled check adds deliveries of its own while the clock runs.
    await h.post(`/v1/signals/${created.body.data.id}/pause`, undefined, { key });
    receiver.status = 500;
    const test = await h.post(`/v1/signals/${created.body.data.id}/test-webhook`, undefined, { key });
    const deliveryId = test.body.data.delivery_id as string;
    await h.sandbox.idle();
    // The last retry runs 8 h 36 min after the first attempt; retention counts from then.
    const lastAttempt = 60_000 + 300_000 + 1_800_000 + 7_200_000 + 21_600_000;
    await h.sandbox.clock.advance(lastAttempt);
    await h.sandbox.idle();
    expect((await h.get(`/v1/webhook-deliveries/${deliveryId}`, { key })).body.data).toMatchObject({
      status: 'failed',
      attempts: 6,
    });
    await h.sandbox.clock.advance(RETENTION - 1);
    expect((await h.get(`/v1/webhook-deliveries/${deliveryId}`, { key })).status).toBe(200);
    await h.sandbox.clock.advance(1);
    expect((await h.get(`/v1/webhook-deliveries/${deliveryId}`, { key })).status).toBe(404);
    receiver.status = 200;
  });
});

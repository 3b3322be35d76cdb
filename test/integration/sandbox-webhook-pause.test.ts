import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignalPausedEvent, WebhookDelivery } from '../../schemas/index.js';
import { matchAfterDrift, startReceiver, useHarness } from '../helpers/sandbox.js';
import type { WebhookReceiver } from '../helpers/sandbox.js';

/** Longer than the five retries (1 m + 5 m + 30 m + 2 h + 6 h). */
const PAST_RETRIES = 9 * 3_600_000;
const key = 'svc_live_pause_rule';
const h = useHarness({ seed: 11 });
let hook: WebhookReceiver;
let fallback: WebhookReceiver;

beforeAll(async () => {
  hook = await startReceiver();
  fallback = await startReceiver();
});
afterAll(async () => {
  await hook.close();
  await fallback.close();
});

const status = async (id: string) =>
  (await h.get(`/v1/signals/${id}`, { key })).body.data as { status: string; paused_reason: string | null };

/**
 * One Trigger event whose delivery runs to its end: the Signal is held paused while the profile drifts,
 * resumed, checked now (a match, so an event), then the clock runs past every retry.
 */
async function fireEvent(id: string, receiverStatus: number): Promise<string> {
  hook.status = receiverStatus;
  const deliveryId = await matchAfterDrift(h, id, key);
  await h.sandbox.clock.advance(PAST_RETRIES);
  await h.sandbox.idle();
  const delivery = WebhookDelivery.parse((await h.get(`/v1/webhook-deliveries/${deliveryId}`, { key })).body.data);
  expect(delivery.status).toBe(receiverStatus === 200 ? 'delivered' : 'failed');
  return delivery.status;
}

describe('automatic webhook_failing pause: retries exhausted on consecutive events', () => {
  it('given fail, success, fail, when each delivery ends, then the Signal stays active; a second failure in a row pauses it', async () => {
    await h.call('/v1/account', { method: 'PATCH', key, body: { fallback_webhook_url: fallback.url } });
    const created = await h.post(
      '/v1/signals',
      {
        name: 'pause rule',
        target: { type: 'profile', site_url: 'ada-pause' },
        schedule: { interval: '1d' },
        criteria: { mode: 'field_change', fields: ['headline', 'position', 'company'] },
        notify: { webhook_url: hook.url },
      },
      { key },
    );
    const id = created.body.data.id as string;
    expect((await h.post(`/v1/signals/${id}/check-now`, undefined, { key })).body.data.is_baseline).toBe(true);

    await fireEvent(id, 500);
    expect(await status(id)).toMatchObject({ status: 'active', paused_reason: null });
    await fireEvent(id, 200);
    await fireEvent(id, 500);
    expect(await status(id)).toMatchObject({ status: 'active', paused_reason: null });
    expect(fallback.received).toHaveLength(0);

    await fireEvent(id, 500);
    expect(await status(id)).toMatchObject({ status: 'paused', paused_reason: 'webhook_failing' });
    const paused = fallback.received.map((r) => SignalPausedEvent.parse(r.body));
    expect(paused).toEqual([
      expect.objectContaining({
        event: 'signal.paused',
        signal: { id, status: 'paused', paused_reason: 'webhook_failing' },
      }),
    ]);

    // After the pause the count starts over: one more failing event alone does not pause the resumed Signal.
    await fireEvent(id, 500);
    expect(await status(id)).toMatchObject({ status: 'active' });
  });
});

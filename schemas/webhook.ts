import { z } from 'zod';
import { Int, Timestamp } from './common.js';
import { Diff, Trigger } from './signal.js';

/** Webhook delivery record of GET /v1/webhook-deliveries/{id}. */
export const WebhookDelivery = z.looseObject({
  id: z.string(),
  event: z.string(),
  status: z.enum(['retrying', 'delivered', 'failed']),
  attempts: Int,
  url: z.string(),
  created_at: Timestamp,
  delivered_at: Timestamp.nullable(),
  last_error: z.string().nullable(),
});
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

/** Webhook event bodies. */
export const BatchCompletedEvent = z.looseObject({
  event: z.literal('batch.completed'),
  job: z.looseObject({
    job_id: z.string(),
    status: z.string(),
    total: Int,
    estimated_completion: Timestamp.nullable().optional(),
  }),
});
export const SignalTriggeredEvent = z.looseObject({ event: z.literal('signal.triggered'), trigger: Trigger });
export const SignalTestEvent = z.looseObject({
  event: z.literal('signal.test'),
  test: z.literal(true),
  signal_id: z.string(),
  diff: Diff,
});
export const SignalPausedEvent = z.looseObject({
  event: z.literal('signal.paused'),
  signal: z.looseObject({ id: z.string(), status: z.string(), paused_reason: z.string().nullable() }),
});
export const WebhookEvent = z.discriminatedUnion('event', [
  BatchCompletedEvent,
  SignalTriggeredEvent,
  SignalTestEvent,
  SignalPausedEvent,
]);
export type WebhookEvent = z.infer<typeof WebhookEvent>;

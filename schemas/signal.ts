import { z } from 'zod';
import { Int, Timestamp } from './common.js';

/** Allowed Signal intervals (docs/service-assumptions.md, "Signals"). */
export const SignalInterval = z.enum(['1d', '3d', '7d', '14d', '30d']);
/** Watched profile fields. */
export const ProfileWatchedField = z.enum(['headline', 'position', 'company', 'location', 'skills', 'education']);

/** A Signal's target. */
export const SignalTarget = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('profile'), site_url: z.string() }),
  z.looseObject({ type: z.literal('company_jobs'), company_url: z.string() }),
]);
export type SignalTarget = z.infer<typeof SignalTarget>;

/** Schedule of a Signal. */
export const SignalSchedule = z.looseObject({ interval: z.string(), timezone: z.string().optional() });
/** Criteria of a Signal. */
export const SignalCriteria = z.looseObject({ mode: z.string(), fields: z.array(z.string()) });
/** Notify block; `webhook_secret` only in the create response. */
export const SignalNotify = z.looseObject({
  webhook_url: z.string().nullable().optional(),
  webhook_secret: z.string().optional(),
});

/** Signal resource. */
export const Signal = z.looseObject({
  id: z.string(),
  name: z.string(),
  tags: z.array(z.string()).optional(),
  status: z.enum(['active', 'paused']).or(z.string()),
  paused_reason: z.string().nullable().optional(),
  target: z.union([SignalTarget, z.looseObject({ type: z.string() })]).optional(),
  schedule: SignalSchedule,
  criteria: SignalCriteria.optional(),
  notify: SignalNotify.nullable().optional(),
  external_id: z.string().nullable().optional(),
  metadata: z.record(z.string(), z.unknown()).nullable().optional(),
  estimated_monthly_credits: Int,
  next_check_at: Timestamp.nullable().optional(),
  created_at: Timestamp.optional(),
});
export type Signal = z.infer<typeof Signal>;

/** Data of PATCH /v1/signals/{id}. */
export const SignalUpdateResult = z.looseObject({
  id: z.string(),
  schedule: SignalSchedule,
  estimated_monthly_credits: Int,
  next_check_at: Timestamp.nullable().optional(),
});

/** Data of POST /v1/signals/bulk. */
export const SignalBulkResult = z.looseObject({
  created: Int,
  rejected: z.array(z.looseObject({ site_url: z.string(), reason: z.string() })),
  estimated_monthly_credits: Int,
  signals: z.array(Signal),
});

/** Data of POST /v1/signals/{id}/pause. */
export const SignalPauseResult = z.looseObject({
  id: z.string(),
  status: z.string(),
  paused_reason: z.string().nullable().optional(),
});
/** Data of POST /v1/signals/pause (by tag). */
export const SignalPauseByTagResult = z.looseObject({ paused: Int });
/** Data of POST /v1/signals/{id}/resume. */
export const SignalResumeResult = z.looseObject({
  id: z.string(),
  status: z.string(),
  next_check_at: Timestamp.nullable().optional(),
});
/** Data of DELETE /v1/signals/{id}. */
export const SignalDeleteResult = z.looseObject({ id: z.string(), deleted: z.literal(true) });

/** A field diff `{ before, after }`, keyed by field name. */
export const Diff = z.record(z.string(), z.looseObject({ before: z.unknown(), after: z.unknown() }));

/** Data of POST /v1/signals/{id}/check-now. */
export const CheckResult = z.looseObject({
  signal_id: z.string(),
  check_number: Int,
  status: z.enum(['matched', 'not_matched', 'failed', 'paused']),
  matched: z.boolean(),
  is_baseline: z.boolean(),
  billed: z.boolean(),
  credits_used: Int,
  trigger_id: z.string().nullable(),
  criteria_matched: z.array(z.string()),
  diff: Diff,
  error_type: z.string().optional(),
  error_message: z.string().optional(),
  webhook: z.looseObject({ status: z.string(), attempts: Int, delivery_id: z.string() }).optional(),
});
export type CheckResult = z.infer<typeof CheckResult>;

/** Data of POST /v1/signals/{id}/test-webhook. */
export const TestWebhookResult = z.looseObject({
  delivery_id: z.string(),
  event: z.literal('signal.test'),
  url: z.string(),
  status: z.string(),
  attempts: Int,
  created_at: Timestamp,
});

/** Trigger resource. */
export const Trigger = z.looseObject({
  trigger_id: z.string(),
  signal_id: z.string(),
  check_number: Int,
  checked_at: Timestamp,
  diff: Diff,
  criteria_matched: z.array(z.string()),
  target: z.unknown().optional(),
  external_id: z.string().nullable().optional(),
  metadata: z.record(z.string(), z.unknown()).nullable().optional(),
});
export type Trigger = z.infer<typeof Trigger>;

/** Signal usage row of GET /v1/usage/signals. */
export const SignalUsageRow = z.looseObject({
  external_id: z.string().nullable(),
  checks: Int,
  successful_checks: Int,
  failed_checks: Int,
  matched_checks: Int,
  credits_charged: Int,
});
export type SignalUsageRow = z.infer<typeof SignalUsageRow>;

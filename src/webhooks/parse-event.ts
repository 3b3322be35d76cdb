import { createHash } from 'node:crypto';
import { describeIssues } from '../../schemas/common.js';
import { WebhookEvent } from '../../schemas/webhook.js';

/** A verified body read as an event, or why it could not be (and the table it was meant for). */
export type ParsedEvent = { ok: true; event: WebhookEvent } | { ok: false; table: string; reason: string };

/** Reads a verified body as one of the service's webhook events; never quotes the body in a reason. */
export function parseEvent(raw: string): ParsedEvent {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    // JSON.parse's message quotes the body, which must not reach a log line.
    return { ok: false, table: 'webhooks', reason: 'the body is not valid JSON' };
  }
  const result = WebhookEvent.safeParse(json);
  if (result.success) return { ok: true, event: result.data };
  const name = json !== null && typeof json === 'object' ? (json as { event?: unknown }).event : undefined;
  // A Trigger that does not fit is filed against the table it was meant for.
  return {
    ok: false,
    table: name === 'signal.triggered' ? 'triggers' : 'webhooks',
    reason: `event ${JSON.stringify(name ?? null).slice(0, 64)}: ${describeIssues(result.error)}`,
  };
}

/**
 * The dedupe key of a delivery: retries carry the same `trigger_id` or `job_id` (the service
 * says to dedupe on it). Other events carry no id: they key on the signature's timestamp and the
 * exact body, so two deliveries with equal bodies (a Signal paused twice for the same reason, two
 * test deliveries) stay two rows, while a delivery replayed with its signature stays one. A
 * retry, signed anew, records a second row for these rare events rather than dropping a real one.
 */
export function deliveryKey(parsed: ParsedEvent, raw: string, signedAt: number): string {
  if (parsed.ok && parsed.event.event === 'signal.triggered') return `trigger:${parsed.event.trigger.trigger_id}`;
  if (parsed.ok && parsed.event.event === 'batch.completed') return `job:${parsed.event.job.job_id}`;
  const event = parsed.ok ? parsed.event.event : 'unreadable';
  return `${event}:${signedAt}:${createHash('sha256').update(raw).digest('hex')}`;
}

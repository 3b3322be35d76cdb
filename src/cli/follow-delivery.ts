import type { WebhookDelivery } from '../../schemas/webhook.js';
import type { ApiClient } from '../client/index.js';
import { sleep } from '../util/sleep.js';
import { UsageError } from './run-command.js';

/** How long `--wait` follows a delivery when not told (the help of `test-webhook` says 60): the service's first retry comes after 1 minute. */
const DEFAULT_WAIT_SECONDS = 60;
/** The longest `--wait`: the service's retries span about 8.6 hours. */
const MAX_WAIT_SECONDS = 86_400;
/** First pause between two reads of the delivery; doubled up to {@link MAX_PAUSE_MS}, then {@link LATER_MAX_PAUSE_MS}. */
const FIRST_PAUSE_MS = 250;
const MAX_PAUSE_MS = 2_000;
/** Longest pause once the first minute has passed: the retries that follow are minutes to hours apart. */
const LATER_MAX_PAUSE_MS = 15_000;
/** The service's retry schedule, as the spec gives it: the wait after each failed attempt. */
const RETRY_DELAYS = ['1 m', '5 m', '30 m', '2 h', '6 h'] as const;
const RETRIES = `it retries after ${RETRY_DELAYS.slice(0, -1).join(', ')} and ${RETRY_DELAYS.at(-1)}`;

/** Exit codes of a followed delivery: delivered, failed, and not final yet when the wait ended. */
export const DELIVERY_EXIT = { delivered: 0, failed: 1, pending: 3 } as const;

/** A delivery as far as it is known: the enqueue answer first, then GET /v1/webhook-deliveries/{id}. */
export type DeliveryState = Pick<WebhookDelivery, 'id' | 'event' | 'url' | 'attempts'> & {
  /** `retrying`, `delivered` or `failed` (another value is treated as not final). */
  status: string;
  /** Why the last attempt failed; null or absent when none did. */
  last_error?: string | null;
};

/** How a followed delivery ended: final (`delivered`, `failed`) or `pending` when the wait ran out first. */
export type DeliveryOutcome = keyof typeof DELIVERY_EXIT;

/** What {@link followDelivery} saw last. */
export interface FollowResult {
  /** How it ended. */
  outcome: DeliveryOutcome;
  /** The delivery as last read. */
  delivery: DeliveryState;
}

/** `--wait <seconds>` as a number of seconds, from 0 (do not follow) to a day. */
export function parseWait(value: string | undefined): number {
  if (value === undefined) return DEFAULT_WAIT_SECONDS;
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isFinite(seconds) || seconds < 0 || seconds > MAX_WAIT_SECONDS)
    throw new UsageError(`--wait: expected seconds from 0 (do not follow) to ${MAX_WAIT_SECONDS}, got "${value}"`);
  return seconds;
}

/** Whether the delivery's status is final. */
export function outcomeOf(delivery: DeliveryState): DeliveryOutcome {
  return delivery.status === 'delivered' || delivery.status === 'failed' ? delivery.status : 'pending';
}

/**
 * Reads the delivery (free) until its status is final or `waitSeconds` have passed, and hands
 * `progress` one line per state change (status, attempts, last error), the starting state included.
 */
export async function followDelivery(
  client: Pick<ApiClient, 'getWebhookDelivery'>,
  start: DeliveryState,
  waitSeconds: number,
  progress: (line: string) => void,
): Promise<FollowResult> {
  let delivery = start;
  let seen = stateKey(delivery);
  progress(stateLine(delivery));
  const startedAt = Date.now();
  const deadline = startedAt + waitSeconds * 1000;
  let pause = FIRST_PAUSE_MS;
  while (outcomeOf(delivery) === 'pending') {
    const left = deadline - Date.now();
    if (left <= 0) break;
    await sleep(Math.min(pause, left));
    pause = Math.min(pause * 2, Date.now() - startedAt < 60_000 ? MAX_PAUSE_MS : LATER_MAX_PAUSE_MS);
    delivery = (await client.getWebhookDelivery(delivery.id)).data;
    if (stateKey(delivery) === seen) continue;
    seen = stateKey(delivery);
    progress(stateLine(delivery));
  }
  return { outcome: outcomeOf(delivery), delivery };
}

function stateKey(delivery: DeliveryState): string {
  return JSON.stringify([delivery.status, delivery.attempts, delivery.last_error ?? null]);
}

const attemptsText = (n: number) => `${n} attempt${n === 1 ? '' : 's'}`;

/** One line per state of a delivery. */
export function stateLine(delivery: DeliveryState): string {
  const { status, attempts, last_error: error } = delivery;
  if (status === 'delivered') return `  delivered: the receiver answered 2xx on attempt ${attempts}`;
  if (status === 'failed') return `  failed after ${attemptsText(attempts)}: ${error ?? 'no error given'}`;
  if (attempts === 0) return `  ${status}: queued, not attempted yet`;
  const next = RETRY_DELAYS[attempts - 1];
  return `  ${status}: attempt ${attempts} failed (${error ?? 'no error given'}); the service tries again${next ? ` in about ${next}` : ''} (${RETRIES})`;
}

/**
 * The closing line: delivered (attempts), failed (last error, attempts, what to check), or not
 * final when the wait ran out (and how to look again later).
 * @param later the command that shows the delivery again, e.g. `seedline signals delivery wh_… --config seedline.yaml`
 */
export function closingLine(result: FollowResult, waitSeconds: number, later: string): string {
  const { delivery } = result;
  const attempts = attemptsText(delivery.attempts);
  if (result.outcome === 'delivered')
    return `delivered: ${delivery.event} ${delivery.id} reached ${delivery.url} (the receiver answered 2xx) after ${attempts}`;
  if (result.outcome === 'failed')
    return [
      `failed: ${delivery.event} ${delivery.id} to ${delivery.url} failed after ${attempts}; last error: ${delivery.last_error ?? 'none given'}`,
      ...failureHints(delivery),
    ].join('\n');
  const error = delivery.last_error ? `, last error: ${delivery.last_error}` : '';
  return [
    `not delivered yet: ${delivery.id} is still ${delivery.status}${waitSeconds > 0 ? ` after waiting ${waitSeconds} s` : ''} (${attempts}${error}); the service keeps trying (${RETRIES})`,
    `check it later with: ${later} (free), or follow it longer with --wait SECONDS`,
  ].join('\n');
}

/** What to check after a failed delivery, the likeliest cause first. */
function failureHints(delivery: DeliveryState): string[] {
  const error = delivery.last_error ?? '';
  const reachable = `is \`seedline serve\` (or your receiver) running and reachable from the service at ${delivery.url}?`;
  const secret =
    "does the receiver verify with the Signal's webhook secret? For `seedline serve`: the file of `signals apply --secrets-out` named as webhooks.secrets_file, or the secret in webhooks.secrets";
  const path = 'is the path right? `seedline serve` answers on webhooks.path (default /webhooks)';
  const checks = /\b401\b/.test(error)
    ? [secret, reachable, path]
    : /\b(404|405|410)\b/.test(error)
      ? [path, reachable, secret]
      : [reachable, secret, path];
  return ['check:', ...checks.map((check) => `  - ${check}`)];
}

import { createHmac } from 'node:crypto';
import { expired } from './retention.js';
import type { SandboxState } from './state.js';

/** Delays between attempts after a failure, in virtual ms (1 m, 5 m, 30 m, 2 h, 6 h). */
export const RETRY_DELAYS_MS = [60_000, 300_000, 1_800_000, 7_200_000, 21_600_000] as const;
/** The receiver must answer within this many real milliseconds. */
const ACK_TIMEOUT_MS = 10_000;
/** Consecutive 404/410 answers after which a delivery stops and reports the endpoint gone. */
const GONE_AFTER = 2;

/** How a delivery ended. */
export type DeliveryOutcome = 'delivered' | 'failed' | 'gone';

/** An outgoing webhook delivery (the secret never leaves the sandbox). */
export interface DeliveryRecord {
  id: string;
  accountId: string;
  event: string;
  url: string;
  status: 'retrying' | 'delivered' | 'failed';
  attempts: number;
  created_at: string;
  delivered_at: string | null;
  last_error: string | null;
  /** Virtual instant the delivery became terminal (delivered or failed); null while retrying. Retention counts from it. */
  endedMs: number | null;
  /** Raw JSON body sent on every attempt. */
  body: string;
  secret: string;
  /** Consecutive 404/410 answers. */
  goneStreak: number;
  /** Called once when the delivery ends. */
  onFinal?: (outcome: DeliveryOutcome, record: DeliveryRecord) => void | Promise<void>;
  /** The attempt in flight, if any. */
  inFlight?: Promise<void>;
}

/** A delivery request. */
export interface EnqueueRequest {
  accountId: string;
  event: string;
  url: string;
  payload: unknown;
  secret: string;
  onFinal?: DeliveryRecord['onFinal'];
}

/** `X-Service-Signature` of a body: `t=<unix>,v1=<hex HMAC-SHA256 of "{t}.{body}">`. */
export function signPayload(secret: string, body: string, unixSeconds: number): string {
  const digest = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${digest}`;
}

/** Sends signed webhooks, retries them on the virtual clock, and keeps their records. */
export class WebhookDispatcher {
  private readonly records = new Map<string, DeliveryRecord>();

  constructor(private readonly state: SandboxState) {}

  /** Creates a delivery (`retrying`, 0 attempts) and starts its first attempt at once. */
  enqueue(request: EnqueueRequest): DeliveryRecord {
    const record: DeliveryRecord = {
      id: this.state.ids.resource('wh'),
      accountId: request.accountId,
      event: request.event,
      url: request.url,
      status: 'retrying',
      attempts: 0,
      created_at: this.state.clock.now().toISOString(),
      delivered_at: null,
      last_error: null,
      endedMs: null,
      body: JSON.stringify(request.payload),
      secret: request.secret,
      goneStreak: 0,
    };
    if (request.onFinal) record.onFinal = request.onFinal;
    this.dropExpired();
    this.records.set(record.id, record);
    record.inFlight = this.attempt(record);
    return record;
  }

  /** A delivery of `accountId`, or undefined (another organization's ids are not found either, nor expired records). */
  get(accountId: string, id: string): DeliveryRecord | undefined {
    this.dropExpired();
    const record = this.records.get(id);
    return record && record.accountId === accountId ? record : undefined;
  }

  /** Every retained delivery, oldest first (admin route). */
  all(): DeliveryRecord[] {
    this.dropExpired();
    return [...this.records.values()];
  }

  /** Forgets terminal records older than the retention window; retrying ones are always kept. */
  private dropExpired(): void {
    const now = this.state.clock.nowMs();
    for (const [id, record] of this.records)
      if (record.endedMs !== null && expired(record.endedMs, now)) this.records.delete(id);
  }

  /** Resolves when no attempt is in flight. */
  async idle(): Promise<void> {
    for (;;) {
      const pending = [...this.records.values()]
        .map((r) => r.inFlight)
        .filter((p): p is Promise<void> => p !== undefined);
      if (pending.length === 0) return;
      await Promise.all(pending);
    }
  }

  /** Public view of a delivery (GET /v1/webhook-deliveries/{id}). */
  view(record: DeliveryRecord): Record<string, unknown> {
    const { id, event, status, attempts, url, created_at, delivered_at, last_error } = record;
    return { id, event, status, attempts, url, created_at, delivered_at, last_error };
  }

  private async attempt(record: DeliveryRecord): Promise<void> {
    if (this.state.closed) return;
    // The signature carries real time, not virtual time, so a receiver's tolerance check against its own clock passes.
    const timestamp = Math.floor(Date.now() / 1000);
    let error: string | null = null;
    let gone = false;
    try {
      const response = await fetch(record.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-service-event': record.event,
          'x-service-signature': signPayload(record.secret, record.body, timestamp),
        },
        body: record.body,
        signal: AbortSignal.timeout(ACK_TIMEOUT_MS),
      });
      await response.arrayBuffer().catch(() => undefined);
      if (response.status < 200 || response.status > 299) {
        error = `receiver answered ${response.status}`;
        gone = response.status === 404 || response.status === 410;
      }
    } catch (cause) {
      // fetch says only "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND, a timeout) is on its cause.
      const reason = ((cause as Error).cause as { code?: unknown } | undefined)?.code;
      error = `delivery failed: ${(cause as Error).message}${typeof reason === 'string' ? ` (${reason})` : ''}`;
    }
    record.attempts++;
    record.inFlight = undefined;
    if (error === null) {
      record.status = 'delivered';
      record.endedMs = this.state.clock.nowMs();
      record.delivered_at = this.state.clock.now().toISOString();
      record.last_error = null;
      await record.onFinal?.('delivered', record);
      return;
    }
    record.last_error = error;
    record.goneStreak = gone ? record.goneStreak + 1 : 0;
    const delay = RETRY_DELAYS_MS[record.attempts - 1];
    if (record.goneStreak >= GONE_AFTER || delay === undefined) {
      record.status = 'failed';
      record.endedMs = this.state.clock.nowMs();
      await record.onFinal?.(record.goneStreak >= GONE_AFTER ? 'gone' : 'failed', record);
      return;
    }
    this.state.clock.schedule(this.state.clock.nowMs() + delay, () => {
      record.inFlight = this.attempt(record);
      return record.inFlight;
    });
  }
}

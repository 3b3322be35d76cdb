import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeIssues } from '../../schemas/common.js';
import type { Trigger } from '../../schemas/signal.js';
import { WebhookEvent } from '../../schemas/webhook.js';
import { DEFAULT_WEBHOOK_TOLERANCE_SECONDS, verifyWebhook } from '../client/webhook-signature.js';
import { eventNotice } from './event-notice.js';

/** Default path deliveries are accepted on. */
export const DEFAULT_WEBHOOK_PATH = '/webhooks';
/** Default largest body accepted, in bytes (1 MiB); a larger one is answered 413. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** Where verified deliveries go: the {@link TriggerLoader} in production. */
export interface DeliverySink {
  /** True when the Trigger was committed recently (a replay is answered 200 without a write). */
  isRecent(triggerId: string): boolean;
  /** Loads a Trigger; resolves once committed. */
  loadTrigger(trigger: Trigger): Promise<void>;
  /** Files an unreadable delivery in `_seedline_rejected`; resolves once committed. */
  reject(raw: string, table: string, reason: string): Promise<void>;
}

/** Options of {@link WebhookReceiver}. */
export interface WebhookReceiverOptions {
  /** Secrets that may have signed a delivery (any may match: rotation, one per Signal). */
  secrets: readonly string[];
  /** Where loaded Triggers and rejected deliveries go. */
  sink: DeliverySink;
  /** Path that accepts deliveries. Default: `/webhooks`. */
  path?: string;
  /** Accepted age of a signature's timestamp, in seconds. Default: 300. */
  toleranceSeconds?: number;
  /** Largest body accepted, in bytes. Default: 1 MiB. */
  maxBodyBytes?: number;
  /** Where the one-line notices go (never bodies or secrets). Default: stderr. */
  log?: (line: string) => void;
}

/** An answer to one delivery. */
interface Answer {
  status: number;
  text: string;
}

/**
 * The HTTP endpoint of `seedline serve`: POST only, raw body (at most 1 MiB), signature verified
 * against any configured secret, then parsed as a webhook event. A `signal.triggered` delivery is
 * committed to the `triggers` table *before* the 200, so a failure answers 5xx and the service
 * retries: nothing acknowledged is lost. An unreadable event is filed in `_seedline_rejected` and
 * answered 400; other events are reported as one line.
 *
 * @example
 * ```ts
 * const receiver = new WebhookReceiver({ secrets: ['whsec_…'], sink: loader });
 * const url = await receiver.listen(8788, '127.0.0.1'); // http://127.0.0.1:8788/webhooks
 * await receiver.close();
 * ```
 */
export class WebhookReceiver {
  private readonly server: Server;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly path: string;
  private readonly log: (line: string) => void;

  constructor(private readonly options: WebhookReceiverOptions) {
    this.path = options.path ?? DEFAULT_WEBHOOK_PATH;
    this.log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
    this.server = createServer((req, res) => {
      const handled = this.handle(req, res);
      this.inFlight.add(handled);
      void handled.finally(() => this.inFlight.delete(handled));
    });
  }

  /** Starts listening; resolves with the URL deliveries go to (port 0 picks a free port). */
  async listen(port: number, host: string): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => resolve());
    });
    const address = this.server.address() as AddressInfo;
    const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return `http://${shown}:${address.port}${this.path}`;
  }

  /** Stops accepting, lets the deliveries under way finish (and answer), then closes every connection. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    this.server.closeAllConnections();
    await closed;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let answer: Answer;
    try {
      answer = await this.answer(req);
    } catch (error) {
      // Not committed: a 5xx makes the service deliver again later.
      const reason = (error as Error).message.split('\n')[0] ?? 'unknown error';
      this.log(`webhook not loaded (503): ${reason}`);
      answer = { status: 503, text: `not loaded: ${reason}; deliver again later` };
    }
    const headers: Record<string, string> = { 'content-type': 'text/plain; charset=utf-8' };
    if (answer.status === 405) headers.allow = 'POST';
    // An oversized body is left unread: close the connection rather than drain it.
    if (answer.status === 413) headers.connection = 'close';
    res.writeHead(answer.status, headers).end(`${answer.text}\n`);
  }

  private async answer(req: IncomingMessage): Promise<Answer> {
    const pathname = new URL(req.url ?? '/', 'http://receiver').pathname;
    if (pathname !== this.path) return { status: 404, text: `not found: deliveries go to POST ${this.path}` };
    if (req.method !== 'POST') return { status: 405, text: `method ${req.method ?? '?'} not allowed: use POST` };
    const limit = this.options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    const body = await readBody(req, limit);
    if (body === undefined) return this.refuse(413, `body larger than ${limit} bytes`);

    const verified = verifyWebhook({
      header: req.headers['x-service-signature'],
      rawBody: body,
      secrets: this.options.secrets,
      toleranceSeconds: this.options.toleranceSeconds ?? DEFAULT_WEBHOOK_TOLERANCE_SECONDS,
    });
    if (!verified.ok) return this.refuse(401, `invalid signature (${verified.reason}): ${verified.message}`);

    const raw = body.toString('utf8');
    const parsed = parseEvent(raw);
    if (!parsed.ok) {
      await this.options.sink.reject(raw, parsed.table, parsed.reason);
      return this.refuse(400, `unreadable event, kept in _seedline_rejected: ${parsed.reason}`);
    }
    const event = parsed.event;
    if (event.event !== 'signal.triggered') {
      this.log(eventNotice(event));
      return { status: 200, text: 'ok' };
    }
    const { trigger } = event;
    if (this.options.sink.isRecent(trigger.trigger_id)) return { status: 200, text: `ok: trigger ${trigger.trigger_id} already loaded` };
    await this.options.sink.loadTrigger(trigger);
    this.log(`signal.triggered: loaded trigger ${trigger.trigger_id} of Signal ${trigger.signal_id} (check ${trigger.check_number})`);
    return { status: 200, text: `ok: trigger ${trigger.trigger_id} loaded` };
  }

  private refuse(status: number, reason: string): Answer {
    this.log(`webhook refused (${status}): ${reason}`);
    return { status, text: reason };
  }
}

type ParsedEvent = { ok: true; event: WebhookEvent } | { ok: false; table: string; reason: string };

function parseEvent(raw: string): ParsedEvent {
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
  return { ok: false, table: name === 'signal.triggered' ? 'triggers' : 'webhooks', reason: `event ${JSON.stringify(name ?? null).slice(0, 64)}: ${describeIssues(result.error)}` };
}

/** The raw body, or undefined once it exceeds `limit` bytes (declared or actual). */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  if (Number(req.headers['content-length'] ?? 0) > limit) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      req.off('data', onData);
      resolve(undefined);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkSignatureHeader, DEFAULT_WEBHOOK_TOLERANCE_SECONDS, verifyWebhook } from '../client/webhook-signature.js';
import { firstLine } from '../util/first-line.js';
import { logLine } from '../util/log.js';
import type { SpooledDelivery } from './delivery-spool.js';
import { eventNotice } from './event-notice.js';
import { deliveryKey, parseEvent } from './parse-event.js';

/** Default path deliveries are accepted on. */
export const DEFAULT_WEBHOOK_PATH = '/webhooks';
/** Default largest body accepted, in bytes (1 MiB); a larger one is answered 413. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
/** Default time a client has to send its request headers, in ms. */
export const DEFAULT_HEADERS_TIMEOUT_MS = 5_000;
/** Default time a client has to send its whole request, in ms (the service itself gives up after 10 s). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
/** Default requests handled at once; more are answered 503 at once (the service delivers them again later). */
export const DEFAULT_MAX_IN_FLIGHT = 256;

const NO_CANDIDATE =
  'no configured secret may have signed it (the Signal it names is not in webhooks.secrets_file, and webhooks.secrets is empty)';

/** Where verified deliveries go: the durable spool in production. */
export interface DeliverySink {
  /** Keeps a delivery durably; resolves true when queued, false when a duplicate is already queued. Rejects when it could not be kept. */
  accept(delivery: SpooledDelivery): Promise<boolean>;
}

/** Where the secrets that may have signed a delivery come from (the config and the secrets file in production). */
export interface SecretSource {
  /** The secrets to try for this raw, not yet verified body; the body only narrows the candidates, nothing in it is trusted before one verifies it. */
  forBody(rawBody: string): Promise<readonly string[]>;
}

/** Options of {@link WebhookReceiver}. */
export interface WebhookReceiverOptions {
  /** Secrets that may have signed a delivery (any may match: rotation, one per Signal), or where to pick them per delivery. */
  secrets: readonly string[] | SecretSource;
  /** Where accepted deliveries go. */
  sink: DeliverySink;
  /** Path that accepts deliveries. Default: `/webhooks`. */
  path?: string;
  /** Accepted age of a signature's timestamp, in seconds. Default: 300. */
  toleranceSeconds?: number;
  /** Largest body accepted, in bytes. Default: 1 MiB. */
  maxBodyBytes?: number;
  /** Time a client has to send its headers, in ms (then 408 and the connection closes). Default: 5,000. */
  headersTimeoutMs?: number;
  /** Time a client has to send its whole request, in ms (then 408). Default: 10,000. */
  requestTimeoutMs?: number;
  /** Requests handled at once; one more is answered 503 with `Retry-After` without reading its body. Default: 256. */
  maxInFlight?: number;
  /** Open connections at once; more are closed by the server as they arrive. Default: 4 × `maxInFlight`. */
  maxConnections?: number;
  /** Extra fields of the `GET /healthz` answer (e.g. deliveries waiting in the spool). Default: none. */
  health?: () => Promise<Record<string, unknown>>;
  /**
   * Pages answered to `GET <path>` (e.g. `/report`), made on each request, and only to requests
   * from this machine (loopback): the listener faces the service, the pages are the user's. Default: none.
   */
  pages?: Record<string, () => Promise<{ contentType: string; body: string }>>;
  /** Where the one-line notices go (never bodies or secrets). Default: stderr. */
  log?: (line: string) => void;
}

/** An answer to one request. */
interface Answer {
  status: number;
  text: string;
  json?: boolean;
  /** Content type other than text or JSON (a page). Default: by `json`. */
  contentType?: string;
}

/**
 * The HTTP endpoint of `seedline serve`: POST only, raw body (at most 1 MiB), signature verified
 * against any configured secret, then read as a webhook event and handed to the sink (the durable
 * spool) *before* the 2xx, so nothing acknowledged is lost; loading happens after the answer. A
 * sink that cannot keep it answers 503 and the service delivers again later. A signed body that
 * is not an event is kept too (it ends in `_seedline_rejected`) and answered 202: it is the
 * service's own, and a 4xx would only make it retry and then pause the Signal (`webhook_failing`).
 * An unsigned, stale, future or tampered one is answered 401 and kept nowhere. `GET /healthz`
 * answers 200.
 *
 * @example
 * ```ts
 * const receiver = new WebhookReceiver({ secrets: ['whsec_…'], sink: { accept: (d) => spool.put(d) } });
 * const url = await receiver.listen(8788, '127.0.0.1'); // http://127.0.0.1:8788/webhooks
 * await receiver.close();
 * ```
 */
export class WebhookReceiver {
  private readonly server: Server;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly path: string;
  private readonly log: (line: string) => void;
  private readonly maxInFlight: number;
  /** Whether the last request was turned away as one too many (logged once per burst). */
  private saturated = false;

  constructor(private readonly options: WebhookReceiverOptions) {
    this.path = options.path ?? DEFAULT_WEBHOOK_PATH;
    this.log = options.log ?? logLine;
    this.maxInFlight = Math.max(1, options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT);
    const headersTimeout = options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS;
    const requestTimeout = Math.max(headersTimeout, options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
    // Node checks both timeouts on this interval (30 s by default, far beyond them).
    const connectionsCheckingInterval = Math.max(50, Math.min(1_000, Math.floor(headersTimeout / 4)));
    this.server = createServer({ headersTimeout, requestTimeout, connectionsCheckingInterval }, (req, res) => {
      if (this.inFlight.size >= this.maxInFlight) return this.turnAway(res);
      this.saturated = false;
      const handled = this.handle(req, res);
      this.inFlight.add(handled);
      void handled.finally(() => this.inFlight.delete(handled));
    });
    this.server.maxConnections = options.maxConnections ?? 4 * this.maxInFlight;
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

  /** One request too many: 503 at once, body unread, connection closed; the service delivers it again later. */
  private turnAway(res: ServerResponse): void {
    if (!this.saturated)
      this.log(
        `webhook not accepted (503): ${this.maxInFlight} requests already in flight (webhooks.max_in_flight); the service delivers again later`,
      );
    this.saturated = true;
    res
      .writeHead(503, { 'content-type': 'text/plain; charset=utf-8', 'retry-after': '1', connection: 'close' })
      .end(`busy: ${this.maxInFlight} requests in flight; deliver again later\n`);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let answer: Answer;
    try {
      answer = await this.answer(req);
    } catch (error) {
      // Not kept: a 5xx makes the service deliver again later.
      const reason = firstLine(error);
      this.log(`webhook not accepted (503): ${reason}`);
      answer = { status: 503, text: `not accepted: ${reason}; deliver again later` };
    }
    const headers: Record<string, string> = {
      'content-type': answer.contentType ?? (answer.json ? 'application/json' : 'text/plain; charset=utf-8'),
    };
    if (answer.status === 405) headers.allow = 'POST';
    // An oversized body is left unread: close the connection rather than drain it.
    if (answer.status === 413) headers.connection = 'close';
    res.writeHead(answer.status, headers).end(`${answer.text}\n`);
  }

  private async answer(req: IncomingMessage): Promise<Answer> {
    const pathname = new URL(req.url ?? '/', 'http://receiver').pathname;
    if (pathname === '/healthz' && (req.method === 'GET' || req.method === 'HEAD')) {
      return { status: 200, json: true, text: JSON.stringify({ status: 'ok', ...(await this.options.health?.()) }) };
    }
    const page = this.options.pages?.[pathname];
    if (page && (req.method === 'GET' || req.method === 'HEAD')) {
      if (!isLoopback(req.socket.remoteAddress))
        return {
          status: 403,
          text: `${pathname} is served to this machine only (open it from the host serve runs on)`,
        };
      const { contentType, body } = await page();
      return { status: 200, text: body, contentType };
    }
    if (pathname !== this.path) return { status: 404, text: `not found: deliveries go to POST ${this.path}` };
    if (req.method !== 'POST') return { status: 405, text: `method ${req.method ?? '?'} not allowed: use POST` };
    const limit = this.options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    const body = await readBody(req, limit);
    if (body === undefined) return this.refuse(413, `body larger than ${limit} bytes`);

    const signature = {
      header: req.headers['x-service-signature'],
      toleranceSeconds: this.options.toleranceSeconds ?? DEFAULT_WEBHOOK_TOLERANCE_SECONDS,
    };
    // The header and its age first: a flood of stale or unsigned requests costs no HMAC.
    const header = checkSignatureHeader(signature);
    if (!header.ok) return this.refuse(401, `invalid signature (${header.reason}): ${header.message}`);
    const raw = body.toString('utf8');
    const source = this.options.secrets;
    const secrets = isSecretSource(source) ? await source.forBody(raw) : source;
    const verified = verifyWebhook({ ...signature, rawBody: body, secrets });
    if (!verified.ok)
      return this.refuse(
        401,
        `invalid signature (${verified.reason}): ${verified.reason === 'no_secret' ? NO_CANDIDATE : verified.message}`,
      );

    const parsed = parseEvent(raw);
    const delivery: SpooledDelivery = {
      key: deliveryKey(parsed, raw, verified.timestamp),
      event: parsed.ok ? parsed.event.event : 'unreadable',
      receivedAt: new Date().toISOString(),
      raw,
    };
    if (!parsed.ok) {
      await this.options.sink.accept({ ...delivery, rejected: { table: parsed.table, reason: parsed.reason } });
      this.log(
        `webhook kept for _seedline_rejected (202): signed, but not an event this receiver reads: ${parsed.reason}`,
      );
      return { status: 202, text: `accepted: kept for _seedline_rejected (${parsed.reason})` };
    }
    const event = parsed.event;
    const named = req.headers['x-service-event'];
    // The header is not signed, the body is: the body decides, the mismatch is only reported.
    if (typeof named === 'string' && named !== event.event)
      this.log(
        `warning: X-Service-Event says ${JSON.stringify(named.slice(0, 64))} but the signed body is ${event.event}: read as ${event.event}`,
      );
    const queued = await this.options.sink.accept(delivery);
    if (event.event === 'signal.triggered') {
      const { trigger } = event;
      if (queued)
        this.log(
          `signal.triggered: queued trigger ${trigger.trigger_id} of Signal ${trigger.signal_id} (check ${trigger.check_number})`,
        );
      return { status: 200, text: `ok: trigger ${trigger.trigger_id} ${queued ? 'queued' : 'already queued'}` };
    }
    if (queued) this.log(eventNotice(event));
    return { status: 200, text: queued ? 'ok' : 'ok: already queued' };
  }

  private refuse(status: number, reason: string): Answer {
    this.log(`webhook refused (${status}): ${reason}`);
    return { status, text: reason };
  }
}

function isSecretSource(secrets: readonly string[] | SecretSource): secrets is SecretSource {
  return !Array.isArray(secrets);
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

/** Whether a request came from this machine. */
function isLoopback(address: string | undefined): boolean {
  return address === '::1' || address?.startsWith('127.') === true || address?.startsWith('::ffff:127.') === true;
}

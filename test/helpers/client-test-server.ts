import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request the test server received. */
export interface RecordedRequest {
  method: string;
  /** Path and query. */
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Answers one request; may write anything, including a broken body. */
export type Responder = (req: RecordedRequest, res: ServerResponse) => void;

/**
 * A tiny scriptable HTTP server on 127.0.0.1, port 0, for client tests: each request is recorded
 * and answered by the next queued responder for its path (or the fallback).
 */
export class ClientTestServer {
  readonly requests: RecordedRequest[] = [];
  readonly #queues = new Map<string, Responder[]>();
  #fallback: Responder = notFound;

  private constructor(private readonly server: Server) {}

  static async start(): Promise<ClientTestServer> {
    const server = createServer();
    const instance = new ClientTestServer(server);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const recorded: RecordedRequest = {
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        };
        instance.requests.push(recorded);
        const path = recorded.url.split('?')[0] ?? '';
        const responder = instance.#queues.get(path)?.shift() ?? instance.#fallback;
        responder(recorded, res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return instance;
  }

  get baseUrl(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** Queues responders for a path, used once each in order. */
  on(path: string, ...responders: Responder[]): this {
    const queue = this.#queues.get(path) ?? [];
    queue.push(...responders);
    this.#queues.set(path, queue);
    return this;
  }

  /** Answers every request without a queued responder. */
  otherwise(responder: Responder): this {
    this.#fallback = responder;
    return this;
  }

  requestsTo(path: string): RecordedRequest[] {
    return this.requests.filter((r) => r.url.split('?')[0] === path);
  }

  /** Forgets requests, queued responders and the fallback. */
  reset(): void {
    this.requests.length = 0;
    this.#queues.clear();
    this.#fallback = notFound;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const notFound: Responder = (_req, res) =>
  json(res, 404, { error: { type: 'not_found', message: 'no responder', requestId: 'req_404' } });

/** Writes a JSON answer. */
export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** A success envelope responder. */
export function ok(data: unknown, meta: Record<string, unknown> = {}, status = 200): Responder {
  return (_req, res) => json(res, status, { data, meta: { requestId: 'req_ok', ...meta } });
}

/** An error envelope responder. */
export function fail(
  status: number,
  type: string,
  message = `${type} happened`,
  headers: Record<string, string> = {},
): Responder {
  return (_req, res) => json(res, status, { error: { type, message, requestId: `req_${status}` } }, headers);
}

/** An account record as GET /v1/account returns it. */
export function accountRecord(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    account_id: 'acc_123',
    volume_band: 'growth',
    credits_remaining: 1_000,
    credits_used_this_month: 25,
    price_per_1k_credits_usd: 9.5,
    rate_limit: { requests_per_minute: 120, concurrent_batch_jobs: 3 },
    signals: { active: 2, paused: 1, estimated_monthly_credits: 60 },
    ...overrides,
  };
}

/** A JWT-shaped token with the given `exp` (unix seconds); the signature part is not real. */
export function fakeJwt(exp: number, extra: Record<string, unknown> = {}): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ exp, ...extra })}.c2ln`;
}

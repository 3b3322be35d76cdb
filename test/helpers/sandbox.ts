import { afterAll, beforeAll } from 'vitest';
import { startSandbox } from '../../src/sandbox/index.js';
import type { Sandbox, SandboxOptions } from '../../src/sandbox/index.js';
import { timeLimit } from './time-limits.js';

/** A test key (fixtures, zero spend). */
export const TEST_KEY = 'svc_test_contract';
/** A billed key. */
export const LIVE_KEY = 'svc_live_contract';

/** A parsed HTTP answer. */
export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/** Options of one call. */
export interface CallOptions {
  method?: string;
  body?: unknown;
  /** API key (default {@link TEST_KEY}); null sends none. */
  key?: string | null;
  headers?: Record<string, string>;
}

/** A sandbox plus a tiny fetch wrapper bound to it. */
export interface SandboxHarness {
  sandbox: Sandbox;
  call<T = any>(path: string, options?: CallOptions): Promise<ApiResponse<T>>;
  post<T = any>(path: string, body: unknown, options?: CallOptions): Promise<ApiResponse<T>>;
  get<T = any>(path: string, options?: CallOptions): Promise<ApiResponse<T>>;
}

/** Starts a sandbox on port 0 and returns it with helpers; close it in afterAll. */
export async function startHarness(options: SandboxOptions = {}): Promise<SandboxHarness> {
  const sandbox = await startSandbox(options);
  const call = async <T>(path: string, opts: CallOptions = {}): Promise<ApiResponse<T>> => {
    const headers: Record<string, string> = { ...opts.headers };
    const key = opts.key === undefined ? TEST_KEY : opts.key;
    if (key !== null) headers['x-api-key'] = key;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${sandbox.url}${path}`, {
      method: opts.method ?? (opts.body === undefined ? 'GET' : 'POST'),
      headers,
      body: opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body),
    });
    const text = await response.text();
    return { status: response.status, body: text === '' ? undefined : JSON.parse(text), headers: response.headers };
  };
  return {
    sandbox,
    call,
    post: (path, body, opts = {}) => call(path, { ...opts, body, method: opts.method ?? 'POST' }),
    get: (path, opts = {}) => call(path, { ...opts, method: 'GET' }),
  };
}

/** Registers beforeAll/afterAll hooks that start and close one sandbox for the file; the harness is usable inside tests. */
export function useHarness(options: SandboxOptions = {}): SandboxHarness {
  let current: SandboxHarness | undefined;
  beforeAll(async () => {
    current = await startHarness(options);
  });
  afterAll(async () => {
    await current?.sandbox.close();
  });
  const need = (): SandboxHarness => {
    if (!current) throw new Error('the sandbox starts in beforeAll; use the harness inside tests');
    return current;
  };
  return {
    get sandbox() {
      return need().sandbox;
    },
    call: (path, opts) => need().call(path, opts),
    post: (path, body, opts) => need().post(path, body, opts),
    get: (path, opts) => need().get(path, opts),
  };
}

/** How {@link eventually} polls. */
export interface EventuallyOptions {
  /** Milliseconds between probes. Default: 10. */
  every?: number;
  /** Milliseconds after which the wait is called hung, scaled by `SEEDLINE_TEST_TIME_FACTOR`. Default: 60,000. */
  limit?: number;
}

/**
 * Waits until `probe` returns a truthy value: the wait is for that event, and the limit is only a
 * safety net against a hang (see test/helpers/time-limits.ts), far above what the event needs.
 */
export async function eventually<T>(
  probe: () => Promise<T | undefined | null | false>,
  { every = 10, limit = 60_000 }: EventuallyOptions = {},
): Promise<T> {
  const scaled = timeLimit(limit);
  const deadline = Date.now() + scaled;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline)
      throw new Error(`condition not met in ${scaled} ms (SEEDLINE_TEST_TIME_FACTOR scales it)`);
    await new Promise((resolve) => setTimeout(resolve, every));
  }
}

/** A request the test receiver got. */
export interface ReceivedWebhook {
  url: string;
  headers: Record<string, string | string[] | undefined>;
  raw: string;
  body: any;
}

/** A local webhook receiver recording every request; `status` decides the answer (default 200). */
export interface WebhookReceiver {
  url: string;
  received: ReceivedWebhook[];
  status: number;
  close(): Promise<void>;
}

/** Starts a webhook receiver on a free loopback port. */
export async function startReceiver(): Promise<WebhookReceiver> {
  const { createServer } = await import('node:http');
  const receiver: WebhookReceiver = { url: '', received: [], status: 200, close: async () => undefined };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      receiver.received.push({ url: req.url ?? '/', headers: req.headers, raw, body: JSON.parse(raw) });
      res.writeHead(receiver.status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address() as { port: number };
  receiver.url = `http://127.0.0.1:${address.port}`;
  receiver.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return receiver;
}

/** Verifies `X-Service-Signature` (`t=…,v1=…`) with node:crypto, as a receiver would. */
export async function verifySignature(
  secret: string,
  header: string | string[] | undefined,
  raw: string,
): Promise<boolean> {
  const { createHmac, timingSafeEqual } = await import('node:crypto');
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(header));
  if (!match) return false;
  const expected = createHmac('sha256', secret).update(`${match[1]}.${raw}`).digest();
  return (
    timingSafeEqual(expected, Buffer.from(match[2] as string, 'hex')) &&
    Math.abs(Date.now() / 1000 - Number(match[1])) <= 300
  );
}

/**
 * Makes a Signal's next check a match: it is held paused while its profile drifts (61 virtual
 * days), resumed and checked now; answers the delivery id of the Trigger event, once the
 * sandbox is idle (the first attempt made).
 */
export async function matchAfterDrift(h: SandboxHarness, id: string, key: string): Promise<string> {
  await h.post(`/v1/signals/${id}/pause`, undefined, { key });
  await h.sandbox.clock.advance(61 * 86_400_000);
  await h.post(`/v1/signals/${id}/resume`, undefined, { key });
  const check = await h.post(`/v1/signals/${id}/check-now`, undefined, { key });
  if (check.body.data.status !== 'matched')
    throw new Error(`expected the check after the drift to match, got ${String(check.body.data.status)}`);
  await h.sandbox.idle();
  return check.body.data.webhook.delivery_id as string;
}

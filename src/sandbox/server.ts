import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { SandboxAccount } from './accounts.js';
import { SandboxError } from './errors.js';
import type { RequestContext } from './http.js';
import { verifyJwt } from './jwt.js';
import type { RateDecision } from './rate-limit.js';
import type { Router } from './router.js';
import { handleAdmin } from './routes/admin.js';
import { handleTokenExchange } from './routes/auth.js';
import type { SandboxState } from './state.js';

const JSON_TYPE = 'application/json; charset=utf-8';

function send(
  res: ServerResponse,
  status: number,
  payload: unknown,
  headers: Record<string, string | number> = {},
): void {
  const body = JSON.stringify(payload);
  res.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** Writes an error envelope. */
export function sendError(
  res: ServerResponse,
  error: SandboxError,
  requestId: string,
  headers: Record<string, string | number> = {},
): void {
  const all: Record<string, string | number> = { ...headers, 'x-request-id': requestId };
  if (error.retryAfter !== undefined) all['retry-after'] = error.retryAfter;
  send(res, error.status, { error: { type: error.type, message: error.message, requestId, ...error.extra } }, all);
}

/** Reads the raw body. */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(chunks.length === 0 ? '' : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Parses a JSON body; undefined when empty; 400 when malformed. */
export function parseJson(raw: string): unknown {
  if (raw.trim() === '') return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    throw new SandboxError('invalid_request', 'the body is not valid JSON');
  }
}

function authenticate(state: SandboxState, req: IncomingMessage): SandboxAccount {
  const key = req.headers['x-api-key'];
  if (typeof key === 'string') {
    const account = state.accounts.forKey(key);
    if (account) return account;
    throw new SandboxError('invalid_api_key', 'the API key is missing, malformed or revoked');
  }
  const token = req.headers.authorization;
  if (typeof token === 'string' && token.length > 0) {
    const claims = verifyJwt(token.replace(/^Bearer\s+/i, ''), state.jwtSecret, Math.floor(state.clock.nowMs() / 1000));
    const account = claims ? state.accounts.byId(claims.sub) : undefined;
    if (account) return account;
    throw new SandboxError('invalid_api_key', 'the access token is invalid or expired');
  }
  throw new SandboxError('invalid_api_key', 'no API key: send X-API-Key or an access token in Authorization');
}

function rateHeaders(decision: RateDecision): Record<string, number> {
  return {
    'x-ratelimit-limit': decision.limit,
    'x-ratelimit-remaining': decision.remaining,
    'x-ratelimit-reset': decision.resetAt,
  };
}

async function handleV1(
  state: SandboxState,
  router: Router,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  query: string,
  requestId: string,
): Promise<void> {
  let headers: Record<string, number> = {};
  try {
    const account = authenticate(state, req);
    const method = req.method ?? 'GET';
    // GET /v1/account "may be polled freely": it reports the window without counting against it.
    const decision = state.limiter.hit(account.id, Date.now(), !(method === 'GET' && path === '/v1/account'));
    headers = rateHeaders(decision);
    if (!decision.allowed)
      throw new SandboxError('rate_limited', `more than ${decision.limit} requests per minute`, decision.retryAfter);
    const route = router.match(method, path);
    const raw = await readBody(req);
    if (!route) throw new SandboxError('not_found', `no such endpoint: ${method} ${path}`);
    const context: RequestContext = {
      state,
      account,
      requestId,
      method,
      path,
      params: route.params,
      query: new URLSearchParams(query),
      headers: req.headers,
      body: parseJson(raw),
    };
    const reply = await route.handler(context);
    send(
      res,
      reply.status ?? 200,
      { data: reply.data, meta: { ...reply.meta, requestId } },
      { ...headers, 'x-request-id': requestId },
    );
  } catch (error) {
    const known = error instanceof SandboxError ? error : new SandboxError('internal_error', 'internal error');
    if (!(error instanceof SandboxError)) console.error('[sandbox]', error);
    if (known.status === 429) state.rateLimitedAnswers++;
    sendError(res, known, requestId, headers);
  }
}

/** The HTTP server of the sandbox: admin routes, token exchange, OpenAPI document, then `/v1`. */
export function createSandboxServer(state: SandboxState, router: Router, openapi: () => string): Server {
  const server = createServer((req, res) => {
    const requestId = state.ids.request();
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const query = q < 0 ? '' : url.slice(q + 1);
    if (path.startsWith('/v1/') || path === '/v1') {
      void handleV1(
        state,
        router,
        req,
        res,
        path.length > 4 && path.endsWith('/') ? path.slice(0, -1) : path,
        query,
        requestId,
      );
    } else if (path.startsWith('/__sandbox/')) {
      void handleAdmin(state, req, res, path, query, requestId);
    } else if (path === '/api/api-auth/authenticate' && req.method === 'POST') {
      void handleTokenExchange(state, req, res, requestId);
    } else if (path === '/openapi.json' && req.method === 'GET') {
      const body = openapi();
      res.writeHead(200, {
        'content-type': JSON_TYPE,
        'content-length': Buffer.byteLength(body),
        'x-request-id': requestId,
      });
      res.end(body);
    } else {
      sendError(res, new SandboxError('not_found', `no such endpoint: ${req.method} ${path}`), requestId);
    }
  });
  server.keepAliveTimeout = 65_000;
  return server;
}

export { send };

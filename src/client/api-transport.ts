import { Agent } from 'undici';
import type { z } from 'zod';
import { describeIssues, TokenExchangeResponse } from '../../schemas/index.js';
import { boundedRequest, DEFAULT_CALL_DEADLINE_MS, DEFAULT_MAX_ANSWER_BYTES } from './bounded-request.js';
import type { AnswerLimits } from './bounded-request.js';
import type { CreditMeter } from './credit-meter.js';
import {
  CallAbortedError,
  InvalidApiKeyError,
  RateLimitedError,
  RequestValidationError,
  SeedlineClientError,
} from './errors.js';
import type { RateLimiter } from './rate-limiter.js';
import { parseResponse } from './response-parser.js';
import type { ApiResponse } from './response-parser.js';
import { isRateLimit, isRetryableUnbilled, resolveRetryPolicy, withRetry } from './retry.js';
import type { RetryPolicy } from './retry.js';
import { TokenProvider } from './token-provider.js';
import { MAX_TIMER_MS, positive, queryString, relayStop, type Query, type StopRelay } from './call-helpers.js';
import type { ApiClientOptions, ClientEvent } from './client-options.js';

/** One call as {@link ApiTransport.send} sends it. */
export interface CallSpec<S extends z.ZodType> {
  /** Its name in events, errors and credit reports (`enrichProfile`). */
  operation: string;
  /** The HTTP method. */
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** The path below the base URL, segments already escaped. */
  path: string;
  /** Schema of the answer's `data` (of the whole answer when `bare`). */
  schema: S;
  /** Query parameters; absent values are left out. Default: none. */
  query?: Query;
  /** Sent as JSON. Default: no body. */
  body?: unknown;
  /** Checked against `body` before sending (unless the client was made with `validateRequests: false`). Default: no check. */
  bodySchema?: z.ZodType;
  /** Sent as `Idempotency-Key`, the same on every retry. Default: none. */
  idempotencyKey?: string;
  /** Waits for a `concurrent_batch_jobs` slot of the limiter first. Default false. */
  batchSubmission?: boolean;
  /** Sent without the key or token (the token exchange itself). Default false. */
  unauthenticated?: boolean;
  /** The answer has no `{ data, meta }` envelope; `meta` is synthesized and no credits are recorded. Default false. */
  bare?: boolean;
  /** Billed, with no Idempotency-Key: retried only after an answer that says it was not processed ({@link isRetryableUnbilled}). Default false. */
  billed?: boolean;
  /** Not safe to send twice even after a 5xx (check-now may have run): only a 429, refused unprocessed, is retried. Default false. */
  once?: boolean;
  /**
   * Reads the text of a whole 2xx body instead of the parser (elsewhere: a worker thread), with
   * the envelope's `meta` validated as the parser would. Null when it cannot: the parser then reads
   * the body, and throws what it finds wrong. Default: the parser reads every answer.
   */
  decode?: (text: string) => Promise<ApiResponse<z.output<S>> | null>;
}

/** What an {@link ApiTransport} shares with the client it sends for. */
export interface TransportLinks {
  /** The limiter every attempt passes through. */
  limiter: RateLimiter;
  /** Where the credits of each enveloped answer are recorded. */
  credits: CreditMeter;
  /** Called when an attempt is answered 429, before its retry waits. */
  onRateLimited: () => void;
}

/**
 * How every call of {@link ApiClient} reaches the service: request check, auth (key or exchanged
 * token), rate limit, bounded attempts with retries, stop signal, events and credit metering. It
 * holds the API key, so no other part of the client does.
 */
export class ApiTransport {
  /** The base address without a trailing slash. */
  readonly baseUrl: string;

  readonly #apiKey: string;
  readonly #auth: 'api-key' | 'token';
  readonly #retry: RetryPolicy;
  readonly #timeoutMs: number;
  readonly #limits: AnswerLimits;
  readonly #stop: StopRelay;
  readonly #onEvent: ((event: ClientEvent) => void) | undefined;
  readonly #validate: boolean;
  readonly #agent: Agent;
  readonly #tokens: TokenProvider;
  readonly #origin: string;
  readonly #links: TransportLinks;

  constructor(options: ApiClientOptions, links: TransportLinks) {
    let url: URL;
    try {
      url = new URL(options.baseUrl);
    } catch {
      throw new RangeError(
        `The base URL must be an absolute http(s) URL such as http://127.0.0.1:4010 (check --base-url)`,
      );
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new RangeError('The base URL must use http or https (check --base-url)');
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#origin = url.origin;
    this.#apiKey = options.apiKey;
    this.#auth = options.auth ?? 'api-key';
    this.#retry = resolveRetryPolicy(options.retry);
    this.#timeoutMs = options.timeoutMs ?? 300_000;
    this.#onEvent = options.onEvent;
    this.#validate = options.validateRequests ?? true;
    this.#links = links;
    this.#stop = relayStop(options.signal);
    this.#limits = {
      maxAnswerBytes: positive(options.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES, 'maxAnswerBytes'),
      deadlineMs: positive(options.callDeadlineMs ?? DEFAULT_CALL_DEADLINE_MS, 'callDeadlineMs', MAX_TIMER_MS),
      signal: this.#stop.signal,
    };
    this.#agent = new Agent({ headersTimeout: this.#timeoutMs, bodyTimeout: this.#timeoutMs });
    this.#tokens = new TokenProvider(() => this.#exchange().then((r) => r.data.accessToken), {
      safetyMarginMs: options.tokenSafetyMarginMs ?? 5 * 60 * 1000,
      onExchanged: (expiresAt) => this.#emit({ type: 'token-exchanged', expiresAt }),
    });
  }

  /** Exchanges the API key for an access token, and caches the token for later calls made with `auth: 'token'`. */
  async exchangeToken(): Promise<ApiResponse<z.output<typeof TokenExchangeResponse>>> {
    const answer = await this.#exchange();
    this.#tokens.set(answer.data.accessToken);
    return answer;
  }

  /** Stops following the caller's stop signal and closes the connection pool. */
  async close(): Promise<void> {
    this.#stop.dispose();
    await this.#agent.close();
  }

  #exchange(): Promise<ApiResponse<z.output<typeof TokenExchangeResponse>>> {
    return this.send({
      operation: 'exchangeToken',
      method: 'POST',
      path: '/api/api-auth/authenticate',
      body: { apiKey: this.#apiKey },
      schema: TokenExchangeResponse,
      unauthenticated: true,
      bare: true,
    });
  }

  /** Sends one call, retried as its spec allows, and records the credits its answer reports. */
  async send<S extends z.ZodType>(spec: CallSpec<S>): Promise<ApiResponse<z.output<S>>> {
    if (this.#validate && spec.bodySchema) {
      const checked = spec.bodySchema.safeParse(spec.body);
      if (!checked.success)
        throw new RequestValidationError({ operation: spec.operation, reason: describeIssues(checked.error) });
    }
    const payload = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    const run = async () => {
      const useToken = this.#auth === 'token' && !spec.unauthenticated;
      let token = useToken ? await this.#tokens.get() : undefined;
      try {
        return await this.#withRetries(spec, payload, token);
      } catch (error) {
        // An expired or revoked token: exchange once more and repeat, once.
        if (!useToken || !(error instanceof InvalidApiKeyError)) throw error;
        this.#tokens.invalidate(token);
        token = await this.#tokens.get();
        return await this.#withRetries(spec, payload, token);
      }
    };
    let answer: ApiResponse<z.output<S>>;
    try {
      answer = spec.batchSubmission
        ? await this.#links.limiter.scheduleBatchSubmission(run, this.#stop.signal)
        : await run();
    } catch (error) {
      throw this.#stopped(error, spec.operation);
    }
    if (!spec.bare) this.#links.credits.record(spec.operation, answer.meta);
    return answer;
  }

  /** A stop that ended a wait (rate limit, batch slot, backoff) surfaces as {@link CallAbortedError}: nothing was on the wire. */
  #stopped(error: unknown, operation: string): unknown {
    const signal = this.#stop.signal;
    return signal?.aborted && error === signal.reason
      ? new CallAbortedError({ operation, maybeProcessed: false, cause: error })
      : error;
  }

  #withRetries<S extends z.ZodType>(
    spec: CallSpec<S>,
    payload: string | undefined,
    token: string | undefined,
  ): Promise<ApiResponse<z.output<S>>> {
    return withRetry((attempt) => this.#attempt(spec, payload, token, attempt), {
      policy: this.#retry,
      limiter: this.#links.limiter,
      ...(this.#stop.signal ? { signal: this.#stop.signal } : {}),
      ...(spec.once ? { retryable: isRateLimit } : spec.billed ? { retryable: isRetryableUnbilled } : {}),
      onRetry: ({ attempt, delayMs, error }) => {
        if (error instanceof RateLimitedError) this.#links.onRateLimited();
        this.#emit({
          type: 'retry',
          operation: spec.operation,
          attempt,
          delayMs,
          code: error instanceof SeedlineClientError ? error.code : 'UNKNOWN',
        });
      },
    });
  }

  async #attempt<S extends z.ZodType>(
    spec: CallSpec<S>,
    payload: string | undefined,
    token: string | undefined,
    attempt: number,
  ): Promise<ApiResponse<z.output<S>>> {
    this.#emit({ type: 'request', operation: spec.operation, method: spec.method, path: spec.path, attempt });
    const started = Date.now();
    const raw = await boundedRequest(
      this.baseUrl + spec.path + queryString(spec.query),
      {
        method: spec.method,
        headers: this.#headers(spec, payload, token),
        body: payload,
        dispatcher: this.#agent,
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
      },
      { operation: spec.operation, origin: this.#origin, limits: this.#limits },
    );
    const requestIdHeader = raw.headers['x-request-id'];
    this.#emit({
      type: 'response',
      operation: spec.operation,
      method: spec.method,
      path: spec.path,
      attempt,
      status: raw.status,
      durationMs: Date.now() - started,
      requestId: Array.isArray(requestIdHeader) ? requestIdHeader[0] : requestIdHeader,
    });
    if (spec.decode && raw.status >= 200 && raw.status < 300 && raw.bodyError === undefined) {
      const decoded = await spec.decode(
        Buffer.from(raw.body.buffer, raw.body.byteOffset, raw.body.byteLength).toString('utf8'),
      );
      if (decoded) {
        decoded.meta.requestId ??= Array.isArray(requestIdHeader) ? requestIdHeader[0] : requestIdHeader;
        return decoded;
      }
    }
    return parseResponse(raw, {
      operation: spec.operation,
      schema: spec.schema,
      bare: spec.bare ?? false,
      secrets: [this.#apiKey, token],
    });
  }

  #headers(spec: CallSpec<z.ZodType>, payload: string | undefined, token: string | undefined): Record<string, string> {
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'seedline/0.1' };
    if (payload !== undefined) headers['content-type'] = 'application/json';
    if (!spec.unauthenticated) {
      if (token !== undefined) headers.authorization = token;
      else headers['x-api-key'] = this.#apiKey;
    }
    if (spec.idempotencyKey !== undefined) headers['idempotency-key'] = spec.idempotencyKey;
    return headers;
  }

  #emit(event: ClientEvent): void {
    if (!this.#onEvent) return;
    try {
      this.#onEvent(event);
    } catch {
      // An observer's bug must not break a paid call.
    }
  }
}

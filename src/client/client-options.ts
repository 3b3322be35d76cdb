import type { RateLimiter } from './rate-limiter.js';
import type { RetryPolicy } from './retry.js';

/** Options of {@link ApiClient}. */
export interface ApiClientOptions {
  /** Base address of the service, e.g. `https://api.example.com` or the sandbox's `http://127.0.0.1:PORT`. */
  baseUrl: string;
  /** The API key. Never logged and never part of an error message. */
  apiKey: string;
  /** `api-key` sends `X-API-Key`; `token` exchanges the key for a 24 h access token sent as the whole `Authorization` header. Default `api-key`. */
  auth?: 'api-key' | 'token';
  /** Overrides of the retry policy. Default {@link DEFAULT_RETRY_POLICY} (6 attempts, 5 min total wait). */
  retry?: Partial<RetryPolicy>;
  /** Limiter shared by every attempt. Default: a new unlimited {@link RateLimiter} ({@link ApiClient.connect} configures it from the account). */
  limiter?: RateLimiter;
  /** Per-attempt timeout for the headers and between body chunks. Default 300 000 ms (searches paginate server-side). */
  timeoutMs?: number;
  /**
   * Most bytes one answer may have: a longer body is cut off as it streams in, never buffered past
   * the cap, and the attempt fails with {@link AnswerTooLargeError}. Default {@link DEFAULT_MAX_ANSWER_BYTES} (64 MiB).
   */
  maxAnswerBytes?: number;
  /**
   * Time one attempt may take, headers and body together; a later answer fails it with
   * {@link AnswerOverdueError}. Each retry gets the whole deadline again. Default {@link DEFAULT_CALL_DEADLINE_MS} (120 000 ms).
   */
  callDeadlineMs?: number;
  /**
   * A stop request: when it aborts, every call in flight, waiting for the rate limit or between
   * retries ends at once with {@link CallAbortedError}, and so does every later call. Default: none.
   */
  signal?: AbortSignal;
  /** Observer of requests, answers, retries and token exchanges (no secrets in events). Default: none. */
  onEvent?: (event: ClientEvent) => void;
  /** Check request bodies against the strict request schemas before sending. Default true. */
  validateRequests?: boolean;
  /** Re-exchange the access token this long before its `exp`. Default 300 000 ms. */
  tokenSafetyMarginMs?: number;
}

/** What the client reports through `onEvent`. Contains no key, token or secret. */
export type ClientEvent =
  | { type: 'request'; operation: string; method: string; path: string; attempt: number }
  | {
      type: 'response';
      operation: string;
      method: string;
      path: string;
      attempt: number;
      status: number;
      durationMs: number;
      requestId?: string | undefined;
    }
  | { type: 'retry'; operation: string; attempt: number; delayMs: number; code: string }
  | { type: 'token-exchanged'; expiresAt: number };

/** Variants of the people and company searches. */
export type SearchVariant = 'default' | 'sales-nav' | 'standard';

/** Options of calls that accept an Idempotency-Key. */
export interface IdempotencyOptions {
  /** The key; retries of one call always reuse it. Default: a random UUID per call. */
  idempotencyKey?: string;
}

/** A call by method and path (see {@link ApiClient.request}). */
export interface GenericRequest {
  method: 'GET' | 'POST';
  path: string;
  body?: Record<string, unknown>;
  query?: Record<string, unknown>;
  /** Whether the service bills the call (it then goes without retries after an answer that may have been processed). */
  billed: boolean;
}

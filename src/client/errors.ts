import type { ErrorType } from '../../schemas/index.js';

/**
 * Errors of the API client. Every class carries a stable `code` (`SEEDLINE_…`) and a message that
 * says what to do next. No message ever contains an API key, an access token or a webhook secret:
 * service-provided text and body snippets pass through {@link redactSecrets} first.
 *
 * @example
 * ```ts
 * try {
 *   await client.enrichProfile({ url: 'jane-doe' });
 * } catch (error) {
 *   if (error instanceof UnprocessableTargetError) markSkipped(error.requestId);
 *   else throw error;
 * }
 * ```
 */
export abstract class SeedlineClientError extends Error {
  /** Stable machine-readable code, e.g. `SEEDLINE_RATE_LIMITED`. */
  abstract readonly code: string;
  /** Whether the retry loop may try the same request again. */
  abstract readonly retryable: boolean;

  protected constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** What the client knows about an error answer of the service. */
export interface ServiceErrorInit {
  /** HTTP status of the answer. */
  status: number;
  /** `error.type` of the envelope; for answers without one, a type derived from the status. */
  type: string;
  /** `error.message` of the envelope, already redacted. Default: empty. */
  serviceMessage?: string;
  /** `error.requestId` (or the `X-Request-Id` header). Default: undefined. */
  requestId?: string | undefined;
  /** `Retry-After` in milliseconds when the service sent one. Default: undefined. */
  retryAfterMs?: number | undefined;
}

/** An error answer of the service (`{ error: { type, message, requestId } }`). */
export class ServiceError extends SeedlineClientError {
  /** Stable code; subclasses fix it per error type. Unknown types: `SEEDLINE_CLIENT_ERROR` (4xx) or `SEEDLINE_SERVER_ERROR` (5xx). */
  readonly code: string;
  /** Whether the retry loop may try again. Unknown types: false. */
  readonly retryable: boolean;
  /** HTTP status. */
  readonly status: number;
  /** The service's `error.type` (kept verbatim, even when unknown). */
  readonly type: string;
  /** The service's request id, for support tickets. Undefined when the service sent none. */
  readonly requestId: string | undefined;
  /** The service's own message (redacted). */
  readonly serviceMessage: string;
  /** `Retry-After` in milliseconds; undefined when absent. */
  readonly retryAfterMs: number | undefined;

  constructor(init: ServiceErrorInit, options: { code?: string; retryable?: boolean; summary?: string; advice?: string } = {}) {
    const serviceMessage = init.serviceMessage ?? '';
    const isServer = init.status >= 500;
    const summary = options.summary ?? `The service answered ${init.status} ${init.type}`;
    const advice = options.advice ?? (isServer ? 'Retry later; if it persists, contact support with the request id.' : 'Check the request; retrying it unchanged will not help.');
    super(composeMessage(summary, init, serviceMessage, advice));
    this.code = options.code ?? (isServer ? 'SEEDLINE_SERVER_ERROR' : 'SEEDLINE_CLIENT_ERROR');
    this.retryable = options.retryable ?? false;
    this.status = init.status;
    this.type = init.type;
    this.requestId = init.requestId;
    this.serviceMessage = serviceMessage;
    this.retryAfterMs = init.retryAfterMs;
  }
}

function composeMessage(summary: string, init: ServiceErrorInit, serviceMessage: string, advice: string): string {
  const said = serviceMessage ? `: ${serviceMessage.replace(/[.\s]+$/, '')}` : '';
  const request = init.requestId ? ` (request ${init.requestId})` : '';
  return `${summary} (${init.status} ${init.type})${said}. ${advice}${request}`;
}

/** 400 `invalid_request`: malformed body, unknown field, bad URL, or test-webhook without a webhook URL. Not retried. */
export class InvalidRequestError extends ServiceError {
  constructor(init: ServiceErrorInit) {
    super(init, {
      code: 'SEEDLINE_INVALID_REQUEST',
      summary: 'The service rejected the request',
      advice: 'Fix the request body or URL (only fields the spec names are accepted); it was not billed.',
    });
  }
}

/** 401 `invalid_api_key`: missing, malformed, revoked or expired credential. Not retried. */
export class InvalidApiKeyError extends ServiceError {
  constructor(init: ServiceErrorInit) {
    super(init, {
      code: 'SEEDLINE_INVALID_API_KEY',
      summary: 'The service refused the API key',
      advice: 'Check the API key: it may be mistyped, revoked, or for another environment.',
    });
  }
}

/** 402 `insufficient_credits`: the balance cannot cover the call. Not retried. */
export class InsufficientCreditsError extends ServiceError {
  constructor(init: ServiceErrorInit) {
    super(init, {
      code: 'SEEDLINE_INSUFFICIENT_CREDITS',
      summary: 'The account does not have enough credits for this call',
      advice: 'Top up the balance or shrink the run (fewer seeds, smaller max_results); nothing was billed.',
    });
  }
}

/** 404 `not_found`: unknown batch job, Signal, webhook delivery, or path. Not retried. */
export class NotFoundError extends ServiceError {
  constructor(init: ServiceErrorInit) {
    super(init, {
      code: 'SEEDLINE_NOT_FOUND',
      summary: 'The service has no such resource',
      advice: 'Check the id (jobs, Signals and deliveries belong to one account and expire after 90 days).',
    });
  }
}

/** 409 `idempotency_conflict`: an Idempotency-Key reused with a different body. Not retried. */
export class IdempotencyConflictError extends ServiceError {
  constructor(init: ServiceErrorInit) {
    super(init, {
      code: 'SEEDLINE_IDEMPOTENCY_CONFLICT',
      summary: 'The Idempotency-Key was already used with a different body',
      advice: 'Resend the original body with this key, or use a new key for a new submission.',
    });
  }
}

/** 422 `unprocessable_target`: the target is private, deleted or unreachable. Not retried (the service may bill it). */
export class UnprocessableTargetError extends ServiceError {
  constructor(init: ServiceErrorInit) {
    super(init, {
      code: 'SEEDLINE_UNPROCESSABLE_TARGET',
      summary: 'The target cannot be scraped',
      advice: 'It is private, deleted or unreachable: skip it rather than retry (the service may bill this answer).',
    });
  }
}

/** 429 `rate_limited`: over the request, search or concurrent-batch limit. Retried after `Retry-After`. */
export class RateLimitedError extends ServiceError {
  constructor(init: ServiceErrorInit) {
    const wait = init.retryAfterMs !== undefined ? `Wait ${Math.ceil(init.retryAfterMs / 1000)} s (Retry-After)` : 'Wait';
    super(init, {
      code: 'SEEDLINE_RATE_LIMITED',
      retryable: true,
      summary: 'The service rate-limited the request',
      advice: `${wait} and retry, or lower the request rate or the number of concurrent batch jobs.`,
    });
  }
}

/** 500 `internal_error`: a service fault. Retried; never billed. */
export class InternalServiceError extends ServiceError {
  constructor(init: ServiceErrorInit) {
    super(init, {
      code: 'SEEDLINE_INTERNAL_ERROR',
      retryable: true,
      summary: 'The service failed internally',
      advice: 'Retry later (it was not billed); if it persists, contact support with the request id.',
    });
  }
}

/** 504 `upstream_timeout`: the live scrape did not finish in time. Retried; never billed. */
export class UpstreamTimeoutError extends ServiceError {
  constructor(init: ServiceErrorInit) {
    super(init, {
      code: 'SEEDLINE_UPSTREAM_TIMEOUT',
      retryable: true,
      summary: 'The live scrape timed out',
      advice: 'Retry later (it was not billed).',
    });
  }
}

/** 502 `upstream_error`: another upstream scrape failure. Retried; never billed. */
export class UpstreamError extends ServiceError {
  constructor(init: ServiceErrorInit) {
    super(init, {
      code: 'SEEDLINE_UPSTREAM_ERROR',
      retryable: true,
      summary: 'The live scrape failed upstream',
      advice: 'Retry later (it was not billed).',
    });
  }
}

type ServiceErrorClass = new (init: ServiceErrorInit) => ServiceError;

/** The class of each error type the spec and CONTRACT.md name. */
export const SERVICE_ERROR_CLASSES = {
  invalid_request: InvalidRequestError,
  invalid_api_key: InvalidApiKeyError,
  insufficient_credits: InsufficientCreditsError,
  not_found: NotFoundError,
  unprocessable_target: UnprocessableTargetError,
  rate_limited: RateLimitedError,
  internal_error: InternalServiceError,
  upstream_timeout: UpstreamTimeoutError,
  upstream_error: UpstreamError,
  idempotency_conflict: IdempotencyConflictError,
} as const satisfies Record<ErrorType, ServiceErrorClass>;

/** The status each known type normally comes with; an unknown type is mapped through this table by its status. */
const CLASS_BY_STATUS: Readonly<Record<number, ServiceErrorClass>> = {
  400: InvalidRequestError,
  401: InvalidApiKeyError,
  402: InsufficientCreditsError,
  404: NotFoundError,
  409: IdempotencyConflictError,
  422: UnprocessableTargetError,
  429: RateLimitedError,
  500: InternalServiceError,
  502: UpstreamError,
  504: UpstreamTimeoutError,
};

/**
 * Maps an error answer to its class: by `type` when known (whatever the status), otherwise by
 * status (the table of the spec), otherwise a plain {@link ServiceError} of its status class.
 */
export function serviceErrorFrom(init: ServiceErrorInit): ServiceError {
  const byType = (SERVICE_ERROR_CLASSES as Record<string, ServiceErrorClass>)[init.type];
  if (byType) return new byType(init);
  const byStatus = CLASS_BY_STATUS[init.status];
  if (byStatus) return new byStatus(init);
  return new ServiceError(init);
}

/**
 * The type the spec names for an error's class: `unprocessable_target` for a 422 whatever `type`
 * it came with. Callers that decide billing or retries by type then follow the status, as the
 * spec's table does, when the service sends a type it does not name. Undefined for other errors.
 */
export function canonicalErrorType(error: unknown): ErrorType | undefined {
  if (!(error instanceof ServiceError)) return undefined;
  for (const [type, errorClass] of Object.entries(SERVICE_ERROR_CLASSES)) if (error.constructor === errorClass) return type as ErrorType;
  return undefined;
}

/** Status codes whose non-JSON answers are still worth retrying (a proxy's HTML 502, a bare 504…). */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 504]);

/** A body that is not the JSON the service promises (HTML error page, truncated body). Never a crash. */
export class UnexpectedResponseError extends SeedlineClientError {
  /** Always `SEEDLINE_UNEXPECTED_RESPONSE`. */
  readonly code = 'SEEDLINE_UNEXPECTED_RESPONSE';
  /** True for 429/500/502/504 answers; false otherwise, and false for a 2xx body cut short (the call may have been billed). */
  readonly retryable: boolean;
  /** HTTP status. */
  readonly status: number;
  /** The first ~200 bytes of the body (redacted), for diagnosis. */
  readonly bodySnippet: string;
  /** Request id from the `X-Request-Id` header, when present. */
  readonly requestId: string | undefined;
  /** `Retry-After` in milliseconds; undefined when absent. */
  readonly retryAfterMs: number | undefined;

  constructor(init: {
    status: number;
    bodySnippet: string;
    requestId?: string | undefined;
    reason: string;
    retryable?: boolean;
    retryAfterMs?: number | undefined;
    cause?: unknown;
  }) {
    const request = init.requestId ? ` (request ${init.requestId})` : '';
    const advice =
      init.status >= 200 && init.status < 300
        ? 'The call may have been processed and billed; check the account balance before repeating it.'
        : 'Retry later; if it persists, check --base-url points at the service and not at a proxy page.';
    super(`The service answered ${init.status} with ${init.reason}: ${JSON.stringify(init.bodySnippet)}. ${advice}${request}`, { cause: init.cause });
    this.status = init.status;
    this.bodySnippet = init.bodySnippet;
    this.requestId = init.requestId;
    this.retryAfterMs = init.retryAfterMs;
    this.retryable = init.retryable ?? (RETRYABLE_STATUSES.has(init.status) && !(init.status >= 200 && init.status < 300));
  }
}

/** Socket error codes that are transient and retried. */
export const RETRYABLE_NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/** Socket error codes of a connection that was never made: the request cannot have reached the service. */
export const UNSENT_NETWORK_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'EAI_AGAIN', 'ENOTFOUND', 'UND_ERR_CONNECT_TIMEOUT']);

/** A connection-level failure before any answer (refused, reset, DNS, timeout). */
export class NetworkError extends SeedlineClientError {
  /** Always `SEEDLINE_NETWORK_ERROR`. */
  readonly code = 'SEEDLINE_NETWORK_ERROR';
  /** True for the transient codes of {@link RETRYABLE_NETWORK_CODES}. */
  readonly retryable: boolean;
  /**
   * False only when no connection was made ({@link UNSENT_NETWORK_CODES}). A reset or a timeout
   * after the request went out may follow a call the service processed and billed.
   */
  readonly maybeProcessed: boolean;
  /** The underlying error code (`ECONNREFUSED`, `UND_ERR_HEADERS_TIMEOUT`, …); `UNKNOWN` when none. */
  readonly causeCode: string;

  constructor(init: { origin: string; causeCode: string; cause?: unknown }) {
    super(
      `Could not reach the service at ${init.origin} (${init.causeCode}). Check --base-url and the network; the service may be down or slow.`,
      { cause: init.cause },
    );
    this.causeCode = init.causeCode;
    this.retryable = RETRYABLE_NETWORK_CODES.has(init.causeCode);
    this.maybeProcessed = !UNSENT_NETWORK_CODES.has(init.causeCode);
  }
}

/** Bytes as people read them: `64 MiB`, `512 KiB`, `900 bytes`. */
function formatBytes(bytes: number): string {
  for (const [unit, size] of [['GiB', 2 ** 30], ['MiB', 2 ** 20], ['KiB', 2 ** 10]] as const) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size} ${unit}`;
  }
  return `${bytes} bytes`;
}

/** What a cut-off answer may have cost, for the end of its message. */
const MAYBE_BILLED = 'A billed call without an Idempotency-Key is not repeated: it may have been processed and billed.';

/**
 * An answer longer than the client's cap (`api.max_answer_bytes`), cut off while it streamed in:
 * nothing past the cap was kept. Treated as a lost answer: retried for calls safe to repeat,
 * never for a billed call without an Idempotency-Key (it may have been processed and billed).
 */
export class AnswerTooLargeError extends SeedlineClientError {
  /** Always `SEEDLINE_ANSWER_TOO_LARGE`. */
  readonly code = 'SEEDLINE_ANSWER_TOO_LARGE';
  /** True: the retry loop repeats calls that are safe to repeat. */
  readonly retryable = true;
  /** Always true: the request went out, so the service may have processed (and billed) it. */
  readonly maybeProcessed = true;
  /** The operation, e.g. `getBatchResults`. */
  readonly operation: string;
  /** HTTP status of the answer. */
  readonly status: number;
  /** The cap in force. */
  readonly maxBytes: number;
  /** Bytes the answer had reached when it was cut off (its Content-Length when that alone was over the cap). */
  readonly receivedBytes: number;

  constructor(init: { operation: string; status: number; maxBytes: number; receivedBytes: number; declared: boolean }) {
    const size = init.declared ? `announces ${init.receivedBytes} bytes` : `passed ${init.receivedBytes} bytes`;
    super(
      `The answer to ${init.operation} ${size}, more than api.max_answer_bytes (${formatBytes(init.maxBytes)}), so it was cut off. ` +
        `Raise api.max_answer_bytes in the config if answers this large are expected. ${MAYBE_BILLED}`,
    );
    this.operation = init.operation;
    this.status = init.status;
    this.maxBytes = init.maxBytes;
    this.receivedBytes = init.receivedBytes;
  }
}

/**
 * An attempt that did not finish within the client's deadline (`api.call_deadline`), headers and
 * body together: a hung or dripping answer. Retried like {@link AnswerTooLargeError}.
 */
export class AnswerOverdueError extends SeedlineClientError {
  /** Always `SEEDLINE_ANSWER_OVERDUE`. */
  readonly code = 'SEEDLINE_ANSWER_OVERDUE';
  /** True: the retry loop repeats calls that are safe to repeat. */
  readonly retryable = true;
  /** Always true: the request went out, so the service may have processed (and billed) it. */
  readonly maybeProcessed = true;
  /** The operation, e.g. `searchPeople`. */
  readonly operation: string;
  /** The deadline in force, in milliseconds. */
  readonly deadlineMs: number;
  /** Bytes of the body received when the deadline passed; undefined when no answer had started. */
  readonly receivedBytes: number | undefined;

  constructor(init: { operation: string; deadlineMs: number; receivedBytes?: number | undefined }) {
    const where = init.receivedBytes === undefined ? 'no answer had started' : `${init.receivedBytes} bytes of the body had arrived`;
    super(
      `The answer to ${init.operation} did not arrive within api.call_deadline (${formatDeadline(init.deadlineMs)}): ${where}. ` +
        `Raise api.call_deadline in the config if the service is this slow for this call. ${MAYBE_BILLED}`,
    );
    this.operation = init.operation;
    this.deadlineMs = init.deadlineMs;
    this.receivedBytes = init.receivedBytes;
  }
}

function formatDeadline(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/**
 * A call ended by the client's stop signal (the first SIGTERM or Ctrl-C): in flight, waiting for
 * the rate limit, or between retries. Never retried; not a failure of the call itself.
 */
export class CallAbortedError extends SeedlineClientError {
  /** Always `SEEDLINE_CALL_ABORTED`. */
  readonly code = 'SEEDLINE_CALL_ABORTED';
  /** Never retried. */
  readonly retryable = false;
  /** True when the request had gone out (it may have been processed and billed); false when it was never sent. */
  readonly maybeProcessed: boolean;
  /** The operation, e.g. `profileActivity`. */
  readonly operation: string;

  constructor(init: { operation: string; maybeProcessed: boolean; cause?: unknown }) {
    const sent = init.maybeProcessed ? 'its request had gone out, so it may have been processed and billed' : 'its request was never sent';
    super(`The call to ${init.operation} was abandoned because a stop was requested (SIGTERM, Ctrl-C or the caller's signal): ${sent}.`, { cause: init.cause });
    this.operation = init.operation;
    this.maybeProcessed = init.maybeProcessed;
  }
}

/** A 2xx answer whose `data`/`meta` do not fit their schema. Carries the raw body so nothing paid for is lost. */
export class ApiResponseShapeError extends SeedlineClientError {
  /** Always `SEEDLINE_RESPONSE_SHAPE`. */
  readonly code = 'SEEDLINE_RESPONSE_SHAPE';
  /** Never retried: the call succeeded (and may have been billed). */
  readonly retryable = false;
  /** The operation, e.g. `enrichProfile`. */
  readonly operation: string;
  /** Readable reason naming each failing path (`data.positions.0.title: …`). */
  readonly reason: string;
  /** The parsed JSON body as received; store it (e.g. in `_seedline_rejected`) instead of dropping it. */
  readonly raw: unknown;
  /** Request id, when the body or headers carried one. */
  readonly requestId: string | undefined;

  constructor(init: { operation: string; reason: string; raw: unknown; requestId?: string | undefined }) {
    const request = init.requestId ? ` (request ${init.requestId})` : '';
    super(
      `The answer to ${init.operation} does not match its schema: ${init.reason}. The raw body is kept on the error; report the field to the seedline maintainers${request}.`,
    );
    this.operation = init.operation;
    this.reason = init.reason;
    this.raw = init.raw;
    this.requestId = init.requestId;
  }
}

/** A request body refused locally by its strict schema, before anything was sent. */
export class RequestValidationError extends SeedlineClientError {
  /** Always `SEEDLINE_INVALID_REQUEST_BODY`. */
  readonly code = 'SEEDLINE_INVALID_REQUEST_BODY';
  /** Never retried. */
  readonly retryable = false;
  /** The operation, e.g. `searchPeople`. */
  readonly operation: string;
  /** Readable reason naming each failing path. */
  readonly reason: string;

  constructor(init: { operation: string; reason: string }) {
    super(`The ${init.operation} request body is invalid: ${init.reason}. Fix it (the service refuses unknown or malformed fields); nothing was sent.`);
    this.operation = init.operation;
    this.reason = init.reason;
  }
}

export { redactSecrets } from '../util/redact-secrets.js';

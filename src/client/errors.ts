import type { ErrorType } from '../../schemas/index.js';
import { SeedlineClientError } from './client-error.js';

export { SeedlineClientError } from './client-error.js';
export * from './transport-errors.js';
export { redactSecrets } from '../util/redact-secrets.js';

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

  constructor(
    init: ServiceErrorInit,
    options: { code?: string; retryable?: boolean; summary?: string; advice?: string } = {},
  ) {
    const serviceMessage = init.serviceMessage ?? '';
    const isServer = init.status >= 500;
    const summary = options.summary ?? `The service answered ${init.status} ${init.type}`;
    const advice =
      options.advice ??
      (isServer
        ? 'Retry later; if it persists, contact support with the request id.'
        : 'Check the request; retrying it unchanged will not help.');
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

/**
 * The longest `Retry-After` a call waits out (15 minutes). A longer one is not a rate limit to wait
 * for but a service saying "not today": the call fails at once, naming the value, and the run ends
 * by itself instead of holding the destination's lock for as long as the header says.
 */
export const MAX_RETRY_AFTER_MS = 15 * 60_000;

/** Whether a `Retry-After` is past what a call waits out ({@link MAX_RETRY_AFTER_MS}). */
export function waitsTooLong(retryAfterMs: number | undefined): boolean {
  return retryAfterMs !== undefined && retryAfterMs > MAX_RETRY_AFTER_MS;
}

/**
 * 429 `rate_limited`: over the request, search or concurrent-batch limit. Retried after
 * `Retry-After`, unless it asks for more than {@link MAX_RETRY_AFTER_MS}: then not retried.
 */
export class RateLimitedError extends ServiceError {
  constructor(init: ServiceErrorInit) {
    const seconds = init.retryAfterMs === undefined ? undefined : Math.ceil(init.retryAfterMs / 1000);
    const tooLong = waitsTooLong(init.retryAfterMs);
    super(init, {
      code: tooLong ? 'SEEDLINE_RETRY_AFTER_TOO_LONG' : 'SEEDLINE_RATE_LIMITED',
      retryable: !tooLong,
      summary: tooLong
        ? `The service rate-limited the request and asked to wait ${seconds} s (Retry-After), more than the ${MAX_RETRY_AFTER_MS / 1000} s seedline waits`
        : 'The service rate-limited the request',
      advice: tooLong
        ? 'The call was not retried (and not billed); run again later, or ask the service why its limit is closed for so long.'
        : `${seconds === undefined ? 'Wait' : `Wait ${seconds} s (Retry-After)`} and retry, or lower the request rate or the number of concurrent batch jobs.`,
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

/** The class of each error type the spec and docs/service-assumptions.md#errors-the-description-leaves-open name. */
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
  for (const [type, errorClass] of Object.entries(SERVICE_ERROR_CLASSES))
    if (error.constructor === errorClass) return type as ErrorType;
  return undefined;
}

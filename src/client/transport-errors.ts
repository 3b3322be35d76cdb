import { SeedlineClientError } from './client-error.js';

// How a call failed short of a service error answer: the network, a body that is not what was promised, our own limits on an answer, a stop.

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
    super(
      `The service answered ${init.status} with ${init.reason}: ${JSON.stringify(init.bodySnippet)}. ${advice}${request}`,
      { cause: init.cause },
    );
    this.status = init.status;
    this.bodySnippet = init.bodySnippet;
    this.requestId = init.requestId;
    this.retryAfterMs = init.retryAfterMs;
    this.retryable =
      init.retryable ?? (RETRYABLE_STATUSES.has(init.status) && !(init.status >= 200 && init.status < 300));
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
export const UNSENT_NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'EAI_AGAIN',
  'ENOTFOUND',
  'UND_ERR_CONNECT_TIMEOUT',
]);

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
      `Could not reach the service at ${init.origin} (${init.causeCode}). Check the base URL (api.base_url in the config; --base-url or SEEDLINE_BASE_URL for seedline account) and the network; the service may be down or slow.`,
      { cause: init.cause },
    );
    this.causeCode = init.causeCode;
    this.retryable = RETRYABLE_NETWORK_CODES.has(init.causeCode);
    this.maybeProcessed = !UNSENT_NETWORK_CODES.has(init.causeCode);
  }
}

/** Bytes as people read them: `64 MiB`, `512 KiB`, `900 bytes`. */
function formatBytes(bytes: number): string {
  for (const [unit, size] of [
    ['GiB', 2 ** 30],
    ['MiB', 2 ** 20],
    ['KiB', 2 ** 10],
  ] as const) {
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
    const where =
      init.receivedBytes === undefined
        ? 'no answer had started'
        : `${init.receivedBytes} bytes of the body had arrived`;
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
    const sent = init.maybeProcessed
      ? 'its request had gone out, so it may have been processed and billed'
      : 'its request was never sent';
    super(
      `The call to ${init.operation} was abandoned because a stop was requested (SIGTERM, Ctrl-C or the caller's signal): ${sent}.`,
      { cause: init.cause },
    );
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
    super(
      `The ${init.operation} request body is invalid: ${init.reason}. Fix it (the service refuses unknown or malformed fields); nothing was sent.`,
    );
    this.operation = init.operation;
    this.reason = init.reason;
  }
}

/**
 * Error types the sandbox answers with (the spec's errors table plus
 * docs/service-assumptions.md#errors-the-description-leaves-open).
 */
export type SandboxErrorType =
  | 'invalid_request'
  | 'invalid_api_key'
  | 'insufficient_credits'
  | 'not_found'
  | 'unprocessable_target'
  | 'rate_limited'
  | 'internal_error'
  | 'upstream_timeout'
  | 'upstream_error'
  | 'idempotency_conflict';

const STATUS: Record<SandboxErrorType, number> = {
  invalid_request: 400,
  invalid_api_key: 401,
  insufficient_credits: 402,
  not_found: 404,
  idempotency_conflict: 409,
  unprocessable_target: 422,
  rate_limited: 429,
  internal_error: 500,
  upstream_error: 502,
  upstream_timeout: 504,
};

/** An error that becomes the service's error envelope. */
export class SandboxError extends Error {
  /** HTTP status of the envelope. */
  readonly status: number;
  /** Extra fields of `error` (e.g. `billed`, `creditsUsed` on a billed 422). */
  extra: Record<string, unknown> = {};

  constructor(
    readonly type: SandboxErrorType,
    message: string,
    /** `Retry-After` seconds for 429s. */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.status = STATUS[type];
  }
}

/** 400 invalid_request. */
export const invalidRequest = (message: string) => new SandboxError('invalid_request', message);
/** 404 not_found. */
export const notFound = (message: string) => new SandboxError('not_found', message);
/** 422 unprocessable_target. */
export const unprocessable = (message: string) => new SandboxError('unprocessable_target', message);
/** 429 rate_limited with a `Retry-After` floor in seconds. */
export const rateLimited = (message: string, retryAfter: number) =>
  new SandboxError('rate_limited', message, retryAfter);

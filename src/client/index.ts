/**
 * Public API of the service client.
 *
 * @example
 * ```ts
 * import { ApiClient } from './client/index.js';
 * const client = await ApiClient.connect({ baseUrl, apiKey });
 * ```
 */
export { ApiClient, AccountSettings, SignalTestResult } from './api-client.js';
export type { ApiClientOptions, ApiResponse, ClientEvent, IdempotencyOptions, SearchVariant } from './api-client.js';
export {
  AnswerOverdueError,
  AnswerTooLargeError,
  ApiResponseShapeError,
  CallAbortedError,
  IdempotencyConflictError,
  InsufficientCreditsError,
  InternalServiceError,
  InvalidApiKeyError,
  InvalidRequestError,
  NetworkError,
  NotFoundError,
  RateLimitedError,
  redactSecrets,
  RequestValidationError,
  RETRYABLE_NETWORK_CODES,
  UNSENT_NETWORK_CODES,
  RETRYABLE_STATUSES,
  SeedlineClientError,
  SERVICE_ERROR_CLASSES,
  ServiceError,
  serviceErrorFrom,
  UnexpectedResponseError,
  UnprocessableTargetError,
  UpstreamError,
  UpstreamTimeoutError,
} from './errors.js';
export type { ServiceErrorInit } from './errors.js';
export {
  backoffDelay,
  decideRetry,
  DEFAULT_RETRY_POLICY,
  isRateLimit,
  isRetryable,
  isRetryableUnbilled,
  parseRetryAfter,
  resolveRetryPolicy,
  withRetry,
} from './retry.js';
export type { GiveUpReason, RetryDecision, RetryOptions, RetryPolicy } from './retry.js';
export { boundedRequest, DEFAULT_CALL_DEADLINE_MS, DEFAULT_MAX_ANSWER_BYTES } from './bounded-request.js';
export type { AnswerLimits, AttemptContext, BoundedRequestInit } from './bounded-request.js';
export { RateLimiter } from './rate-limiter.js';
export type { RateLimiterOptions, RateLimiterStats, SharedWindow } from './rate-limiter.js';
export { CreditMeter } from './credit-meter.js';
export type { OperationCredits } from './credit-meter.js';
export {
  computeSignature,
  DEFAULT_WEBHOOK_TOLERANCE_SECONDS,
  signWebhook,
  verifyWebhook,
} from './webhook-signature.js';
export type { VerifyWebhookOptions, WebhookVerifyFailureReason, WebhookVerifyResult } from './webhook-signature.js';
export { parseResponse } from './response-parser.js';
export type { ParseOptions, RawResponse } from './response-parser.js';
export { jwtExpiryMs, TokenProvider, tokenExpiresAt } from './token-provider.js';
export type { TokenProviderOptions } from './token-provider.js';

import type { z } from 'zod';
import { describeIssues, envelope, ErrorEnvelope } from '../../schemas/index.js';
import type { Meta } from '../../schemas/index.js';
import { ApiResponseShapeError, redactSecrets, serviceErrorFrom, UnexpectedResponseError } from './errors.js';
import { parseRetryAfter } from './retry.js';

/** What every client method resolves to: the validated `data` and the `meta` of the envelope. */
export interface ApiResponse<T> {
  /** The payload, validated leniently (unknown fields kept). */
  data: T;
  /** The envelope's `meta` (`creditsUsed`, `billed`, `requestId`, `nextCursor`, …). */
  meta: Meta;
}

/** One HTTP answer as read off the wire. */
export interface RawResponse {
  /** HTTP status. */
  status: number;
  /** Response headers (lower-case names). */
  headers: Record<string, string | string[] | undefined>;
  /** The bytes received. */
  body: Uint8Array;
  /** Set when reading the body failed part-way (connection closed, length mismatch). */
  bodyError?: unknown;
}

/** How to read one answer. */
export interface ParseOptions<S extends z.ZodType> {
  /** Operation name for messages, e.g. `enrichProfile`. */
  operation: string;
  /** Schema of `data` (or of the whole body when `bare`). */
  schema: S;
  /** The body is not enveloped (token exchange): it is the data, and `meta` is synthesized. Default false. */
  bare?: boolean;
  /** Strings to scrub from every message and snippet (API key, token). Default none. */
  secrets?: readonly (string | undefined)[];
  /** Clock for HTTP-date `Retry-After`. Default `Date.now()`. */
  nowMs?: number;
}

const SNIPPET_BYTES = 200;

/** Status → type, for error bodies without an envelope (the token exchange's `{ error: string }`). */
const TYPE_BY_STATUS: Readonly<Record<number, string>> = {
  400: 'invalid_request',
  401: 'invalid_api_key',
  402: 'insufficient_credits',
  404: 'not_found',
  409: 'idempotency_conflict',
  422: 'unprocessable_target',
  429: 'rate_limited',
  500: 'internal_error',
  502: 'upstream_error',
  504: 'upstream_timeout',
};

function header(headers: RawResponse['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Turns one HTTP answer into `{ data, meta }` or throws the matching error: a `ServiceError`
 * subclass for an error envelope, `UnexpectedResponseError` for a non-JSON or truncated body,
 * `ApiResponseShapeError` for a 2xx body that does not fit its schema. Never throws anything else.
 */
export function parseResponse<S extends z.ZodType>(
  raw: RawResponse,
  options: ParseOptions<S>,
): ApiResponse<z.output<S>> {
  const secrets = options.secrets ?? [];
  const headerRequestId = header(raw.headers, 'x-request-id');
  const retryAfterMs = parseRetryAfter(header(raw.headers, 'retry-after'), options.nowMs);
  const text = Buffer.from(raw.body.buffer, raw.body.byteOffset, raw.body.byteLength).toString('utf8');
  const snippet = () => redactSecrets(Buffer.from(raw.body).subarray(0, SNIPPET_BYTES).toString('utf8'), secrets);
  const ok = raw.status >= 200 && raw.status < 300;

  if (raw.bodyError !== undefined) {
    throw new UnexpectedResponseError({
      status: raw.status,
      bodySnippet: snippet(),
      requestId: headerRequestId,
      reason: `a body cut short after ${raw.body.byteLength} bytes`,
      retryAfterMs,
      cause: raw.bodyError,
    });
  }

  let json: unknown;
  let isJson = true;
  try {
    json = JSON.parse(text);
  } catch {
    isJson = false;
  }

  if (!ok) {
    if (isJson) {
      const enveloped = ErrorEnvelope.safeParse(json);
      if (enveloped.success) {
        const { type, message, requestId } = enveloped.data.error;
        return throwing(
          serviceErrorFrom({
            status: raw.status,
            type,
            serviceMessage: redactSecrets(message, secrets),
            requestId: requestId ?? headerRequestId,
            retryAfterMs,
          }),
        );
      }
      const plain = (json as { error?: unknown } | null)?.error;
      if (typeof plain === 'string') {
        return throwing(
          serviceErrorFrom({
            status: raw.status,
            type: TYPE_BY_STATUS[raw.status] ?? `http_${raw.status}`,
            serviceMessage: redactSecrets(plain, secrets),
            requestId: headerRequestId,
            retryAfterMs,
          }),
        );
      }
    }
    throw new UnexpectedResponseError({
      status: raw.status,
      bodySnippet: snippet(),
      requestId: headerRequestId,
      reason: isJson
        ? 'a JSON body that is not an error envelope'
        : text.length === 0
          ? 'an empty body'
          : 'a non-JSON body',
      retryAfterMs,
    });
  }

  if (!isJson) {
    throw new UnexpectedResponseError({
      status: raw.status,
      bodySnippet: snippet(),
      requestId: headerRequestId,
      reason: text.length === 0 ? 'an empty body' : 'a non-JSON body',
    });
  }

  if (options.bare) {
    const parsed = options.schema.safeParse(json);
    if (!parsed.success) {
      throw new ApiResponseShapeError({
        operation: options.operation,
        reason: describeIssues(parsed.error),
        raw: json,
        requestId: headerRequestId,
      });
    }
    return { data: parsed.data, meta: headerRequestId ? { requestId: headerRequestId } : {} };
  }

  const parsed = envelope(options.schema).safeParse(json);
  if (!parsed.success) {
    const bodyRequestId = (json as { meta?: { requestId?: unknown } } | null)?.meta?.requestId;
    throw new ApiResponseShapeError({
      operation: options.operation,
      reason: describeIssues(parsed.error),
      raw: json,
      requestId: typeof bodyRequestId === 'string' ? bodyRequestId : headerRequestId,
    });
  }
  const meta: Meta = parsed.data.meta;
  if (meta.requestId === undefined && headerRequestId !== undefined) meta.requestId = headerRequestId;
  return { data: parsed.data.data as z.output<S>, meta };
}

function throwing(error: Error): never {
  throw error;
}

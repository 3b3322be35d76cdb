import { describe, expect, it } from 'vitest';
import { Profile } from '../../schemas/index.js';
import {
  ApiResponseShapeError,
  IdempotencyConflictError,
  InsufficientCreditsError,
  InternalServiceError,
  InvalidApiKeyError,
  InvalidRequestError,
  NetworkError,
  NotFoundError,
  RateLimitedError,
  redactSecrets,
  ServiceError,
  serviceErrorFrom,
  UnexpectedResponseError,
  UnprocessableTargetError,
  UpstreamError,
  UpstreamTimeoutError,
} from '../../src/client/errors.js';
import { parseResponse } from '../../src/client/response-parser.js';
import type { RawResponse } from '../../src/client/response-parser.js';

const API_KEY = 'svc_live_Zq9SecretKeyValue123';
const TOKEN = 'eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjE5MDAwMDAwMDB9.c2lnbmF0dXJl';

function raw(status: number, body: unknown, headers: RawResponse['headers'] = {}): RawResponse {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return { status, headers, body: Buffer.from(text) };
}

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

const errorBody = (type: string, message = 'something happened') => ({
  error: { type, message, requestId: 'req_abc' },
});

describe('error mapping', () => {
  it.each([
    [400, 'invalid_request', InvalidRequestError, 'SEEDLINE_INVALID_REQUEST', false],
    [401, 'invalid_api_key', InvalidApiKeyError, 'SEEDLINE_INVALID_API_KEY', false],
    [402, 'insufficient_credits', InsufficientCreditsError, 'SEEDLINE_INSUFFICIENT_CREDITS', false],
    [404, 'not_found', NotFoundError, 'SEEDLINE_NOT_FOUND', false],
    [422, 'unprocessable_target', UnprocessableTargetError, 'SEEDLINE_UNPROCESSABLE_TARGET', false],
    [429, 'rate_limited', RateLimitedError, 'SEEDLINE_RATE_LIMITED', true],
    [500, 'internal_error', InternalServiceError, 'SEEDLINE_INTERNAL_ERROR', true],
    [504, 'upstream_timeout', UpstreamTimeoutError, 'SEEDLINE_UPSTREAM_TIMEOUT', true],
    [502, 'upstream_error', UpstreamError, 'SEEDLINE_UPSTREAM_ERROR', true],
    [409, 'idempotency_conflict', IdempotencyConflictError, 'SEEDLINE_IDEMPOTENCY_CONFLICT', false],
  ] as const)(
    'given a %i %s envelope, when parsed, then it is the matching class with status, code and request id',
    (status, type, cls, code, retryable) => {
      const error = thrown(() => parseResponse(raw(status, errorBody(type)), { operation: 'op', schema: Profile }));
      expect(error).toBeInstanceOf(cls);
      expect(error).toBeInstanceOf(ServiceError);
      const service = error as ServiceError;
      expect(service.status).toBe(status);
      expect(service.type).toBe(type);
      expect(service.code).toBe(code);
      expect(service.retryable).toBe(retryable);
      expect(service.requestId).toBe('req_abc');
      expect(service.message).toContain('something happened');
      expect(service.message).toContain('req_abc');
    },
  );

  it('given every class, when its message is read, then it tells the user what to do next', () => {
    const advice: Record<string, RegExp> = {
      invalid_request: /fix/i,
      invalid_api_key: /check the api key/i,
      insufficient_credits: /top up/i,
      not_found: /check the id/i,
      unprocessable_target: /skip it/i,
      rate_limited: /wait/i,
      internal_error: /retry later/i,
      upstream_timeout: /retry later/i,
      upstream_error: /retry later/i,
      idempotency_conflict: /new key/i,
    };
    for (const [type, pattern] of Object.entries(advice)) {
      expect(serviceErrorFrom({ status: 400, type }).message).toMatch(pattern);
    }
  });

  it('given a 401, when its message is read, then it names no flag or variable: the caller says where the key came from', () => {
    const message = serviceErrorFrom({ status: 401, type: 'invalid_api_key' }).message;
    expect(message).not.toMatch(/--api-key|SEEDLINE_API_KEY|api\.api_key/);
    expect(message).toMatch(/mistyped, revoked, or for another environment/);
  });

  it('given an unknown type with a known status, when mapped, then the status picks the class and the type is kept', () => {
    const error = serviceErrorFrom({ status: 429, type: 'search_limit_exceeded', serviceMessage: 'too many searches' });
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error.type).toBe('search_limit_exceeded');
    expect(error.retryable).toBe(true);
  });

  it('given an unknown type with an unlisted status, when mapped, then it is a plain ServiceError of its status class', () => {
    const client = serviceErrorFrom({ status: 418, type: 'teapot' });
    const server = serviceErrorFrom({ status: 503, type: 'maintenance' });
    expect(client.constructor).toBe(ServiceError);
    expect(client.code).toBe('SEEDLINE_CLIENT_ERROR');
    expect(client.retryable).toBe(false);
    expect(server.code).toBe('SEEDLINE_SERVER_ERROR');
    expect(server.message).toMatch(/retry later/i);
  });

  it('given a 429 with Retry-After, when parsed, then the error carries it and names the wait', () => {
    const error = thrown(() =>
      parseResponse(raw(429, errorBody('rate_limited'), { 'retry-after': '7' }), { operation: 'op', schema: Profile }),
    ) as RateLimitedError;
    expect(error.retryAfterMs).toBe(7_000);
    expect(error.message).toContain('7 s');
  });

  it('given the token exchange 401 body { error: string }, when parsed, then it is an InvalidApiKeyError', () => {
    const error = thrown(() =>
      parseResponse(raw(401, { error: 'Invalid API key' }), {
        operation: 'exchangeToken',
        schema: Profile,
        bare: true,
      }),
    );
    expect(error).toBeInstanceOf(InvalidApiKeyError);
  });

  it('given an HTML 502, when parsed, then it is an UnexpectedResponseError with the status and the first bytes', () => {
    const html = `<html><body><h1>502 Bad Gateway</h1>${'x'.repeat(1_000)}</body></html>`;
    const error = thrown(() =>
      parseResponse(raw(502, html), { operation: 'op', schema: Profile }),
    ) as UnexpectedResponseError;
    expect(error).toBeInstanceOf(UnexpectedResponseError);
    expect(error.status).toBe(502);
    expect(error.bodySnippet.startsWith('<html><body><h1>502 Bad Gateway')).toBe(true);
    expect(error.bodySnippet.length).toBeLessThanOrEqual(200);
    expect(error.retryable).toBe(true);
  });

  it('given a 200 with a non-JSON body, when parsed, then it is an UnexpectedResponseError that is not retried', () => {
    const error = thrown(() =>
      parseResponse(raw(200, 'OK'), { operation: 'op', schema: Profile }),
    ) as UnexpectedResponseError;
    expect(error).toBeInstanceOf(UnexpectedResponseError);
    expect(error.retryable).toBe(false);
  });

  it('given a body cut short, when parsed, then it is an UnexpectedResponseError naming the bytes received', () => {
    const error = thrown(() =>
      parseResponse(
        { status: 200, headers: {}, body: Buffer.from('{"data":{"url":'), bodyError: new Error('other side closed') },
        { operation: 'op', schema: Profile },
      ),
    ) as UnexpectedResponseError;
    expect(error).toBeInstanceOf(UnexpectedResponseError);
    expect(error.message).toContain('cut short after 15 bytes');
    expect(error.bodySnippet).toBe('{"data":{"url":');
  });
});

describe('lenient success parsing', () => {
  const profile = {
    url: 'https://n.example/in/jane',
    public_identifier: 'jane',
    urn: 'ACoAAA1',
    full_name: 'Jane',
    scraped_at: '2026-01-01T00:00:00Z',
    brand_new: { nested: 1 },
  };

  it('given unknown fields in data and meta, when parsed, then they are kept', () => {
    const answer = parseResponse(
      raw(200, {
        data: profile,
        meta: { creditsUsed: 1, billed: true, requestId: 'req_1', novelty: 'yes' },
        extra_top: 1,
      }),
      {
        operation: 'enrichProfile',
        schema: Profile,
      },
    );
    expect((answer.data as Record<string, unknown>).brand_new).toEqual({ nested: 1 });
    expect((answer.meta as Record<string, unknown>).novelty).toBe('yes');
    expect(answer.meta.creditsUsed).toBe(1);
  });

  it('given a record missing a required field, when parsed, then ApiResponseShapeError names the path and keeps the raw body', () => {
    const body = {
      data: { ...profile, scraped_at: undefined, positions: [{ title: 7 }] },
      meta: { requestId: 'req_9' },
    };
    const error = thrown(() =>
      parseResponse(raw(200, body), { operation: 'enrichProfile', schema: Profile }),
    ) as ApiResponseShapeError;
    expect(error).toBeInstanceOf(ApiResponseShapeError);
    expect(error.reason).toContain('data.scraped_at');
    expect(error.reason).toContain('data.positions.0.title');
    expect(error.raw).toEqual(JSON.parse(JSON.stringify(body)));
    expect(error.requestId).toBe('req_9');
  });

  it('given no meta.requestId but an X-Request-Id header, when parsed, then meta carries the header value', () => {
    const answer = parseResponse(raw(200, { data: profile, meta: {} }, { 'x-request-id': 'req_hdr' }), {
      operation: 'enrichProfile',
      schema: Profile,
    });
    expect(answer.meta.requestId).toBe('req_hdr');
  });
});

describe('secrets never reach a message', () => {
  it('given a service message that echoes the key and a token, when mapped, then neither appears in the message', () => {
    const body = errorBody('invalid_api_key', `key ${API_KEY} with token ${TOKEN} is revoked`);
    const error = thrown(() =>
      parseResponse(raw(401, body), { operation: 'op', schema: Profile, secrets: [API_KEY, TOKEN] }),
    ) as Error;
    expect(error.message).not.toContain(API_KEY);
    expect(error.message).not.toContain(TOKEN);
    expect(error.message).toContain('[redacted]');
  });

  it('given an HTML error page that echoes a key, when mapped, then the snippet is redacted too', () => {
    const error = thrown(() =>
      parseResponse(raw(500, `<p>bad key ${API_KEY}</p>`), { operation: 'op', schema: Profile, secrets: [API_KEY] }),
    ) as UnexpectedResponseError;
    expect(error.bodySnippet).not.toContain(API_KEY);
    expect(error.message).not.toContain(API_KEY);
  });

  it('given secrets the caller did not list, when redacted, then key-, JWT- and webhook-secret-shaped strings are still hidden', () => {
    const text = redactSecrets(`svc_test_abcdef and ${TOKEN} and whsec_123456`);
    expect(text).not.toMatch(/svc_test_abcdef|eyJ|whsec_123456/);
  });

  it('given a network failure, when described, then the message names the origin and the code only', () => {
    const error = new NetworkError({ origin: 'http://127.0.0.1:9', causeCode: 'ECONNREFUSED' });
    expect(error.message).toBe(
      'Could not reach the service at http://127.0.0.1:9 (ECONNREFUSED). Check the base URL (api.base_url in the config; --base-url or SEEDLINE_BASE_URL for seedline account) and the network; the service may be down or slow.',
    );
    expect(error.retryable).toBe(true);
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import type { ApiClientOptions, ClientEvent } from '../../src/client/api-client.js';
import {
  ApiResponseShapeError,
  InsufficientCreditsError,
  InvalidApiKeyError,
  NetworkError,
  NotFoundError,
  RequestValidationError,
  UnexpectedResponseError,
  UnprocessableTargetError,
} from '../../src/client/errors.js';
import { accountRecord, ClientTestServer, fail, fakeJwt, json, ok } from '../helpers/client-test-server.js';
import { timeLimit } from '../helpers/time-limits.js';

const API_KEY = 'svc_live_K3yThatMustNeverLeak42';
const profile = {
  url: 'https://n.example/in/jane',
  public_identifier: 'jane',
  urn: 12345,
  full_name: 'Jane Doe',
  scraped_at: '2026-01-01T00:00:00Z',
};

let server: ClientTestServer;
const clients: ApiClient[] = [];

function client(options: Partial<ApiClientOptions> = {}): ApiClient {
  const instance = new ApiClient({
    baseUrl: server.baseUrl,
    apiKey: API_KEY,
    retry: { baseDelayMs: 10, random: () => 0.5 },
    ...options,
  });
  clients.push(instance);
  return instance;
}

beforeAll(async () => {
  server = await ClientTestServer.start();
});
afterEach(async () => {
  server.reset();
  await Promise.all(clients.splice(0).map((c) => c.close()));
});
afterAll(async () => {
  await server.close();
});

describe('ApiClient over HTTP: retries', () => {
  it('given a 429 with Retry-After 1 then success, when enriching, then the client waits, retries once and returns the profile', async () => {
    server.on(
      '/v1/profiles/enrich',
      fail(429, 'rate_limited', 'slow down', { 'retry-after': '1' }),
      ok(profile, { creditsUsed: 1, billed: true, creditsRemaining: 41 }),
    );
    const api = client();
    const { data, meta } = await api.enrichProfile({ url: 'jane' });
    expect(data.full_name).toBe('Jane Doe');
    expect(data.urn).toBe('12345');
    expect(meta.creditsRemaining).toBe(41);
    expect(server.requestsTo('/v1/profiles/enrich')).toHaveLength(2);
    expect(api.limiter.stats).toMatchObject({ requests: 2, rateLimited: 1, pauses: 1 });
    expect(api.credits.creditsUsed).toBe(1);
    expect(api.credits.creditsRemaining).toBe(41);
  });

  it('given a 429 with Retry-After 99999, when enriching, then the call fails at once naming the value, is not retried, and the queue is not paused', async () => {
    server.on('/v1/profiles/enrich', fail(429, 'rate_limited', 'closed', { 'retry-after': '99999' }));
    const api = client();
    const error = await api.enrichProfile({ url: 'jane' }).catch((e: Error) => e);
    expect(error).toMatchObject({ code: 'SEEDLINE_RETRY_AFTER_TOO_LONG', retryable: false });
    expect((error as Error).message).toMatch(
      /asked to wait 99999 s \(Retry-After\), more than the 900 s seedline waits/,
    );
    expect(server.requestsTo('/v1/profiles/enrich')).toHaveLength(1);
    expect(api.limiter.stats).toMatchObject({ pauses: 0 });
    // Nothing holds the next call (nor the process): it is sent at once.
    server.on('/v1/profiles/enrich', ok(profile, { creditsUsed: 1, billed: true, creditsRemaining: 40 }));
    await expect(api.enrichProfile({ url: 'jane' })).resolves.toMatchObject({ data: { full_name: 'Jane Doe' } });
  });

  it('given a 504 then success, when searching jobs, then the second attempt succeeds and a retry event is emitted', async () => {
    server.on(
      '/v1/search/jobs',
      fail(504, 'upstream_timeout'),
      ok({ jobs: [] }, { reason: '0_jobs_returned', creditsUsed: 0, billed: false }),
    );
    const events: ClientEvent[] = [];
    const api = client({ onEvent: (event) => events.push(event) });
    const { data } = await api.searchJobs({ keywords: ['rust'] });
    expect(data.jobs).toEqual([]);
    expect(server.requestsTo('/v1/search/jobs')).toHaveLength(2);
    expect(events.filter((e) => e.type === 'retry')).toEqual([
      { type: 'retry', operation: 'searchJobs', attempt: 1, delayMs: 5, code: 'SEEDLINE_UPSTREAM_TIMEOUT' },
    ]);
    expect(JSON.stringify(events)).not.toContain(API_KEY);
  });

  it('given an HTML 502 every time, when reading a batch, then attempts stop at the cap with an UnexpectedResponseError holding the first bytes', async () => {
    server.otherwise((_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>');
    });
    const api = client({ retry: { maxAttempts: 3, baseDelayMs: 5 } });
    const error = await api.getBatch('job_1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnexpectedResponseError);
    expect((error as UnexpectedResponseError).status).toBe(502);
    expect((error as UnexpectedResponseError).bodySnippet).toContain('502 Bad Gateway');
    expect(server.requestsTo('/v1/batch/job_1')).toHaveLength(3);
  });

  it('given a socket destroyed before any answer then success, when reading a batch, then the network error is retried', async () => {
    server.on(
      '/v1/batch/job_1',
      (_req, res) => res.socket?.destroy(),
      ok({ job_id: 'job_1', status: 'running', total: 2 }),
    );
    const { data } = await client().getBatch('job_1');
    expect(data.status).toBe('running');
    expect(server.requestsTo('/v1/batch/job_1')).toHaveLength(2);
  });

  it('given a failing batch submission, when retried, then every attempt carries the same Idempotency-Key', async () => {
    server.on('/v1/batch', fail(500, 'internal_error'), ok({ job_id: 'job_9', status: 'queued', total: 1 }, {}, 202));
    const { data } = await client().submitBatch({
      items: [{ operation: 'profiles.enrich', params: { url: 'jane' }, ref: 'a' }],
    });
    expect(data.job_id).toBe('job_9');
    const keys = server.requestsTo('/v1/batch').map((r) => r.headers['idempotency-key']);
    expect(keys).toHaveLength(2);
    expect(keys[0]).toBeTruthy();
    expect(keys[1]).toBe(keys[0]);
  });
});

describe('ApiClient over HTTP: errors that are not retried', () => {
  it('given a check-now answered 500 then a lost answer, when called, then each is sent once (no second billed check); a 429 is still retried', async () => {
    server.on(
      '/v1/signals/sig_1/check-now',
      fail(500, 'internal_error'),
      (_req, res) => res.socket?.destroy(),
      fail(429, 'rate_limited', 'slow down', { 'retry-after': '0' }),
      fail(500, 'internal_error'),
    );
    const api = client();
    await expect(api.checkSignalNow('sig_1')).rejects.toMatchObject({ status: 500 });
    expect(server.requestsTo('/v1/signals/sig_1/check-now')).toHaveLength(1);
    await expect(api.checkSignalNow('sig_1')).rejects.toBeInstanceOf(NetworkError);
    expect(server.requestsTo('/v1/signals/sig_1/check-now')).toHaveLength(2);
    await expect(api.checkSignalNow('sig_1')).rejects.toMatchObject({ status: 500 });
    expect(server.requestsTo('/v1/signals/sig_1/check-now')).toHaveLength(4);
  });

  it('given a billed call answered by a proxy page or a lost answer, when called, then it is sent once (a repeat could bill twice); a 504 from the service is still retried', async () => {
    server.on(
      '/v1/companies/enrich',
      (_req, res) => {
        res.writeHead(502, { 'content-type': 'text/html' });
        res.end('<html><title>502 Bad Gateway</title></html>');
      },
      (_req, res) => res.socket?.destroy(),
      fail(504, 'upstream_timeout'),
      ok(
        {
          name: 'Example',
          url: 'https://n.example/company/example',
          network_id: '42',
          scraped_at: '2026-01-01T00:00:00Z',
        },
        { creditsUsed: 1, billed: true },
      ),
    );
    const api = client();
    await expect(api.enrichCompany({ domain: 'example.com' })).rejects.toMatchObject({ status: 502 });
    expect(server.requestsTo('/v1/companies/enrich')).toHaveLength(1);
    const lost = await api.enrichCompany({ domain: 'example.com' }).catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(NetworkError);
    expect((lost as NetworkError).maybeProcessed).toBe(true);
    expect(server.requestsTo('/v1/companies/enrich')).toHaveLength(2);
    const { data } = await api.enrichCompany({ domain: 'example.com' });
    expect(data.name).toBe('Example');
    expect(server.requestsTo('/v1/companies/enrich')).toHaveLength(4);
  });

  it('given a 402, when enriching, then InsufficientCreditsError is thrown after one request', async () => {
    server.on('/v1/profiles/enrich', fail(402, 'insufficient_credits', 'balance 0'));
    const error = await client()
      .enrichProfile({ url: 'jane' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InsufficientCreditsError);
    expect((error as InsufficientCreditsError).status).toBe(402);
    expect(server.requests).toHaveLength(1);
  });

  it('given a 422 with the error envelope, when enriching, then UnprocessableTargetError carries the request id and message', async () => {
    server.on('/v1/profiles/enrich', (_req, res) =>
      json(res, 422, {
        error: { type: 'unprocessable_target', message: 'profile is private', requestId: 'req_422x', extra: true },
      }),
    );
    const error = await client()
      .enrichProfile({ url: 'private-jane' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnprocessableTargetError);
    expect((error as UnprocessableTargetError).requestId).toBe('req_422x');
    expect((error as UnprocessableTargetError).message).toContain('profile is private');
    expect((error as UnprocessableTargetError).code).toBe('SEEDLINE_UNPROCESSABLE_TARGET');
    expect(server.requests).toHaveLength(1);
  });

  it('given a 200 body cut short (Content-Length larger than sent), when enriching, then UnexpectedResponseError is thrown and nothing is retried', async () => {
    server.on('/v1/profiles/enrich', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
      // Cut once the partial body is handed to the socket, not after a delay that a loaded machine may outlast.
      res.write('{"data":{"url":"https://n.exa', () => res.socket?.destroy());
    });
    const error = await client()
      .enrichProfile({ url: 'jane' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnexpectedResponseError);
    expect((error as UnexpectedResponseError).status).toBe(200);
    expect((error as UnexpectedResponseError).bodySnippet).toBe('{"data":{"url":"https://n.exa');
    expect(server.requests).toHaveLength(1);
  });

  it('given a 401 whose message echoes the key, when called, then the error message does not contain the key', async () => {
    server.on('/v1/account', fail(401, 'invalid_api_key', `key ${API_KEY} is revoked`));
    const error = await client()
      .getAccount()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidApiKeyError);
    expect(String((error as Error).message)).not.toContain(API_KEY);
    expect(JSON.stringify(error)).not.toContain(API_KEY);
    expect((error as Error).stack ?? '').not.toContain(API_KEY);
    expect(server.requests[0]?.headers['x-api-key']).toBe(API_KEY);
  });

  it('given a 2xx body that misses a required field, when parsed, then ApiResponseShapeError names the path and keeps the raw body', async () => {
    server.on('/v1/signals/sig_1', ok({ id: 'sig_1', name: 'x', schedule: { interval: '7d' } }));
    const error = await client()
      .getSignal('sig_1')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiResponseShapeError);
    expect((error as ApiResponseShapeError).reason).toContain('data.estimated_monthly_credits');
    expect((error as ApiResponseShapeError).raw).toMatchObject({ data: { id: 'sig_1' } });
  });

  it('given an unknown body field, when searching, then RequestValidationError is thrown and nothing is sent', async () => {
    const api = client();
    const error = await api.searchPosts({ keywords: 'x', colour: 'blue' } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RequestValidationError);
    expect(server.requests).toHaveLength(0);
  });

  it('given an unreachable URL, when called, then NetworkError names the origin and the code', async () => {
    const api = new ApiClient({
      baseUrl: 'http://127.0.0.1:1',
      apiKey: API_KEY,
      retry: { maxAttempts: 2, baseDelayMs: 1 },
    });
    clients.push(api);
    const error = await api.getAccount().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NetworkError);
    expect((error as NetworkError).message).toContain('http://127.0.0.1:1');
    expect((error as NetworkError).causeCode).toBe('ECONNREFUSED');
    expect((error as Error).message).not.toContain(API_KEY);
  });

  it('given an unknown job, when reading it, then NotFoundError is thrown', async () => {
    const error = await client()
      .getBatch('job_missing')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
  });
});

describe('ApiClient over HTTP: endpoints', () => {
  it('given connect, when the account is read, then the limiter takes its rate limits and the meter its balance', async () => {
    server.on(
      '/v1/account',
      ok(accountRecord({ rate_limit: { requests_per_minute: 42, concurrent_batch_jobs: 4 } }), {
        creditsUsed: 0,
        billed: false,
      }),
    );
    const api = await ApiClient.connect({ baseUrl: server.baseUrl, apiKey: API_KEY });
    clients.push(api);
    expect(api.limiter.requestsPerMinute).toBe(42);
    expect(api.limiter.concurrentBatchJobs).toBe(4);
    expect(api.credits.creditsRemaining).toBe(1_000);
    expect(api.account?.account_id).toBe('acc_123');
  });

  it('given a connected client, when a 429 arrives, then the account is read again and the limiter takes the new limits', async () => {
    server.on(
      '/v1/account',
      ok(accountRecord({ rate_limit: { requests_per_minute: 6000, concurrent_batch_jobs: 4 } }), {
        creditsUsed: 0,
        billed: false,
      }),
      ok(accountRecord({ rate_limit: { requests_per_minute: 30, concurrent_batch_jobs: 1 } }), {
        creditsUsed: 0,
        billed: false,
      }),
    );
    server.on(
      '/v1/profiles/enrich',
      fail(429, 'rate_limited', 'tier changed', { 'retry-after': '1' }),
      ok(profile, { creditsUsed: 1, billed: true }),
    );
    const api = await ApiClient.connect({
      baseUrl: server.baseUrl,
      apiKey: API_KEY,
      retry: { baseDelayMs: 10, random: () => 0.5 },
    });
    clients.push(api);
    expect(api.limiter.requestsPerMinute).toBe(6000);

    await api.enrichProfile({ url: 'jane' });

    // The account is read again in the background: wait for it (vi.waitFor's default of 1 s is a race on a loaded machine).
    await vi.waitFor(() => expect(api.limiter.requestsPerMinute).toBe(30), {
      timeout: timeLimit(60_000),
      interval: 20,
    });
    expect(api.limiter.concurrentBatchJobs).toBe(1);
    expect(server.requestsTo('/v1/account')).toHaveLength(2);
  });

  it('given batch results with a cursor, when paged, then the query is sent and meta.nextCursor is returned', async () => {
    const entry = {
      ref: 'a',
      index: 0,
      operation: 'profiles.enrich',
      status: 'succeeded',
      credits_used: 1,
      data: profile,
    };
    server.on('/v1/batch/job_1/results', ok([entry], { nextCursor: 'cur_2' }));
    const { data, meta } = await client().getBatchResults('job_1', { status: 'succeeded', cursor: 'cur_1', limit: 50 });
    expect(data[0]?.ref).toBe('a');
    expect(meta.nextCursor).toBe('cur_2');
    expect(server.requests[0]?.url).toBe('/v1/batch/job_1/results?status=succeeded&cursor=cur_1&limit=50');
  });

  it('given the search variants, when searching, then each goes to its own path with the same body', async () => {
    const page = { results: [], pagination: { has_more: false } };
    server
      .on('/v1/search/people/sales-nav', ok(page))
      .on('/v1/search/companies/standard', ok(page))
      .on('/v1/search/people', ok(page));
    const api = client();
    await api.searchPeople({ filters: { titles: ['CTO'] } }, 'sales-nav');
    await api.searchCompanies({ filters: { keywords: 'robots' } }, 'standard');
    await api.searchPeople({ search_url: 'https://n.example/search?q=x' });
    expect(server.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      'POST /v1/search/people/sales-nav',
      'POST /v1/search/companies/standard',
      'POST /v1/search/people',
    ]);
    expect(JSON.parse(server.requests[0]?.body ?? '{}')).toEqual({ filters: { titles: ['CTO'] } });
    expect(api.credits.byOperation()['searchPeople:sales-nav']?.calls).toBe(1);
  });

  it('given Signal calls, when made, then methods, paths and bodies follow the spec', async () => {
    const signal = {
      id: 'sig_1',
      name: 'n',
      status: 'paused',
      schedule: { interval: '7d' },
      estimated_monthly_credits: 5,
    };
    server
      .on('/v1/signals/pause', ok({ paused: 3 }))
      .on('/v1/signals/sig_1/resume', ok({ id: 'sig_1', status: 'active', next_check_at: null }))
      .on(
        '/v1/signals/sig_1',
        ok({ id: 'sig_1', schedule: { interval: '3d' }, estimated_monthly_credits: 10 }),
        ok({ id: 'sig_1', deleted: true }),
      )
      .on('/v1/signals', ok([signal], { nextCursor: null }))
      .on('/v1/signals/sig_1/test', ok({ check_id: 'chk_1', matched: false, trigger_id: null }));
    const api = client();
    expect((await api.pauseSignalsByTag('team-a')).data.paused).toBe(3);
    expect((await api.resumeSignal('sig_1')).data.status).toBe('active');
    expect((await api.updateSignal('sig_1', { schedule: { interval: '3d' } })).data.estimated_monthly_credits).toBe(10);
    expect((await api.deleteSignal('sig_1')).data.deleted).toBe(true);
    expect((await api.listSignals({ tag: 'team-a', limit: 10 })).data).toHaveLength(1);
    expect((await api.testSignal('sig_1')).data).toMatchObject({ check_id: 'chk_1' });
    expect(server.requests.map((r) => `${r.method} ${r.url} ${r.body}`)).toEqual([
      'POST /v1/signals/pause {"tag":"team-a"}',
      'POST /v1/signals/sig_1/resume ',
      'PATCH /v1/signals/sig_1 {"schedule":{"interval":"3d"}}',
      'DELETE /v1/signals/sig_1 ',
      'GET /v1/signals?limit=10&tag=team-a ',
      'POST /v1/signals/sig_1/test ',
    ]);
  });
});

describe('ApiClient over HTTP: token auth', () => {
  function tokenServer(tokens: string[]): void {
    server.otherwise((req, res) => {
      if (req.url === '/api/api-auth/authenticate') {
        const body = JSON.parse(req.body) as { apiKey?: string };
        if (body.apiKey !== API_KEY) return json(res, 401, { error: 'Invalid API key' });
        return json(res, 200, { accessToken: tokens.shift() });
      }
      return fail(404, 'not_found')(req, res);
    });
  }

  it('given auth token, when two calls are made, then one exchange happens and the token is the whole Authorization header', async () => {
    const token = fakeJwt(Math.floor(Date.now() / 1000) + 86_400);
    tokenServer([token]);
    server.on('/v1/account', ok(accountRecord()), ok(accountRecord()));
    const api = client({ auth: 'token' });
    await api.getAccount();
    await api.getAccount();
    expect(server.requestsTo('/api/api-auth/authenticate')).toHaveLength(1);
    const calls = server.requestsTo('/v1/account');
    expect(calls.map((r) => r.headers.authorization)).toEqual([token, token]);
    expect(calls[0]?.headers['x-api-key']).toBeUndefined();
    expect(server.requestsTo('/api/api-auth/authenticate')[0]?.headers.authorization).toBeUndefined();
  });

  it('given a token within the safety margin of its exp, when the next call is made, then the client re-exchanges first', async () => {
    const soon = fakeJwt(Math.floor(Date.now() / 1000) + 60, { n: 1 });
    const fresh = fakeJwt(Math.floor(Date.now() / 1000) + 86_400, { n: 2 });
    tokenServer([soon, fresh]);
    server.on('/v1/account', ok(accountRecord()), ok(accountRecord()));
    const api = client({ auth: 'token', tokenSafetyMarginMs: 5 * 60_000 });
    await api.getAccount();
    await api.getAccount();
    expect(server.requestsTo('/api/api-auth/authenticate')).toHaveLength(2);
    expect(server.requestsTo('/v1/account').map((r) => r.headers.authorization)).toEqual([soon, fresh]);
  });

  it('given a token the service refuses with 401, when called, then the client re-exchanges once and repeats the call', async () => {
    const revoked = fakeJwt(Math.floor(Date.now() / 1000) + 86_400, { n: 1 });
    const fresh = fakeJwt(Math.floor(Date.now() / 1000) + 86_400, { n: 2 });
    tokenServer([revoked, fresh]);
    server.on('/v1/account', fail(401, 'invalid_api_key', 'token expired'), ok(accountRecord()));
    const api = client({ auth: 'token' });
    const { data } = await api.getAccount();
    expect(data.account_id).toBe('acc_123');
    expect(server.requestsTo('/api/api-auth/authenticate')).toHaveLength(2);
    expect(server.requestsTo('/v1/account').map((r) => r.headers.authorization)).toEqual([revoked, fresh]);
  });

  it('given a bad key, when exchanging, then InvalidApiKeyError is thrown without the key in its message', async () => {
    tokenServer([]);
    const api = new ApiClient({ baseUrl: server.baseUrl, apiKey: 'svc_live_wrong_key_value', auth: 'token' });
    clients.push(api);
    const error = await api.getAccount().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidApiKeyError);
    expect((error as Error).message).not.toContain('svc_live_wrong_key_value');
    expect(server.requestsTo('/v1/account')).toHaveLength(0);
  });

  it('given exchangeToken called directly, when it succeeds, then data.accessToken is returned', async () => {
    const token = fakeJwt(Math.floor(Date.now() / 1000) + 86_400);
    tokenServer([token]);
    const { data } = await client().exchangeToken();
    expect(data.accessToken).toBe(token);
    expect(JSON.parse(server.requests[0]?.body ?? '{}')).toEqual({ apiKey: API_KEY });
  });
});

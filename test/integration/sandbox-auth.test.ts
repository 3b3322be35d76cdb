import { describe, expect, it } from 'vitest';
import { Account, envelope, TokenExchangeError, TokenExchangeResponse } from '../../schemas/index.js';
import { useHarness } from '../helpers/sandbox.js';

const h = useHarness({ rpm: 5 });

describe('authentication', () => {
  it('given no key or a foreign key, when calling /v1, then 401 invalid_api_key with a requestId', async () => {
    for (const key of [null, 'sk_live_123', 'svc_test_']) {
      const res = await h.get('/v1/account', { key });
      expect(res.status).toBe(401);
      expect(res.body.error).toMatchObject({ type: 'invalid_api_key', requestId: expect.stringMatching(/^req_/) });
    }
  });

  it('given a token exchange, when the token is used as Authorization, then /v1 answers until 24 virtual hours pass', async () => {
    const exchange = await h.post('/api/api-auth/authenticate', { apiKey: 'svc_test_tok' }, { key: null });
    const { accessToken } = TokenExchangeResponse.parse(exchange.body);
    expect(accessToken.split('.')).toHaveLength(3);
    const ok = await h.get('/v1/account', { key: null, headers: { authorization: accessToken } });
    expect(envelope(Account).parse(ok.body).data.account_id).toMatch(/^acct_/);
    await h.sandbox.clock.advance(24 * 3_600_000);
    const expired = await h.get('/v1/account', { key: null, headers: { authorization: accessToken } });
    expect(expired.status).toBe(401);
  });

  it('given a bad key, when exchanging, then 401 with a plain string error', async () => {
    const res = await h.post('/api/api-auth/authenticate', { apiKey: 'nope' }, { key: null });
    expect(res.status).toBe(401);
    expect(typeof TokenExchangeError.parse(res.body).error).toBe('string');
  });

  it('given an unknown /v1 path, when called, then 404 not_found', async () => {
    expect((await h.get('/v1/teleport', { key: 'svc_test_paths' })).body.error.type).toBe('not_found');
  });
});

describe('rate limiting', () => {
  it('given more requests than rpm, when sent within a minute, then 429 rate_limited with Retry-After and X-RateLimit headers', async () => {
    const key = 'svc_test_rate';
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 7; i++) {
      last = await h.post('/v1/profiles/enrich', { url: 'a-b' }, { key });
      statuses.push(last.status);
    }
    expect(statuses.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
    expect(last?.status).toBe(429);
    expect(last?.body.error.type).toBe('rate_limited');
    expect(Number(last?.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(last?.headers.get('x-ratelimit-remaining')).toBe('0');
  });
});

describe('GET and PATCH /v1/account', () => {
  it('given a default webhook set for the first time, when patched, then the account secret is shown once', async () => {
    const key = 'svc_live_acct';
    const first = await h.call('/v1/account', {
      method: 'PATCH',
      key,
      body: { default_webhook_url: 'https://hooks.example/a' },
    });
    expect(first.body.data.webhook_secret).toMatch(/^whsec_/);
    const second = await h.call('/v1/account', {
      method: 'PATCH',
      key,
      body: { fallback_webhook_url: 'https://hooks.example/f' },
    });
    expect(second.body.data.webhook_secret).toBeUndefined();
    const account = envelope(Account).parse((await h.get('/v1/account', { key })).body);
    expect(account.data).toMatchObject({
      default_webhook_url: 'https://hooks.example/a',
      fallback_webhook_url: 'https://hooks.example/f',
      credits_remaining: 100_000,
    });
    expect(account.meta).toMatchObject({ creditsUsed: 0, billed: false });
    const polled = await h.get('/v1/account', { key });
    expect(polled.headers.get('x-ratelimit-remaining')).toBe(
      (await h.get('/v1/account', { key })).headers.get('x-ratelimit-remaining'),
    );
    expect((await h.call('/v1/account', { method: 'PATCH', key, body: { colour: 'red' } })).status).toBe(400);
  });
});

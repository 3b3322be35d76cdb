import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';

// A stream manifest names its call by method and path: the client sends it like its own typed method
// when it knows the endpoint (body checked, data typed, billed), and as it is when it does not.
describe('ApiClient.request by method and path, against the sandbox', () => {
  let sandbox: Sandbox;
  let client: ApiClient;
  beforeAll(async () => {
    sandbox = await startSandbox({ rpm: 100_000 });
    client = await ApiClient.connect({ baseUrl: sandbox.url, apiKey: 'svc_test_generic' });
  });
  afterAll(async () => {
    await client.close();
    await sandbox.close();
  });

  it('given a known POST endpoint, when requested by path, then it is billed as its typed method and its data comes back', async () => {
    const answer = await client.request({
      method: 'POST',
      path: '/v1/search/posts',
      body: { keywords: 'dbt', max_results: 30 },
      billed: true,
    });
    expect((answer.data as { posts: unknown[] }).posts).toHaveLength(30);
    expect(answer.meta.creditsUsed).toBe(4);
    expect(client.credits.byOperation().searchPosts).toMatchObject({ calls: 1 });
  });

  it('given a body its endpoint refuses, when requested, then the client refuses it before sending (nothing billed)', async () => {
    const before = sandbox.ledger.entries.length;
    await expect(
      client.request({ method: 'POST', path: '/v1/search/posts', body: { max_results: 30 }, billed: true }),
    ).rejects.toMatchObject({ code: 'SEEDLINE_INVALID_REQUEST_BODY' });
    expect(sandbox.ledger.entries.length).toBe(before);
  });

  it('given a known GET endpoint, when requested with a query, then the query goes as parameters', async () => {
    const answer = await client.request({
      method: 'GET',
      path: '/v1/signals',
      query: { limit: 5, cursor: undefined },
      billed: false,
    });
    expect(Array.isArray(answer.data)).toBe(true);
  });

  it('given a path the client does not know, when requested, then it goes out as written and the service answers for it', async () => {
    await expect(
      client.request({
        method: 'POST',
        path: '/v1/profiles/unknown-section',
        body: { url: 'ada-lovelace' },
        billed: true,
      }),
    ).rejects.toMatchObject({ status: 404 });
  });
});

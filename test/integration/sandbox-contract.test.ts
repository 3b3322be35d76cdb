import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import { verifyWebhook } from '../../src/client/webhook-signature.js';
import { startReceiver, useHarness } from '../helpers/sandbox.js';

const h = useHarness({ seed: 21 });

// The real ApiClient against the sandbox: if either drifts from the contract, this fails.
describe.each(['api-key', 'token'] as const)('ApiClient over %s auth against the sandbox', (auth) => {
  it('given every scrape method, when called, then each answers, validates and bills per the cost table', async () => {
    const client = await ApiClient.connect({
      baseUrl: h.sandbox.url,
      apiKey: `svc_live_contract_${auth.replace('-', '')}`,
      auth,
    });
    try {
      expect((await client.enrichProfile({ url: 'jane-doe' })).meta.creditsUsed).toBe(1);
      expect((await client.enrichCompany({ url: 'acme' })).meta.creditsUsed).toBe(1);
      expect((await client.companyHeadcount({ company_url: 'acme', filters: {} })).meta.creditsUsed).toBe(1);
      const people = await client.searchPeople({ filters: { keywords: 'data' } }, 'sales-nav');
      expect(people.meta.creditsUsed).toBe(2 * (people.data.pagination.pages_scraped ?? 0));
      const jobs = await client.searchJobs({ keywords: ['engineer'], max_results: 5 });
      expect(jobs.meta.creditsUsed).toBe(jobs.data.jobs.length);
      const activity = await client.profileActivity({ url: 'jane-doe', kind: 'posts', per_page: 2 });
      const post = await client.enrichPost({ url: activity.data.posts?.[0]?.url as string });
      expect(post.data.urn).toBe(activity.data.posts?.[0]?.urn);
      expect((await client.companyPosts({ url: 'acme' })).data.posts.length).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
  });

  it('given a batch submitted twice with one Idempotency-Key, when paged to the end, then one job and every ref come back', async () => {
    const client = await ApiClient.connect({
      baseUrl: h.sandbox.url,
      apiKey: `svc_test_contract_${auth.replace('-', '')}`,
      auth,
    });
    try {
      const body = {
        items: ['p-one', 'p-two', 'private-three'].map((url) => ({
          operation: 'profiles.enrich' as const,
          params: { url },
          ref: url,
        })),
      };
      const first = await client.submitBatch(body, { idempotencyKey: `k-${auth}` });
      const again = await client.submitBatch(body, { idempotencyKey: `k-${auth}` });
      expect(again.data.job_id).toBe(first.data.job_id);
      await h.sandbox.idle();
      const page = await client.getBatchResults(first.data.job_id, { limit: 10 });
      expect(page.data.map((entry) => entry.ref).sort()).toEqual(['p-one', 'p-two', 'private-three']);
      expect(page.meta.nextCursor).toBeNull();
    } finally {
      await client.close();
    }
  });
});

describe('ApiClient Signals and webhooks against the sandbox', () => {
  it('given a Signal with a webhook, when test-webhook fires, then our verifier accepts the signature', async () => {
    const receiver = await startReceiver();
    const client = await ApiClient.connect({ baseUrl: h.sandbox.url, apiKey: 'svc_test_contract_signals' });
    try {
      const signal = await client.createSignal({
        name: 'contract',
        target: { type: 'profile', site_url: 'jane-doe' },
        schedule: { interval: '1d' },
        criteria: { mode: 'field_change', fields: ['headline'] },
        notify: { webhook_url: receiver.url },
      });
      const secret = signal.data.notify?.webhook_secret as string;
      expect((await client.checkSignalNow(signal.data.id)).data.is_baseline).toBe(true);
      const test = await client.testSignalWebhook(signal.data.id, { idempotencyKey: 'w-1' });
      await h.sandbox.idle();
      expect((await client.getWebhookDelivery(test.data.delivery_id)).data.status).toBe('delivered');
      const hook = receiver.received[0];
      expect(
        verifyWebhook({
          header: hook?.headers['x-service-signature'] as string,
          rawBody: hook?.raw ?? '',
          secrets: secret,
        }).ok,
      ).toBe(true);
      expect(
        verifyWebhook({
          header: hook?.headers['x-service-signature'] as string,
          rawBody: `${hook?.raw} `,
          secrets: secret,
        }).ok,
      ).toBe(false);
      expect((await client.listTriggers({ signal_id: signal.data.id })).data).toEqual([]);
      expect((await client.getSignalUsage({})).data[0]).toMatchObject({ external_id: null, checks: 1 });
    } finally {
      await client.close();
      await receiver.close();
    }
  });
});

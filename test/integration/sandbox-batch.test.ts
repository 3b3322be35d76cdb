import { describe, expect, it } from 'vitest';
import { BatchJob, BatchResultsPage, envelope } from '../../schemas/index.js';
import { startHarness, useHarness } from '../helpers/sandbox.js';

const h = useHarness({ seed: 5, concurrentBatchJobs: 2, batchItemConcurrency: 3, balance: 1000 });

const profileItem = (url: string, ref?: string) => ({
  operation: 'profiles.enrich',
  params: { url },
  ...(ref ? { ref } : {}),
});

async function completed(key: string, jobId: string) {
  await h.sandbox.idle();
  return envelope(BatchJob).parse((await h.get(`/v1/batch/${jobId}`, { key })).body).data;
}

describe('POST /v1/batch and GET /v1/batch/{id}', () => {
  it('given enrich items, when the job completes, then rule 1 bills every item including the 422 and results carry refs', async () => {
    const key = 'svc_live_batch1';
    const res = await h.post(
      '/v1/batch',
      {
        items: [
          profileItem('ada-b', 'a'),
          profileItem('private-c', 'b'),
          profileItem('https://x.example/in/dora-e/', 'c'),
        ],
      },
      { key },
    );
    expect(res.status).toBe(202);
    const job = envelope(BatchJob).parse(res.body);
    expect(job.data.job_id).toMatch(/^job_/);
    expect(job.meta).toMatchObject({ creditsUsed: 3, billed: true, creditsRemaining: 997 });
    const done = await completed(key, job.data.job_id);
    expect(done).toMatchObject({
      status: 'completed',
      total: 3,
      resolved: 3,
      succeeded: 2,
      failed: 1,
      credits_used: 3,
      credits_reserved: 0,
    });
    expect(done.results?.map((r) => r.ref).sort()).toEqual(['a', 'c']);
    expect(done.failures?.[0]).toMatchObject({
      ref: 'b',
      status: 'failed',
      credits_used: 1,
      error: { type: 'unprocessable_target' },
    });
    expect((await h.get('/v1/account', { key })).body.data.credits_remaining).toBe(997);
  });

  it('given rule-2 items, when they resolve, then reservations settle to the actual cost and failures are refunded', async () => {
    const key = 'svc_live_batch2';
    const res = await h.post(
      '/v1/batch',
      {
        items: [
          { operation: 'search.jobs', params: { company_url: 'acme', max_results: 10 } },
          { operation: 'profiles.activity', params: { url: 'deleted-zed', kind: 'posts' } },
          { operation: 'companies.headcount', params: { company_url: 'globex', filters: {} } },
        ],
      },
      { key },
    );
    expect(res.body.data.credits_reserved).toBe(10 + 2 + 1);
    expect(res.body.meta.creditsUsed).toBe(0);
    const done = await completed(key, res.body.data.job_id);
    const jobs = done.results?.find((r) => r.operation === 'search.jobs');
    const cost = (jobs?.data as { jobs: unknown[] }).jobs.length;
    expect(jobs?.credits_used).toBe(cost);
    expect(done.failures?.[0]).toMatchObject({ operation: 'profiles.activity', credits_used: 0 });
    expect(done.credits_used).toBe(cost + 1);
    expect((await h.get('/v1/account', { key })).body.data.credits_remaining).toBe(1000 - cost - 1);
  });

  it('given a sales-nav search item, when it runs, then the unused part of its reservation is refunded', async () => {
    const key = 'svc_live_batch3';
    const res = await h.post(
      '/v1/batch',
      {
        items: [{ operation: 'search.people.sales_nav', params: { filters: { keywords: 'rare' }, max_results: 500 } }],
      },
      { key },
    );
    expect(res.body.meta.creditsUsed).toBe(40);
    const done = await completed(key, res.body.data.job_id);
    const entry = done.results?.[0] ?? done.failures?.[0];
    const pages = (entry?.data as { pagination: { pages_scraped: number } }).pagination.pages_scraped;
    expect(entry?.credits_used).toBe(2 * pages);
    expect((await h.get('/v1/account', { key })).body.data.credits_remaining).toBe(1000 - 2 * pages);
  });

  it('given the same Idempotency-Key, when resubmitted, then the original job returns (200) and nothing is billed again', async () => {
    const key = 'svc_live_batch4';
    const body = { items: [profileItem('sam-one'), profileItem('sam-two')] };
    const first = await h.post('/v1/batch', body, { key, headers: { 'idempotency-key': 'k-1' } });
    const again = await h.post('/v1/batch', body, { key, headers: { 'idempotency-key': 'k-1' } });
    expect(again.status).toBe(200);
    expect(again.body.data.job_id).toBe(first.body.data.job_id);
    expect(h.sandbox.ledger.countFor('profiles.enrich', 'https://www.network.example/in/sam-one')).toBe(1);
    const conflict = await h.post(
      '/v1/batch',
      { items: [profileItem('sam-three')] },
      { key, headers: { 'idempotency-key': 'k-1' } },
    );
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.type).toBe('idempotency_conflict');
    await h.sandbox.idle();
  });

  it('given a balance too small, when submitting, then 402 and nothing is created', async () => {
    const key = 'svc_live_batch5';
    const items = Array.from({ length: 21 }, () => ({
      operation: 'search.jobs',
      params: { keywords: ['x'], max_results: 50 },
    }));
    const res = await h.post('/v1/batch', { items }, { key });
    expect(res.status).toBe(402);
    expect(res.body.error.type).toBe('insufficient_credits');
    expect((await h.get('/v1/account', { key })).body.data.credits_remaining).toBe(1000);
  });

  it('given an unknown operation or invalid params, when submitting, then 400 names the index', async () => {
    const bad = await h.post('/v1/batch', {
      items: [profileItem('ok'), { operation: 'profiles.teleport', params: {} }],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('items.1');
    const invalid = await h.post('/v1/batch', {
      items: [profileItem('ok'), { operation: 'profiles.enrich', params: { url: 'x', colour: 1 } }],
    });
    expect(invalid.body.error.message).toContain('items[1]');
  });

  it('given running jobs at the limit, when another is submitted, then 429 rate_limited with Retry-After', async () => {
    // The first job's items are held until the second submission is answered: it is running then, however slow the machine.
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const slow = await startHarness({ concurrentBatchJobs: 1, beforeBatchItem: () => held });
    try {
      const items = Array.from({ length: 20 }, (_, i) => profileItem(`p-${i}`));
      expect((await slow.post('/v1/batch', { items })).status).toBe(202);
      const second = await slow.post('/v1/batch', { items });
      expect(second.status).toBe(429);
      expect(second.headers.get('retry-after')).toMatch(/^\d+$/);
    } finally {
      release();
      await slow.sandbox.close();
    }
  });

  it('given an unknown job id, when read, then 404 not_found', async () => {
    expect((await h.get('/v1/batch/job_nope')).body.error.type).toBe('not_found');
  });
});

describe('GET /v1/batch/{id}/results', () => {
  it('given a running job, when paged by cursor, then every entry arrives once and nextCursor is null only at the end', async () => {
    const slow = await startHarness({ latencyMs: [5, 15], batchItemConcurrency: 4 });
    try {
      const items = Array.from({ length: 30 }, (_, i) => profileItem(i % 7 === 0 ? `private-${i}` : `person-${i}`));
      const submitted = await slow.post('/v1/batch', { items });
      const seen: string[] = [];
      let cursor = '';
      for (let guard = 0; guard < 2000; guard++) {
        const page = await slow.get(
          `/v1/batch/${submitted.body.data.job_id}/results?limit=7${cursor ? `&cursor=${cursor}` : ''}`,
        );
        BatchResultsPage.parse(page.body.data);
        seen.push(...page.body.data.map((e: { ref: string }) => e.ref));
        if (page.body.meta.nextCursor === null) break;
        cursor = page.body.meta.nextCursor;
      }
      expect(seen.sort()).toEqual(items.map((_, i) => String(i)).sort());
      const failed = await slow.get(`/v1/batch/${submitted.body.data.job_id}/results?status=failed`);
      expect(failed.body.data.every((e: { status: string }) => e.status === 'failed')).toBe(true);
      expect(failed.body.data).toHaveLength(5);
    } finally {
      await slow.sandbox.close();
    }
  });
});

import { describe, expect, it } from 'vitest';
import {
  ActivityPage,
  Company,
  CompanyPostsPage,
  CompanySearchResult,
  envelope,
  ErrorEnvelope,
  HeadcountResult,
  JobSearchResult,
  PeopleSearchResult,
  Post,
  PostSearchResult,
  Profile,
} from '../../schemas/index.js';
import { ApiClient } from '../../src/client/index.js';
import { LIVE_KEY, useHarness, TEST_KEY } from '../helpers/sandbox.js';

const h = useHarness({ seed: 3 });

describe('POST /v1/profiles/enrich', () => {
  it('given a live key, when a profile is enriched, then 1 credit is billed and the answer validates', async () => {
    const before = (await h.get('/v1/account', { key: 'svc_live_enrich1' })).body.data.credits_remaining;
    const res = await h.post(
      '/v1/profiles/enrich',
      { url: 'https://network.example/in/ada-lovelace/?trk=feed' },
      { key: 'svc_live_enrich1' },
    );
    expect(res.status).toBe(200);
    const parsed = envelope(Profile).parse(res.body);
    expect(parsed.data.url).toBe('https://www.network.example/in/ada-lovelace');
    expect(parsed.data.urn).toMatch(/^ACoAA/);
    expect(parsed.meta).toMatchObject({
      creditsUsed: 1,
      billed: true,
      reason: 'profile_found',
      creditsRemaining: before - 1,
    });
    expect(parsed.meta.requestId).toMatch(/^req_/);
    expect(res.headers.get('x-ratelimit-limit')).toBe('600');
  });

  it('given a test key, when a profile is enriched, then nothing is billed but creditsUsed says what it would cost', async () => {
    const res = await h.post('/v1/profiles/enrich', { url: 'grace-hopper' }, { key: TEST_KEY });
    expect(res.body.meta).toMatchObject({ creditsUsed: 1, billed: false, creditsRemaining: 100_000 });
    expect(h.sandbox.ledger.entries.at(-1)).toMatchObject({ operation: 'profiles.enrich', billed: false, credits: 1 });
  });

  it('given fields and with_followers_and_connections, when enriched, then only those fields and the counts come back', async () => {
    const res = await h.post('/v1/profiles/enrich', { url: 'grace-hopper', fields: ['headline', 'followers_count'] });
    expect(Object.keys(res.body.data).sort()).toEqual(['followers_count', 'headline']);
    const full = await h.post('/v1/profiles/enrich', { url: 'grace-hopper', with_followers_and_connections: true });
    expect(typeof full.body.data.connections_count).toBe('number');
    const plain = await h.post('/v1/profiles/enrich', { url: 'grace-hopper' });
    expect(plain.body.data.connections_count).toBeUndefined();
  });

  it('given fields, when the client enriches a profile and a company, then the answers hold those fields and what identifies the record, and validate', async () => {
    const client = await ApiClient.connect({ baseUrl: h.sandbox.url, apiKey: 'svc_live_enrich_fields' });
    try {
      const profile = await client.enrichProfile({ url: 'grace-hopper', fields: ['headline'] });
      expect(Object.keys(profile.data).sort()).toEqual(['headline', 'public_identifier', 'scraped_at', 'url', 'urn']);
      const company = await client.enrichCompany({ domain: 'example.com', fields: ['name'] });
      expect(Object.keys(company.data).sort()).toEqual(['name', 'network_id', 'scraped_at', 'url']);
    } finally {
      await client.close();
    }
  });

  it('given the urn of a profile, when enriched by urn, then the same profile comes back', async () => {
    const byUrl = await h.post('/v1/profiles/enrich', { url: 'linus-torvalds' });
    const byUrn = await h.post('/v1/profiles/enrich', { urn: byUrl.body.data.urn });
    expect(byUrn.body.data.public_identifier).toBe('linus-torvalds');
    expect(byUrn.body.data.headline).toBe(byUrl.body.data.headline);
  });

  it('given a private or deleted profile, when enriched, then 422 unprocessable_target and nothing is billed', async () => {
    for (const slug of ['private-jane', 'deleted-joe']) {
      const res = await h.post('/v1/profiles/enrich', { url: slug }, { key: 'svc_live_enrich2' });
      expect(res.status).toBe(422);
      expect(ErrorEnvelope.parse(res.body).error).toMatchObject({ type: 'unprocessable_target' });
      expect(res.body.error.requestId).toMatch(/^req_/);
    }
    expect(
      h.sandbox.ledger.entries.filter((e) => e.target.includes('private-jane') || e.target.includes('deleted-joe')),
    ).toEqual([]);
  });

  it('given a flaky profile, when enriched twice with the same body, then the first is 504 and the retry succeeds', async () => {
    const first = await h.post('/v1/profiles/enrich', { url: 'flaky-fred' });
    expect(first.status).toBe(504);
    expect(first.body.error.type).toBe('upstream_timeout');
    const second = await h.post('/v1/profiles/enrich', { url: 'flaky-fred' });
    expect(second.status).toBe(200);
  });

  it('given an unknown body field or malformed JSON or a bad URL, when enriched, then 400 invalid_request', async () => {
    expect((await h.post('/v1/profiles/enrich', { url: 'a-b', colour: 'blue' })).body.error.type).toBe(
      'invalid_request',
    );
    expect((await h.post('/v1/profiles/enrich', '{not json')).status).toBe(400);
    expect((await h.post('/v1/profiles/enrich', { url: 'https://network.example/company/acme' })).status).toBe(400);
    expect((await h.post('/v1/profiles/enrich', {})).status).toBe(400);
  });
});

describe('company, post, headcount and search endpoints', () => {
  it('given a company domain, when enriched, then the record validates and costs 1', async () => {
    const res = await h.post('/v1/companies/enrich', { domain: 'www.globex.com' });
    expect(envelope(Company).parse(res.body).data.url).toBe('https://www.network.example/company/globex');
    expect(res.body.meta.creditsUsed).toBe(1);
  });

  it('given a post URL from an activity page, when enriched, then the same post comes back', async () => {
    const page = await h.post('/v1/profiles/activity', { url: 'ada-lovelace', kind: 'posts' });
    const first = page.body.data.posts[0];
    const res = await h.post('/v1/posts/enrich', { url: first.url });
    const post = envelope(Post).parse(res.body);
    expect(post.data.urn).toBe(first.urn);
    expect(post.data.posted_at).toBe(first.posted_at);
    expect(post.meta.reason).toBe('post_found');
  });

  it('given filters, when headcount is counted, then it echoes them and costs 1', async () => {
    const res = await h.post('/v1/companies/headcount', { company_url: 'acme', filters: { seniorities: ['vp'] } });
    expect(envelope(HeadcountResult).parse(res.body).data.filters_applied).toEqual({ seniorities: ['vp'] });
    expect(res.body.meta.creditsUsed).toBe(1);
  });

  it('given a people search, when run, then 2 credits per scraped page and resolved_search_url is set', async () => {
    const res = await h.post('/v1/search/people', { filters: { titles: ['CTO'] }, max_results: 60 });
    const parsed = envelope(PeopleSearchResult).parse(res.body);
    const pages = parsed.data.pagination.pages_scraped ?? 0;
    expect(parsed.meta.creditsUsed).toBe(2 * pages);
    expect(Math.ceil(parsed.data.results.length / 25)).toBe(pages);
    expect(parsed.meta.resolved_search_url).toContain('/search/results/people/');
    const salesNav = await h.post('/v1/search/people/sales-nav', { filters: { titles: ['CTO'] } });
    expect(salesNav.body.meta.resolved_search_url).toContain('/sales/search/people');
    const standard = await h.post('/v1/search/people/standard', {
      search_url: 'https://www.network.example/search/results/people/?keywords=x',
    });
    expect(standard.body.meta.resolved_search_url).toBe(
      'https://www.network.example/search/results/people/?keywords=x',
    );
  });

  it('given company searches, when run, then results validate and neither or both of filters/search_url is 400', async () => {
    const res = await h.post('/v1/search/companies', { filters: { company_sizes: ['51-200'] }, max_results: 30 });
    expect(envelope(CompanySearchResult).parse(res.body).meta.creditsUsed).toBe(
      2 * (res.body.data.pagination.pages_scraped as number),
    );
    expect((await h.post('/v1/search/companies', { max_results: 3 })).status).toBe(400);
    expect((await h.post('/v1/search/companies', { filters: { keywords: 'x' }, search_url: 'u' })).status).toBe(400);
  });

  it('given a job search, when run, then 1 credit per job and reason <n>_jobs_returned', async () => {
    const res = await h.post('/v1/search/jobs', {
      company_url: 'https://www.network.example/company/initech',
      max_results: 5,
    });
    const parsed = envelope(JobSearchResult).parse(res.body);
    expect(parsed.meta.creditsUsed).toBe(parsed.data.jobs.length);
    expect(parsed.meta.reason).toBe(`${parsed.data.jobs.length}_jobs_returned`);
    expect((await h.post('/v1/search/jobs', { max_results: 5 })).status).toBe(400);
  });

  it('given a post search, when run, then posts validate and cost 2 per page', async () => {
    const res = await h.post('/v1/search/posts', { keywords: 'postgres', max_results: 30 });
    const parsed = envelope(PostSearchResult).parse(res.body);
    expect(parsed.meta.creditsUsed).toBe(2 * Math.ceil(parsed.data.posts.length / 25));
  });
});

describe('POST /v1/profiles/activity and /v1/companies/posts', () => {
  it('given a profile with posts, when paged, then page 2 needs the token and pages do not overlap', async () => {
    const first = await h.post('/v1/profiles/activity', { url: 'ada-lovelace', kind: 'posts', per_page: 5 });
    const page1 = envelope(ActivityPage).parse(first.body);
    expect(page1.meta.creditsUsed).toBe(2);
    expect(page1.data.pagination.has_more).toBe(true);
    const missing = await h.post('/v1/profiles/activity', { url: 'ada-lovelace', kind: 'posts', per_page: 5, page: 2 });
    expect(missing.status).toBe(400);
    const second = await h.post('/v1/profiles/activity', {
      url: 'ada-lovelace',
      kind: 'posts',
      per_page: 5,
      page: 2,
      pagination_token: page1.data.pagination_token,
    });
    const urns1 = page1.data.posts?.map((p) => p.urn) ?? [];
    const urns2 = (second.body.data.posts as Array<{ urn: string }>).map((p) => p.urn);
    expect(urns2.some((u) => urns1.includes(u))).toBe(false);
  });

  it('given each kind, when fetched, then the array is named after the kind and validates', async () => {
    for (const kind of ['posts', 'comments', 'reactions', 'reposts']) {
      const res = await h.post('/v1/profiles/activity', { url: 'margaret-hamilton', kind });
      const page = envelope(ActivityPage).parse(res.body);
      expect(Array.isArray((page.data as Record<string, unknown>)[kind])).toBe(true);
      expect(page.meta.creditsUsed).toBe(page.data.pagination.returned ? 2 : 0);
    }
  });

  it('given a week passes on the virtual clock, when posts are re-read, then new posts appear on top', async () => {
    const before = await h.post('/v1/profiles/activity', { url: 'ada-lovelace', kind: 'posts' });
    await h.sandbox.clock.advance(14 * 86_400_000);
    const after = await h.post('/v1/profiles/activity', { url: 'ada-lovelace', kind: 'posts' });
    const newest = Date.parse(after.body.data.posts[0].posted_at);
    expect(newest).toBeGreaterThan(Date.parse(before.body.data.posts[0].posted_at));
    expect(after.body.data.pagination.total_estimate).toBeGreaterThan(before.body.data.pagination.total_estimate);
  });

  it('given a private profile, when its activity is read with a live key, then 422 is billed (errors table)', async () => {
    const res = await h.post('/v1/profiles/activity', { url: 'private-pam', kind: 'posts' }, { key: LIVE_KEY });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ type: 'unprocessable_target', billed: true, creditsUsed: 2 });
  });

  it('given a company, when its posts are read, then they validate', async () => {
    const res = await h.post('/v1/companies/posts', { url: 'acme', per_page: 3 });
    const page = envelope(CompanyPostsPage).parse(res.body);
    expect(page.data.posts.length).toBeLessThanOrEqual(3);
    expect(page.data.posts[0]?.author?.headline).toBeUndefined();
  });
});

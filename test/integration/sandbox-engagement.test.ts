import { describe, expect, it } from 'vitest';
import {
  BatchJob,
  envelope,
  PostCommentsPage,
  PostReactionsPage,
  ProfileInterestsPage,
  ProfileRecommendationsPage,
  ReactionType,
} from '../../schemas/index.js';
import type { z } from 'zod';
import { useHarness } from '../helpers/sandbox.js';

const h = useHarness({ seed: 21 });
const ORIGIN = 'https://www.network.example';
const DAY = 86_400_000;

/** A small stable number per author, so each author's post has its own URN. */
const saltOf = (text: string) => [...text].reduce((sum, ch) => (sum * 31 + ch.charCodeAt(0)) % 4_000_000, 7);
/** A post URL whose URN encodes its posting time (the way the network's URNs do). */
const postUrl = (author: string, postedMs: number, salt = saltOf(author)) =>
  `${ORIGIN}/posts/${author}_activity-${((BigInt(postedMs) << 22n) | BigInt(salt)).toString()}`;
/** Posted two months before the sandbox's start: every comment and reaction has arrived. */
const OLD = Date.UTC(2026, 8, 1);

interface Feed {
  op: string;
  path: string;
  list: string;
  schema: z.ZodType;
  body(slug: string): Record<string, unknown>;
}

const FEEDS: Feed[] = [
  {
    op: 'posts.comments',
    path: '/v1/posts/comments',
    list: 'comments',
    schema: PostCommentsPage,
    body: (slug) => ({ url: postUrl(slug, OLD) }),
  },
  {
    op: 'posts.reactions',
    path: '/v1/posts/reactions',
    list: 'reactions',
    schema: PostReactionsPage,
    body: (slug) => ({ url: postUrl(slug, OLD) }),
  },
  {
    op: 'profiles.recommendations',
    path: '/v1/profiles/recommendations',
    list: 'recommendations',
    schema: ProfileRecommendationsPage,
    body: (slug) => ({ url: `${ORIGIN}/in/${slug}/`, direction: 'given' }),
  },
  {
    op: 'profiles.interests',
    path: '/v1/profiles/interests',
    list: 'interests',
    schema: ProfileInterestsPage,
    body: (slug) => ({ url: slug, kind: 'top_voices' }),
  },
];

let keyCounter = 0;
const liveKey = () => `svc_live_engagement${keyCounter++}`;
const balance = async (key: string) => (await h.get('/v1/account', { key })).body.data.credits_remaining as number;

/** Pages a feed to the end by token; returns every page's answer. */
async function pageAll(feed: Feed, slug: string, key: string, perPage: number) {
  const answers: Array<{ status: number; body: any }> = [];
  let token: string | null = null;
  for (let page = 1; page === 1 || token !== null; page++) {
    const body: Record<string, unknown> = {
      ...feed.body(slug),
      page,
      per_page: perPage,
      ...(token ? { pagination_token: token } : {}),
    };
    const res: { status: number; body: any } = await h.post(feed.path, body, { key });
    expect(res.status).toBe(200);
    answers.push(res);
    token = res.body.data.pagination_token;
    if (page > 50) throw new Error('paging did not end');
  }
  return answers;
}

describe.each(FEEDS)('$path ($op)', (feed) => {
  it('given a visible target, when paged by token to the end, then every item arrives once and each non-empty page bills 2 credits', async () => {
    const key = liveKey();
    const before = await balance(key);
    const answers = await pageAll(feed, 'ada-lovelace', key, 10);
    const items = answers.flatMap((res) => res.body.data[feed.list] as unknown[]);
    const first = envelope(feed.schema).parse(answers[0]?.body).data as {
      pagination: { total_estimate?: number | null; has_more: boolean };
    };
    expect(first.pagination.total_estimate).toBe(items.length);
    // More than one page at the default page size, so streams have paging to do.
    expect(items.length).toBeGreaterThan(25);
    expect(new Set(items.map((item) => JSON.stringify(item))).size).toBe(items.length);
    expect(answers.map((res) => res.body.data.pagination.has_more)).toEqual(
      answers.map((_, i) => i < answers.length - 1),
    );
    expect(answers.every((res) => res.body.meta.creditsUsed === 2 && res.body.meta.billed === true)).toBe(true);
    expect(await balance(key)).toBe(before - 2 * answers.length);
  });

  it('given page 2 without a token or with a token of another feed, when requested, then 400 invalid_request and nothing is billed', async () => {
    const key = liveKey();
    const page1 = await h.post(feed.path, { ...feed.body('ada-lovelace'), per_page: 5 }, { key });
    const other = await h.post(feed.path, { ...feed.body('grace-hopper'), per_page: 5 }, { key });
    const spent = await balance(key);
    expect(
      (await h.post(feed.path, { ...feed.body('ada-lovelace'), page: 2, per_page: 5 }, { key })).body.error.type,
    ).toBe('invalid_request');
    const foreign = await h.post(
      feed.path,
      { ...feed.body('ada-lovelace'), page: 2, per_page: 5, pagination_token: other.body.data.pagination_token },
      { key },
    );
    expect(foreign.status).toBe(400);
    expect(
      (
        await h.post(
          feed.path,
          { ...feed.body('ada-lovelace'), page: 2, per_page: 5, pagination_token: page1.body.data.pagination_token },
          { key },
        )
      ).status,
    ).toBe(200);
    expect(await balance(key)).toBe(spent - 2);
  });

  it('given a quiet-* and a hidden-* target, when read, then both pages are empty and free; only the hidden one reports no total', async () => {
    const key = liveKey();
    const before = await balance(key);
    const quiet = await h.post(feed.path, feed.body('quiet-quinn-north'), { key });
    const hidden = await h.post(feed.path, feed.body('hidden-hana-west'), { key });
    for (const res of [quiet, hidden]) {
      expect(res.status).toBe(200);
      expect(res.body.data[feed.list]).toEqual([]);
      expect(res.body.data.pagination).toMatchObject({ returned: 0, page: 1, has_more: false });
      expect(res.body.data.pagination_token).toBeNull();
      expect(res.body.meta).toMatchObject({ creditsUsed: 0, billed: false });
    }
    expect(quiet.body.data.pagination.total_estimate).toBe(0);
    expect(quiet.body.meta.reason).toBe('success');
    expect(hidden.body.data.pagination.total_estimate).toBeNull();
    expect(hidden.body.meta.reason).toBe('feed_hidden');
    expect(await balance(key)).toBe(before);
  });

  it('given a private-* or deleted-* target, when called on the single endpoint, then 422 billed 2 credits like activity', async () => {
    const key = liveKey();
    const before = await balance(key);
    for (const slug of ['private-pat-east', 'deleted-dan-south']) {
      const res = await h.post(feed.path, feed.body(slug), { key });
      expect(res.status).toBe(422);
      expect(res.body.error).toMatchObject({ type: 'unprocessable_target', creditsUsed: 2, billed: true });
    }
    expect(await balance(key)).toBe(before - 4);
    expect(
      h.sandbox.ledger.entries.some(
        (e) => e.operation === feed.op && e.target.includes('private-pat-east') && e.credits === 2,
      ),
    ).toBe(true);
  });

  it('given batch items (pages 1 and 2, a quiet and a private target), when resolved, then data equals the single endpoint and billing follows rule 2', async () => {
    const key = liveKey();
    const single = await h.post(
      feed.path,
      { ...feed.body('ada-lovelace'), per_page: 25 },
      { key: 'svc_test_engagement' },
    );
    const token = single.body.data.pagination_token as string;
    const page2 = await h.post(
      feed.path,
      { ...feed.body('ada-lovelace'), page: 2, per_page: 25, pagination_token: token },
      { key: 'svc_test_engagement' },
    );
    const items = [
      { operation: feed.op, ref: 'p1', params: { ...feed.body('ada-lovelace'), per_page: 25 } },
      {
        operation: feed.op,
        ref: 'p2',
        params: { ...feed.body('ada-lovelace'), page: 2, per_page: 25, pagination_token: token },
      },
      { operation: feed.op, ref: 'quiet', params: feed.body('quiet-quinn-north') },
      { operation: feed.op, ref: 'private', params: feed.body('private-pat-east') },
    ];
    const before = await balance(key);
    const submitted = await h.post('/v1/batch', { items }, { key });
    expect(submitted.status).toBe(202);
    expect(submitted.body.data.credits_reserved).toBe(8);
    expect(submitted.body.meta.creditsUsed).toBe(0);
    await h.sandbox.idle();
    const job = envelope(BatchJob).parse((await h.get(`/v1/batch/${submitted.body.data.job_id}`, { key })).body).data;
    const byRef = new Map([...(job.results ?? []), ...(job.failures ?? [])].map((entry) => [entry.ref, entry]));
    expect(byRef.get('p1')).toMatchObject({
      status: 'succeeded',
      operation: feed.op,
      credits_used: 2,
      data: single.body.data,
    });
    expect(byRef.get('p2')).toMatchObject({ status: 'succeeded', credits_used: 2, data: page2.body.data });
    expect(byRef.get('quiet')).toMatchObject({ status: 'succeeded', credits_used: 0 });
    expect(byRef.get('private')).toMatchObject({
      status: 'failed',
      credits_used: 0,
      error: { type: 'unprocessable_target' },
    });
    expect(job).toMatchObject({ credits_used: 4, credits_reserved: 0 });
    expect(await balance(key)).toBe(before - 4);
    for (const ref of ['p1', 'p2', 'quiet']) feed.schema.parse(byRef.get(ref)?.data);
  });

  it('given an unknown body field or per_page above 25, when called, then 400 and nothing is billed (also as a batch item)', async () => {
    const key = liveKey();
    const before = await balance(key);
    expect((await h.post(feed.path, { ...feed.body('ada-lovelace'), colour: 'red' }, { key })).status).toBe(400);
    expect((await h.post(feed.path, { ...feed.body('ada-lovelace'), per_page: 26 }, { key })).status).toBe(400);
    const batch = await h.post(
      '/v1/batch',
      { items: [{ operation: feed.op, params: { ...feed.body('ada-lovelace'), per_page: 0 } }] },
      { key },
    );
    expect(batch.body.error.message).toContain('items[0]');
    expect(await balance(key)).toBe(before);
  });
});

describe('engagement records as docs/service-assumptions.md shapes them', () => {
  it('given a post, when its comments are read, then replies point at top-level comments of the same post and reply counts add up', async () => {
    const answers = await pageAll(FEEDS[0] as Feed, 'ada-lovelace', 'svc_test_engagement', 25);
    const comments = answers.flatMap((res) => PostCommentsPage.parse(res.body.data).comments);
    const byUrn = new Map(comments.map((comment) => [comment.urn, comment]));
    const replies = comments.filter((comment) => comment.parent_urn !== null);
    expect(replies.length).toBeGreaterThan(0);
    for (const reply of replies) expect(byUrn.get(reply.parent_urn as string)?.parent_urn).toBeNull();
    const total = comments.reduce((sum, comment) => sum + (comment.replies_count ?? 0), 0);
    expect(total).toBe(replies.length);
    const times = comments.map((comment) => comment.posted_at);
    expect([...times].sort().reverse()).toEqual(times);
    expect(
      comments.every((comment) => typeof comment.author?.name === 'string' && typeof comment.author?.url === 'string'),
    ).toBe(true);
  });

  it('given a post, when its reactions are read, then each reactor reacts once with a known type, newest first', async () => {
    const answers = await pageAll(FEEDS[1] as Feed, 'ada-lovelace', 'svc_test_engagement', 25);
    const reactions = answers.flatMap((res) => PostReactionsPage.parse(res.body.data).reactions);
    expect(new Set(reactions.map((reaction) => reaction.reactor.url)).size).toBe(reactions.length);
    expect(reactions.every((reaction) => ReactionType.safeParse(reaction.reaction_type).success)).toBe(true);
    const times = reactions.map((reaction) => reaction.reacted_at as string);
    expect([...times].sort().reverse()).toEqual(times);
  });

  it('given a fresh post, when the clock advances, then new comments appear on top while a token taken before keeps its pages', async () => {
    const fresh = postUrl('ada-lovelace', h.sandbox.clock.nowMs() - DAY, 77);
    const first = await h.post('/v1/posts/comments', { url: fresh, per_page: 5 });
    const before = first.body.data.pagination.total_estimate as number;
    await h.sandbox.clock.advance(14 * DAY);
    const resumed = await h.post('/v1/posts/comments', {
      url: fresh,
      page: 2,
      per_page: 5,
      pagination_token: first.body.data.pagination_token,
    });
    expect(resumed.body.data.pagination.total_estimate).toBe(before);
    const later = await h.post('/v1/posts/comments', { url: fresh, per_page: 5 });
    expect(later.body.data.pagination.total_estimate).toBeGreaterThan(before);
    expect(later.body.data.comments[0].posted_at > first.body.data.comments[0].posted_at).toBe(true);
  });

  it('given the two directions and five kinds, when read, then each is its own feed echoing its direction or kind', async () => {
    const given = await h.post('/v1/profiles/recommendations', { url: 'ada-lovelace', direction: 'given' });
    const received = await h.post('/v1/profiles/recommendations', { url: 'ada-lovelace' });
    expect(received.body.data.direction).toBe('received');
    expect(given.body.data.recommendations).not.toEqual(received.body.data.recommendations);
    for (const kind of ['companies', 'groups', 'schools', 'newsletters', 'top_voices']) {
      const res = await h.post('/v1/profiles/interests', { url: 'ada-lovelace', kind });
      const page = ProfileInterestsPage.parse(res.body.data);
      expect(page.kind).toBe(kind);
      expect(new Set(page.interests.map((i) => i.url)).size).toBe(page.interests.length);
      expect(
        page.interests.every((i) =>
          kind === 'groups' ? i.followers_count === undefined : typeof i.followers_count === 'number',
        ),
      ).toBe(true);
    }
    expect((await h.post('/v1/profiles/interests', { url: 'ada-lovelace' })).body.data.kind).toBe('companies');
  });

  it('given the OpenAPI document, when read, then the four endpoints declare their page cost', async () => {
    const doc = (await h.get('/openapi.json', { key: null })).body;
    for (const path of FEEDS.map((feed) => feed.path)) {
      expect(doc.paths[path].post['x-credits']).toMatch(/^2 credits per page/);
      expect(doc.paths[path].post.requestBody).toBeDefined();
    }
    expect(doc.components.schemas.PostCommentsPage.properties.comments).toBeDefined();
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/api-client.js';
import { RequestValidationError, UnprocessableTargetError } from '../../src/client/errors.js';
import {
  PostCommentsPage,
  PostReactionsPage,
  ProfileInterestsPage,
  ProfileRecommendationsPage,
} from '../../schemas/index.js';
import { useHarness } from '../helpers/sandbox.js';

const h = useHarness({ seed: 8 });
const POST = `https://www.network.example/posts/ada-lovelace_activity-${((BigInt(Date.UTC(2026, 8, 1)) << 22n) | 99n).toString()}`;
const clients: ApiClient[] = [];

async function client(apiKey: string): Promise<ApiClient> {
  const instance = await ApiClient.connect({ baseUrl: h.sandbox.url, apiKey });
  clients.push(instance);
  return instance;
}

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

describe('ApiClient engagement and profile-section methods against the sandbox', () => {
  it('given each method, when page 1 and then page 2 by token are read, then the pages are typed and billed 2 credits each', async () => {
    const api = await client('svc_live_client_engagement');
    const c1 = await api.postComments({ url: POST, per_page: 10 });
    const c2 = await api.postComments({
      url: POST,
      page: 2,
      per_page: 10,
      pagination_token: c1.data.pagination_token as string,
    });
    expect(c2.data.comments[0]?.urn).not.toBe(c1.data.comments[0]?.urn);
    expect(typeof c1.data.comments[0]?.urn).toBe('string');
    const r1 = await api.postReactions({ urn: c1.data.urn as string, per_page: 10 });
    await api.postReactions({
      urn: c1.data.urn as string,
      page: 2,
      per_page: 10,
      pagination_token: r1.data.pagination_token as string,
    });
    const rec1 = await api.profileRecommendations({ url: 'ada-lovelace', per_page: 10 });
    expect(rec1.data.direction).toBe('received');
    await api.profileRecommendations({
      url: 'ada-lovelace',
      page: 2,
      per_page: 10,
      pagination_token: rec1.data.pagination_token as string,
    });
    const i1 = await api.profileInterests({ url: 'ada-lovelace', kind: 'schools', per_page: 10 });
    expect(i1.data.interests.every((interest) => interest.url.includes('/school/'))).toBe(true);
    await api.profileInterests({
      url: 'ada-lovelace',
      kind: 'schools',
      page: 2,
      per_page: 10,
      pagination_token: i1.data.pagination_token as string,
    });
    expect(api.credits.creditsUsed).toBe(16);
    expect(Object.keys(api.credits.byOperation()).sort()).toEqual(
      ['getAccount', 'postComments', 'postReactions', 'profileInterests', 'profileRecommendations'].sort(),
    );
  });

  it('given a private target, when read, then UnprocessableTargetError; given a body the contract refuses, then nothing is sent', async () => {
    const api = await client('svc_live_client_engagement_errors');
    await expect(api.profileInterests({ url: 'private-ivy-stone' })).rejects.toBeInstanceOf(UnprocessableTargetError);
    const before = h.sandbox.ledger.entries.length;
    await expect(api.postComments({ url: POST, per_page: 26 })).rejects.toBeInstanceOf(RequestValidationError);
    await expect(
      api.profileRecommendations({ url: 'ada-lovelace', direction: 'sideways' as never }),
    ).rejects.toBeInstanceOf(RequestValidationError);
    await expect(api.postReactions({} as never)).rejects.toBeInstanceOf(RequestValidationError);
    await expect(api.profileInterests({ url: 'ada-lovelace', kind: 'hobbies' as never })).rejects.toBeInstanceOf(
      RequestValidationError,
    );
    expect(h.sandbox.ledger.entries.length).toBe(before);
  });

  it('given the four operations as batch items, when submitted through the client, then each result parses with its page schema', async () => {
    const api = await client('svc_test_client_engagement_batch');
    const submitted = await api.submitBatch({
      items: [
        { operation: 'posts.comments', params: { url: POST }, ref: 'comments' },
        { operation: 'posts.reactions', params: { url: POST }, ref: 'reactions' },
        {
          operation: 'profiles.recommendations',
          params: { url: 'ada-lovelace', direction: 'given' },
          ref: 'recommendations',
        },
        { operation: 'profiles.interests', params: { url: 'hidden-ada' }, ref: 'interests' },
      ],
    });
    await h.sandbox.idle();
    const entries = new Map((await api.getBatchResults(submitted.data.job_id)).data.map((entry) => [entry.ref, entry]));
    expect(PostCommentsPage.parse(entries.get('comments')?.data).comments).toHaveLength(25);
    expect(PostReactionsPage.parse(entries.get('reactions')?.data).reactions).toHaveLength(25);
    expect(ProfileRecommendationsPage.parse(entries.get('recommendations')?.data).direction).toBe('given');
    expect(ProfileInterestsPage.parse(entries.get('interests')?.data)).toMatchObject({
      interests: [],
      pagination: { total_estimate: null },
    });
    const credits = Object.fromEntries([...entries].map(([ref, entry]) => [ref, entry.credits_used]));
    expect(credits).toEqual({ comments: 2, reactions: 2, recommendations: 2, interests: 0 });
  });
});

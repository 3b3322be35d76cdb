import { describe, expect, it } from 'vitest';
import {
  BatchItem,
  PostComment,
  PostCommentsBody,
  PostReaction,
  PostReactionsBody,
  ProfileInterest,
  ProfileInterestsBody,
  ProfileRecommendation,
  ProfileRecommendationsBody,
  ProfileRecommendationsPage,
} from '../../schemas/index.js';

describe('engagement request bodies are strict', () => {
  it('given url or urn with paging, when parsed, then accepted; given neither, an unknown field or per_page 26, then refused', () => {
    for (const Body of [PostCommentsBody, PostReactionsBody]) {
      expect(Body.safeParse({ urn: '7000000000000000001', page: 2, per_page: 25, pagination_token: 't' }).success).toBe(
        true,
      );
      expect(Body.safeParse({ url: 'https://x.example/posts/a_activity-1234567' }).success).toBe(true);
      expect(Body.safeParse({ page: 1 }).success).toBe(false);
      expect(Body.safeParse({ url: 'x', max_results: 5 }).success).toBe(false);
      expect(Body.safeParse({ url: 'x', per_page: 26 }).success).toBe(false);
    }
  });

  it('given direction and kind, when parsed, then only the contract values pass and url is required', () => {
    expect(ProfileRecommendationsBody.safeParse({ url: 'ada', direction: 'given' }).success).toBe(true);
    expect(ProfileRecommendationsBody.safeParse({ url: 'ada', direction: 'both' }).success).toBe(false);
    expect(ProfileRecommendationsBody.safeParse({ urn: 'ACoAAx' }).success).toBe(false);
    expect(ProfileInterestsBody.safeParse({ url: 'ada', kind: 'top_voices', per_page: 1 }).success).toBe(true);
    expect(ProfileInterestsBody.safeParse({ url: 'ada', kind: 'hobbies' }).success).toBe(false);
  });

  it('given the four operation names, when used in a batch item, then they are accepted', () => {
    for (const operation of ['posts.comments', 'posts.reactions', 'profiles.recommendations', 'profiles.interests']) {
      expect(BatchItem.safeParse({ operation, params: {} }).success).toBe(true);
    }
  });
});

describe('engagement records are lenient', () => {
  it('given numeric ids, unknown fields and optional fields left out, when parsed, then ids become text and extras are kept', () => {
    const comment = PostComment.parse({
      urn: 7123456789,
      posted_at: '2026-10-01T00:00:00Z',
      parent_urn: 7000000001,
      edited: true,
    });
    expect(comment).toMatchObject({ urn: '7123456789', parent_urn: '7000000001', edited: true });
    expect(
      PostReaction.parse({ reactor: { name: 'A', url: 'u' }, reaction_type: 'applause' }).reacted_at,
    ).toBeUndefined();
    expect(ProfileRecommendation.parse({ person: { name: 'B' }, text: 't' }).created_at).toBeUndefined();
    expect(ProfileInterest.parse({ url: 'https://x.example/groups/1', members_count: 3 })).toMatchObject({
      members_count: 3,
    });
  });

  it('given a page without its list or a record without its key, when parsed, then it is refused with a reason', () => {
    expect(
      ProfileRecommendationsPage.safeParse({ pagination: { has_more: false }, pagination_token: null }).success,
    ).toBe(false);
    expect(PostComment.safeParse({ posted_at: '2026-10-01T00:00:00Z' }).success).toBe(false);
    expect(ProfileInterest.safeParse({ name: 'no url' }).success).toBe(false);
  });
});

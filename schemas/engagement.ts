import { z } from 'zod';
import { Id, Int, Pagination, Timestamp } from './common.js';

// docs/service-assumptions.md, "Engagement, recommendations and interests": shapes the spec names without showing.

/** Reaction types of a post reaction. The record schema keeps any string, so a new type still loads. */
export const ReactionType = z.enum(['like', 'celebrate', 'support', 'love', 'insightful', 'funny']);
export type ReactionType = z.infer<typeof ReactionType>;

/** `direction` of POST /v1/profiles/recommendations. */
export const RecommendationDirection = z.enum(['received', 'given']);
export type RecommendationDirection = z.infer<typeof RecommendationDirection>;

/** `kind` of POST /v1/profiles/interests. */
export const InterestKind = z.enum(['companies', 'groups', 'schools', 'newsletters', 'top_voices']);
export type InterestKind = z.infer<typeof InterestKind>;

/** A person block of engagement records (comment author, reactor, recommender); `headline` is optional. */
export const EngagementPerson = z.looseObject({
  name: z.string().nullable().optional(),
  url: z.string().nullable().optional(),
  headline: z.string().nullable().optional(),
});
export type EngagementPerson = z.infer<typeof EngagementPerson>;

/** A comment on a post; `parent_urn` is null for a top-level comment. */
export const PostComment = z.looseObject({
  urn: Id,
  url: z.string().nullable().optional(),
  author: EngagementPerson.nullable().optional(),
  text: z.string().nullable().optional(),
  posted_at: Timestamp,
  reactions_count: Int.nullable().optional(),
  replies_count: Int.nullable().optional(),
  parent_urn: Id.nullable().optional(),
});
export type PostComment = z.infer<typeof PostComment>;

/** A reaction on a post: one per reactor; `reacted_at` is optional. */
export const PostReaction = z.looseObject({
  reactor: EngagementPerson,
  reaction_type: z.string(),
  reacted_at: Timestamp.nullable().optional(),
});
export type PostReaction = z.infer<typeof PostReaction>;

/** A recommendation a profile received or gave; `person` is the other party. */
export const ProfileRecommendation = z.looseObject({
  person: EngagementPerson,
  relationship: z.string().nullable().optional(),
  text: z.string().nullable().optional(),
  created_at: Timestamp.nullable().optional(),
});
export type ProfileRecommendation = z.infer<typeof ProfileRecommendation>;

/** Something a profile follows (a company, group, school, newsletter or top voice). */
export const ProfileInterest = z.looseObject({
  name: z.string().nullable().optional(),
  url: z.string(),
  followers_count: Int.nullable().optional(),
});
export type ProfileInterest = z.infer<typeof ProfileInterest>;

const paging = { pagination: Pagination, pagination_token: z.string().nullable() };

/** Data of POST /v1/posts/comments. */
export const PostCommentsPage = z.looseObject({
  url: z.string().nullable().optional(),
  urn: Id.nullable().optional(),
  comments: z.array(PostComment),
  ...paging,
});
export type PostCommentsPage = z.infer<typeof PostCommentsPage>;

/** Data of POST /v1/posts/reactions. */
export const PostReactionsPage = z.looseObject({
  url: z.string().nullable().optional(),
  urn: Id.nullable().optional(),
  reactions: z.array(PostReaction),
  ...paging,
});
export type PostReactionsPage = z.infer<typeof PostReactionsPage>;

/** Data of POST /v1/profiles/recommendations. */
export const ProfileRecommendationsPage = z.looseObject({
  url: z.string().nullable().optional(),
  direction: z.string().nullable().optional(),
  recommendations: z.array(ProfileRecommendation),
  ...paging,
});
export type ProfileRecommendationsPage = z.infer<typeof ProfileRecommendationsPage>;

/** Data of POST /v1/profiles/interests. */
export const ProfileInterestsPage = z.looseObject({
  url: z.string().nullable().optional(),
  kind: z.string().nullable().optional(),
  interests: z.array(ProfileInterest),
  ...paging,
});
export type ProfileInterestsPage = z.infer<typeof ProfileInterestsPage>;

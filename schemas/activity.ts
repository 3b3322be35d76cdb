import { z } from 'zod';
import { Id, Pagination, Timestamp } from './common.js';
import { Post } from './post.js';

/** Activity kinds; each is its own scrape. */
export const ActivityKind = z.enum(['posts', 'comments', 'reactions', 'reposts']);
export type ActivityKind = z.infer<typeof ActivityKind>;

/** `posted_within` windows of activity and post search. */
export const PostedWithin = z.enum(['24h', 'week', 'month', 'all']);

/** The post a comment, reaction or repost points at. */
export const TargetPost = z.looseObject({
  url: z.string().nullable().optional(),
  urn: Id.nullable().optional(),
  text_snippet: z.string().nullable().optional(),
  author: z
    .looseObject({ name: z.string().nullable().optional(), url: z.string().nullable().optional() })
    .nullable()
    .optional(),
});

/** A comment of profile activity. */
export const ActivityComment = z.looseObject({
  text: z.string().nullable().optional(),
  posted_at: Timestamp,
  target_post: TargetPost.nullable().optional(),
});
export type ActivityComment = z.infer<typeof ActivityComment>;

/** A reaction of profile activity. */
export const ActivityReaction = z.looseObject({
  reaction_type: z.string(),
  reacted_at: Timestamp,
  target_post: TargetPost.nullable().optional(),
});
export type ActivityReaction = z.infer<typeof ActivityReaction>;

/** A repost: field names beyond the original post's metadata are not listed, so everything is kept. */
export const ActivityRepost = z.looseObject({
  url: z.string().nullable().optional(),
  urn: Id.nullable().optional(),
  reposted_at: Timestamp.nullable().optional(),
  posted_at: Timestamp.nullable().optional(),
  original_post: Post.partial().nullable().optional(),
});
export type ActivityRepost = z.infer<typeof ActivityRepost>;

/** Data of POST /v1/profiles/activity: one array named after the kind. */
export const ActivityPage = z.looseObject({
  kind: ActivityKind,
  url: z.string().nullable().optional(),
  urn: Id.nullable().optional(),
  posts: z.array(Post).optional(),
  comments: z.array(ActivityComment).optional(),
  reactions: z.array(ActivityReaction).optional(),
  reposts: z.array(ActivityRepost).optional(),
  pagination: Pagination,
  pagination_token: z.string().nullable(),
  scraped_at: Timestamp.optional(),
});
export type ActivityPage = z.infer<typeof ActivityPage>;

/** Data of POST /v1/companies/posts. */
export const CompanyPostsPage = z.looseObject({
  posts: z.array(Post),
  pagination: Pagination,
  pagination_token: z.string().nullable(),
});
export type CompanyPostsPage = z.infer<typeof CompanyPostsPage>;

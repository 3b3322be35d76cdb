import { z } from 'zod';
import { Id, Int, Timestamp } from './common.js';

/** Author of a post (headline may be absent for company authors). */
export const PostAuthor = z.looseObject({
  name: z.string().nullable().optional(),
  url: z.string().nullable().optional(),
  headline: z.string().nullable().optional(),
});

/** Media attached to a post. */
export const PostMedia = z.looseObject({ type: z.string(), url: z.string() });

/** Post: data of POST /v1/posts/enrich, and entries of activity `posts` and company posts. */
export const Post = z.looseObject({
  url: z.string(),
  urn: Id,
  share_urn: Id.nullable().optional(),
  author: PostAuthor.nullable().optional(),
  text: z.string().nullable().optional(),
  posted_at: Timestamp,
  reactions_count: Int.optional(),
  comments_count: Int.optional(),
  reposts_count: Int.optional(),
  media: z.array(PostMedia).optional(),
  scraped_at: Timestamp.optional(),
});
export type Post = z.infer<typeof Post>;

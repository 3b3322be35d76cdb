import { z } from 'zod';
import { Int, Timestamp } from './common.js';

/** Operations a batch item may carry. */
export const BatchOperation = z.enum([
  'profiles.enrich',
  'companies.enrich',
  'posts.enrich',
  'companies.headcount',
  'search.people',
  'search.people.sales_nav',
  'search.companies',
  'search.jobs',
  'profiles.activity',
  'companies.posts',
  'posts.comments',
  'posts.reactions',
  'profiles.recommendations',
  'profiles.interests',
]);
export type BatchOperation = z.infer<typeof BatchOperation>;

/** One item of POST /v1/batch: `params` is exactly the single endpoint's body. */
export const BatchItem = z.strictObject({
  operation: BatchOperation,
  params: z.record(z.string(), z.unknown()),
  ref: z.string().optional(),
});
export type BatchItem = z.infer<typeof BatchItem>;

/** Body of POST /v1/batch. */
export const BatchSubmitBody = z.strictObject({
  items: z.array(BatchItem).min(1).max(1000),
  webhook_url: z.string().optional(),
});
export type BatchSubmitBody = z.infer<typeof BatchSubmitBody>;

/** A result entry of a batch job. */
export const BatchResultEntry = z.looseObject({
  ref: z.string(),
  index: Int,
  operation: z.string(),
  status: z.enum(['succeeded', 'failed']),
  credits_used: Int,
  data: z.unknown().optional(),
  error: z.looseObject({ type: z.string(), message: z.string() }).optional(),
});
export type BatchResultEntry = z.infer<typeof BatchResultEntry>;

/** Batch job record of POST /v1/batch and GET /v1/batch/{job_id}. */
export const BatchJob = z.looseObject({
  job_id: z.string(),
  status: z.string(),
  total: Int,
  resolved: Int.optional(),
  succeeded: Int.optional(),
  failed: Int.optional(),
  credits_used: Int.optional(),
  credits_reserved: Int.optional(),
  created_at: Timestamp.optional(),
  estimated_completion: Timestamp.nullable().optional(),
  completed_at: Timestamp.nullable().optional(),
  webhook_url: z.string().nullable().optional(),
  results: z.array(BatchResultEntry).optional(),
  failures: z.array(BatchResultEntry).optional(),
});
export type BatchJob = z.infer<typeof BatchJob>;

/** Data of GET /v1/batch/{job_id}/results (the cursor is in `meta.nextCursor`). */
export const BatchResultsPage = z.array(BatchResultEntry);
export type BatchResultsPage = z.infer<typeof BatchResultsPage>;

import { z } from 'zod';
import { Int, Timestamp } from './common.js';

/** Job posting of POST /v1/search/jobs. */
export const JobPosting = z.looseObject({
  url: z.string(),
  title: z.string().nullable().optional(),
  company: z
    .looseObject({ name: z.string().nullable().optional(), url: z.string().nullable().optional() })
    .nullable()
    .optional(),
  location: z.string().nullable().optional(),
  workplace_type: z.string().nullable().optional(),
  seniority: z.string().nullable().optional(),
  posted_at: Timestamp.nullable().optional(),
  applicants_count: Int.nullable().optional(),
  description_snippet: z.string().nullable().optional(),
});
export type JobPosting = z.infer<typeof JobPosting>;

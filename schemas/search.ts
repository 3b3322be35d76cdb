import { z } from 'zod';
import { Id, Pagination } from './common.js';
import { CompanyStub } from './company.js';
import { JobPosting } from './job.js';
import { Post } from './post.js';

/** People-search stub (docs/service-assumptions.md, "People search"). */
export const PeopleSearchStub = z.looseObject({
  url: z.string(),
  public_identifier: z.string().nullable().optional(),
  urn: Id.nullable().optional(),
  full_name: z.string().nullable().optional(),
  headline: z.string().nullable().optional(),
  location: z.string().nullable().optional(),
  current_title: z.string().nullable().optional(),
  current_company: z
    .looseObject({
      name: z.string().nullable().optional(),
      url: z.string().nullable().optional(),
      network_id: Id.nullable().optional(),
    })
    .nullable()
    .optional(),
});
export type PeopleSearchStub = z.infer<typeof PeopleSearchStub>;

/** Data of the people searches (all variants). */
export const PeopleSearchResult = z.looseObject({ results: z.array(PeopleSearchStub), pagination: Pagination });
export type PeopleSearchResult = z.infer<typeof PeopleSearchResult>;

/** Data of the company searches (all variants). */
export const CompanySearchResult = z.looseObject({ results: z.array(CompanyStub), pagination: Pagination });
export type CompanySearchResult = z.infer<typeof CompanySearchResult>;

/** Data of POST /v1/search/jobs. */
export const JobSearchResult = z.looseObject({ jobs: z.array(JobPosting) });
export type JobSearchResult = z.infer<typeof JobSearchResult>;

/** Data of POST /v1/search/posts. */
export const PostSearchResult = z.looseObject({ posts: z.array(Post), pagination: Pagination });
export type PostSearchResult = z.infer<typeof PostSearchResult>;

import { z } from 'zod';
import { ActivityKind, PostedWithin } from './activity.js';
import { CompanySize, CompanyType } from './company.js';
import { InterestKind, RecommendationDirection } from './engagement.js';
import { SignalCriteria, SignalSchedule, SignalTarget } from './signal.js';

// Request bodies are strict: the service answers 400 to an unknown body field.

const oneOf = (keys: readonly string[]) => (body: Record<string, unknown>) =>
  keys.filter((key) => body[key] !== undefined).length === 1;

/** Body of POST /v1/profiles/enrich. */
export const ProfileEnrichBody = z
  .strictObject({
    url: z.string().min(1).optional(),
    urn: z.string().min(1).optional(),
    fields: z.array(z.string()).optional(),
    with_followers_and_connections: z.boolean().optional(),
  })
  .refine((b) => b.url !== undefined || b.urn !== undefined, 'provide url or urn');
export type ProfileEnrichBody = z.infer<typeof ProfileEnrichBody>;

/** Body of POST /v1/posts/enrich. */
export const PostEnrichBody = z
  .strictObject({ url: z.string().min(1).optional(), urn: z.string().min(1).optional() })
  .refine((b) => b.url !== undefined || b.urn !== undefined, 'provide url or urn');
export type PostEnrichBody = z.infer<typeof PostEnrichBody>;

/** Body of POST /v1/companies/enrich: exactly one of url, domain, network_id. */
export const CompanyEnrichBody = z
  .strictObject({
    url: z.string().min(1).optional(),
    domain: z.string().min(1).optional(),
    network_id: z.string().min(1).optional(),
    fields: z.array(z.string()).optional(),
  })
  .refine(oneOf(['url', 'domain', 'network_id']), 'provide exactly one of url, domain, network_id');
export type CompanyEnrichBody = z.infer<typeof CompanyEnrichBody>;

/** Seniorities of headcount and people-search filters. */
export const Seniority = z.enum(['owner', 'partner', 'cxo', 'vp', 'director', 'manager', 'senior', 'entry']);

/** Body of POST /v1/companies/headcount. */
export const HeadcountBody = z.strictObject({
  company_url: z.string().min(1),
  filters: z.strictObject({
    titles: z.array(z.string()).optional(),
    seniorities: z.array(Seniority).optional(),
    locations: z.array(z.string()).optional(),
    keywords: z.string().optional(),
  }),
});

/** A headcount seed as a config writes it (`seeds.headcount` entries): a company, and its filters (none: all). */
export const HeadcountSeed = z.strictObject({
  company_url: z.string().min(1),
  filters: HeadcountBody.shape.filters.default({}),
});
export type HeadcountBody = z.infer<typeof HeadcountBody>;

/** Body of POST /v1/companies/posts. */
export const CompanyPostsBody = z
  .strictObject({
    url: z.string().min(1).optional(),
    domain: z.string().min(1).optional(),
    network_id: z.string().min(1).optional(),
    page: z.number().int().min(1).optional(),
    per_page: z.number().int().min(1).max(25).optional(),
    pagination_token: z.string().optional(),
  })
  .refine(oneOf(['url', 'domain', 'network_id']), 'provide exactly one of url, domain, network_id');
export type CompanyPostsBody = z.infer<typeof CompanyPostsBody>;

/** Body of POST /v1/profiles/activity. */
export const ActivityBody = z
  .strictObject({
    url: z.string().min(1).optional(),
    urn: z.string().min(1).optional(),
    kind: ActivityKind,
    posted_within: PostedWithin.optional(),
    page: z.number().int().min(1).optional(),
    per_page: z.number().int().min(1).max(25).optional(),
    pagination_token: z.string().optional(),
  })
  .refine((b) => b.url !== undefined || b.urn !== undefined, 'provide url or urn');
export type ActivityBody = z.infer<typeof ActivityBody>;

/** Paging fields of activity-like feeds: `page` default 1, `per_page` 1 to 25 (default 25), the previous answer's token. */
const feedPaging = {
  page: z.number().int().min(1).optional(),
  per_page: z.number().int().min(1).max(25).optional(),
  pagination_token: z.string().optional(),
};

const postEngagementBody = () =>
  z
    .strictObject({ url: z.string().min(1).optional(), urn: z.string().min(1).optional(), ...feedPaging })
    .refine((b) => b.url !== undefined || b.urn !== undefined, 'provide url or urn');

/** Body of POST /v1/posts/comments: the post's `url` and/or `urn`, plus paging. */
export const PostCommentsBody = postEngagementBody();
export type PostCommentsBody = z.infer<typeof PostCommentsBody>;

/** Body of POST /v1/posts/reactions: the post's `url` and/or `urn`, plus paging. */
export const PostReactionsBody = postEngagementBody();
export type PostReactionsBody = z.infer<typeof PostReactionsBody>;

/** Body of POST /v1/profiles/recommendations: `direction` default `received`. */
export const ProfileRecommendationsBody = z.strictObject({
  url: z.string().min(1),
  direction: RecommendationDirection.optional(),
  ...feedPaging,
});
export type ProfileRecommendationsBody = z.infer<typeof ProfileRecommendationsBody>;

/** Body of POST /v1/profiles/interests: `kind` default `companies`. */
export const ProfileInterestsBody = z.strictObject({
  url: z.string().min(1),
  kind: InterestKind.optional(),
  ...feedPaging,
});
export type ProfileInterestsBody = z.infer<typeof ProfileInterestsBody>;

/** People-search filters (docs/service-assumptions.md, "People search"): at least one is required. */
export const PeopleFilters = z
  .strictObject({
    keywords: z.string().optional(),
    titles: z.array(z.string()).optional(),
    current_company_urls: z.array(z.string()).optional(),
    past_company_urls: z.array(z.string()).optional(),
    location_ids: z.array(z.string()).optional(),
    industry_ids: z.array(z.string()).optional(),
    seniorities: z.array(Seniority).optional(),
    schools: z.array(z.string()).optional(),
  })
  .refine((f) => Object.values(f).some((v) => v !== undefined), 'at least one filter is required');

/** Body of the people searches (all variants). */
export const PeopleSearchBody = z
  .strictObject({
    filters: PeopleFilters.optional(),
    search_url: z.string().min(1).optional(),
    max_results: z.number().int().min(1).max(1000).optional(),
  })
  .refine(oneOf(['filters', 'search_url']), 'provide exactly one of filters or search_url');
export type PeopleSearchBody = z.infer<typeof PeopleSearchBody>;

const IdList = z.array(z.union([z.string(), z.looseObject({ id: z.union([z.string(), z.number()]) })]));

/** Company-search filters: at least one is required. */
export const CompanyFilters = z
  .strictObject({
    keywords: z.string().optional(),
    industry_ids: IdList.optional(),
    location_ids: IdList.optional(),
    company_sizes: z.array(CompanySize).optional(),
    company_types: z.array(CompanyType).optional(),
  })
  .refine((f) => Object.values(f).some((v) => v !== undefined), 'at least one filter is required');

/** Body of the company searches (all variants). */
export const CompanySearchBody = z
  .strictObject({
    filters: CompanyFilters.optional(),
    search_url: z.string().min(1).optional(),
    max_results: z.number().int().min(1).max(1000).optional(),
  })
  .refine(oneOf(['filters', 'search_url']), 'provide exactly one of filters or search_url');
export type CompanySearchBody = z.infer<typeof CompanySearchBody>;

/** Body of POST /v1/search/jobs. */
export const JobSearchBody = z
  .strictObject({
    company_url: z.string().min(1).optional(),
    keywords: z.array(z.string()).optional(),
    filters: z
      .strictObject({
        locations: z.array(z.string()).optional(),
        seniority: z.array(z.enum(['entry', 'senior', 'manager', 'director', 'executive'])).optional(),
        function: z.array(z.string()).optional(),
        workplace_type: z.array(z.enum(['remote', 'hybrid', 'onsite'])).optional(),
        posted_within_days: z.number().int().min(1).optional(),
      })
      .optional(),
    max_results: z.number().int().min(1).max(100).optional(),
  })
  .refine((b) => b.company_url !== undefined || (b.keywords?.length ?? 0) > 0, 'provide company_url or keywords');
export type JobSearchBody = z.infer<typeof JobSearchBody>;

/** Body of POST /v1/search/posts. */
export const PostSearchBody = z.strictObject({
  keywords: z.string().min(1),
  posted_within: PostedWithin.optional(),
  author_urls: z.array(z.string()).optional(),
  max_results: z.number().int().min(1).max(100).optional(),
});
export type PostSearchBody = z.infer<typeof PostSearchBody>;

const Metadata = z
  .record(z.string(), z.unknown())
  .refine((m) => Buffer.byteLength(JSON.stringify(m)) <= 8192, 'metadata is at most 8192 bytes serialized');
const ExternalId = z.string().min(1).max(256);

/** Body of POST /v1/signals. */
export const SignalCreateBody = z.strictObject({
  name: z.string().min(1),
  target: SignalTarget,
  schedule: SignalSchedule,
  criteria: SignalCriteria,
  notify: z.strictObject({ webhook_url: z.string() }).optional(),
  tags: z.array(z.string()).optional(),
  external_id: ExternalId.optional(),
  metadata: Metadata.optional(),
});
export type SignalCreateBody = z.infer<typeof SignalCreateBody>;

/** Body of PATCH /v1/signals/{id}: send only changed fields. */
export const SignalPatchBody = z.strictObject({
  name: z.string().min(1).optional(),
  tags: z.array(z.string()).optional(),
  external_id: ExternalId.nullable().optional(),
  metadata: Metadata.optional(),
  schedule: SignalSchedule.optional(),
  criteria: SignalCriteria.optional(),
  notify: z.strictObject({ webhook_url: z.string().nullable() }).optional(),
});
export type SignalPatchBody = z.infer<typeof SignalPatchBody>;

/** Body of POST /v1/signals/bulk. */
export const SignalBulkBody = z.strictObject({
  template: z.strictObject({
    name_prefix: z.string().min(1),
    tags: z.array(z.string()).optional(),
    schedule: SignalSchedule,
    criteria: SignalCriteria,
    notify: z.strictObject({ webhook_url: z.string() }).optional(),
  }),
  targets: z
    .array(z.looseObject({ type: z.literal('profile'), site_url: z.string() }))
    .min(1)
    .max(1000),
});
export type SignalBulkBody = z.infer<typeof SignalBulkBody>;

/** Body of POST /v1/signals/pause (by tag). */
export const SignalPauseByTagBody = z.strictObject({ tag: z.string().min(1) });

/** Body of PATCH /v1/account. */
export const AccountPatchBody = z.strictObject({
  default_webhook_url: z.string().nullable().optional(),
  fallback_webhook_url: z.string().nullable().optional(),
});
export type AccountPatchBody = z.infer<typeof AccountPatchBody>;

/** Query of GET /v1/signals. */
export interface SignalListQuery {
  cursor?: string;
  limit?: number;
  tag?: string;
  status?: 'active' | 'paused';
}
/** Query of GET /v1/triggers. */
export interface TriggerListQuery {
  cursor?: string;
  limit?: number;
  signal_id?: string;
  since?: string;
}
/** Query of GET /v1/usage/signals. */
export interface UsageQuery {
  group_by?: 'external_id';
  from?: string;
  to?: string;
}
/** Query of GET /v1/batch/{id}/results. */
export interface BatchResultsQuery {
  status?: 'succeeded' | 'failed';
  cursor?: string;
  limit?: number;
}

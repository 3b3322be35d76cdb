import type { z } from 'zod';
import {
  ActivityBody,
  CompanyEnrichBody,
  CompanyPostsBody,
  CompanySearchBody,
  HeadcountBody,
  JobSearchBody,
  PeopleSearchBody,
  PostEnrichBody,
  PostCommentsBody,
  PostReactionsBody,
  PostSearchBody,
  ProfileEnrichBody,
  ProfileInterestsBody,
  ProfileRecommendationsBody,
} from '../../schemas/index.js';
import type { BatchOperation } from '../../schemas/index.js';
import { buildActivityPage, buildCompanyPostsPage, profileAuthor } from './fixtures/activity.js';
import {
  canonicalCompany,
  canonicalPost,
  canonicalProfile,
  companyFromDomain,
  companyFromNetworkId,
  profileFromUrn,
} from './fixtures/canonical.js';
import type { PostRef, TargetRef } from './fixtures/canonical.js';
import { pickFields } from './fixtures/fields.js';
import { buildCompany } from './fixtures/company.js';
import { buildPostCommentsPage, buildPostReactionsPage } from './fixtures/engagement.js';
import type { BuiltPage } from './fixtures/engagement.js';
import { buildInterestsPage, buildRecommendationsPage } from './fixtures/profile-sections.js';
import { buildPost, urnOfToken } from './fixtures/post.js';
import { buildProfile, COUNT_FIELDS, profileName } from './fixtures/profile.js';
import {
  countHeadcount,
  searchCompanies,
  searchJobs,
  searchPeople,
  searchPosts,
  SEARCH_PAGE_SIZE,
} from './fixtures/search.js';
import type { SearchOutcome, SearchVariant } from './fixtures/search.js';
import type { RepostShape } from './options.js';

/** What an operation needs to build its answer. */
export interface OperationEnv {
  seed: number;
  nowMs: number;
  /** Shape of repost entries. Default: nested, with `reposted_at`, originals 1 to 72 hours old. */
  reposts?: Required<RepostShape>;
}

/** A successful scrape: its data, cost and `meta` extras. */
export interface OperationResult {
  data: Record<string, unknown>;
  credits: number;
  reason: string;
  /** Ledger target: canonical URL or resolved search URL. */
  target: string;
  resolvedSearchUrl?: string;
}

/** One scrape operation of the service, shared by its endpoint, batch items and Signal checks. */
export interface Operation<B = any> {
  /** Ledger and batch name, e.g. `profiles.enrich`. */
  name: string;
  /** Path of the single endpoint. */
  path: string;
  /** Strict request-body schema. */
  schema: z.ZodType<B>;
  /** Human-readable cost, for `x-credits` in the OpenAPI document. */
  creditsDoc: string;
  /** Rule 1 of "Batch items fail individually": billed in full at submission whatever the outcome. */
  billAtSubmission: boolean;
  /** Credits a 422 costs on the single endpoint (0 for single-entity enrichment). */
  unprocessableCredits: number;
  /** Latency multiplier (the follower/connection scrape is a second scrape). */
  latencyFactor(body: B): number;
  /** Worst-case cost, reserved (or billed) when submitted in a batch. */
  worstCase(body: B): number;
  /** The entity the call scrapes (its slug decides forced outcomes), or null for searches. Throws 400 on a bad URL. */
  target(body: B, env: OperationEnv): TargetRef | null;
  /** Builds the answer; the target has already passed the forced-outcome checks. */
  run(body: B, env: OperationEnv, target: TargetRef | null): OperationResult;
}

const pageCost = (pages: number) => 2 * pages;
const searchPages = (maxResults: number | undefined) => Math.ceil((maxResults ?? 25) / SEARCH_PAGE_SIZE);

function companyRef(body: {
  url?: string | undefined;
  domain?: string | undefined;
  network_id?: string | undefined;
}): TargetRef {
  if (body.url !== undefined) return canonicalCompany(body.url);
  if (body.domain !== undefined) return companyFromDomain(body.domain);
  return companyFromNetworkId(body.network_id as string);
}

const profileRef = (body: { url?: string | undefined; urn?: string | undefined }) =>
  body.url !== undefined ? canonicalProfile(body.url) : profileFromUrn(body.urn as string);

/** Single-entity enrichment: 1 credit, rule 1 in batches, a 422 not charged on the single endpoint. */
const ENTITY = { billAtSubmission: true, unprocessableCredits: 0, latencyFactor: () => 1, worstCase: () => 1 } as const;
/** Activity and company-post pages: 2 credits per non-empty page, reserved in batches, a 422 billed. */
const FEED = { billAtSubmission: false, unprocessableCredits: 2, latencyFactor: () => 1, worstCase: () => 2 } as const;

function feedResult(data: Record<string, unknown>, ref: TargetRef): OperationResult {
  const returned = (data.pagination as { returned: number }).returned;
  return { data, credits: returned > 0 ? 2 : 0, reason: 'success', target: ref.url };
}

/** An engagement or profile-section page: billed like a feed page; a hidden feed says so in `meta.reason`. */
function builtResult(built: BuiltPage, ref: TargetRef): OperationResult {
  return { ...feedResult(built.data, ref), reason: built.page.hidden ? 'feed_hidden' : 'success' };
}

const postRef = (body: { url?: string | undefined; urn?: string | undefined }, env: OperationEnv) =>
  canonicalPost(body, (token) => urnOfToken(env.seed, token, env.nowMs));

/** A search paid per scraped page of 25; `billAtSubmission` for Sales Navigator (rule 1). */
function searchOperation<B extends { max_results?: number | undefined }>(
  path: string,
  name: string,
  schema: z.ZodType<B>,
  billAtSubmission: boolean,
  search: (seed: number, body: B, nowMs: number) => SearchOutcome,
  label: (body: B, outcome: SearchOutcome) => string,
): Operation<B> {
  return {
    name,
    path,
    schema,
    creditsDoc: '2 credits per page scraped (up to 25 results per page); empty pages free',
    billAtSubmission,
    unprocessableCredits: 0,
    latencyFactor: (body) => searchPages(body.max_results),
    worstCase: (body) => pageCost(searchPages(body.max_results)),
    target: () => null,
    run: (body, env) => {
      const outcome = search(env.seed, body, env.nowMs);
      const result: OperationResult = {
        data: outcome.data,
        credits: pageCost(outcome.pages),
        reason: 'success',
        target: label(body, outcome),
      };
      if (outcome.resolvedSearchUrl !== undefined) result.resolvedSearchUrl = outcome.resolvedSearchUrl;
      return result;
    },
  };
}

const byResolvedUrl = (_body: unknown, outcome: SearchOutcome) => outcome.resolvedSearchUrl as string;

function peopleSearch(path: string, name: string, variant: SearchVariant) {
  return searchOperation(
    path,
    name,
    PeopleSearchBody,
    variant === 'sales-nav',
    (seed, body, nowMs) => searchPeople(seed, body, variant, nowMs),
    byResolvedUrl,
  );
}

function companySearch(path: string, name: string, variant: SearchVariant) {
  return searchOperation(
    path,
    name,
    CompanySearchBody,
    false,
    (seed, body, nowMs) => searchCompanies(seed, body, variant, nowMs),
    byResolvedUrl,
  );
}

function wantsCounts(body: z.infer<typeof ProfileEnrichBody>): boolean {
  return (
    body.with_followers_and_connections === true ||
    (body.fields ?? []).some((f) => (COUNT_FIELDS as readonly string[]).includes(f))
  );
}

const profilesEnrich: Operation<z.infer<typeof ProfileEnrichBody>> = {
  ...ENTITY,
  name: 'profiles.enrich',
  path: '/v1/profiles/enrich',
  schema: ProfileEnrichBody,
  creditsDoc: '1 credit per successful profile',
  // The spec's errors table bills 422 everywhere, but the enrichment pages say a private or deleted
  // target is not charged; the single endpoint follows the enrichment pages (batch items follow rule 1).
  unprocessableCredits: 0,
  latencyFactor: (body) => (wantsCounts(body) ? 1.5 : 1),
  target: (body) => profileRef(body),
  run: (body, env, target) => {
    const ref = target as TargetRef;
    const data = buildProfile(env.seed, ref, env.nowMs, { fields: body.fields, withCounts: wantsCounts(body) });
    return { data, credits: 1, reason: 'profile_found', target: ref.url };
  },
};

const companiesEnrich: Operation<z.infer<typeof CompanyEnrichBody>> = {
  ...ENTITY,
  name: 'companies.enrich',
  path: '/v1/companies/enrich',
  schema: CompanyEnrichBody,
  creditsDoc: '1 credit per successful company',
  target: (body) => companyRef(body),
  run: (body, env, target) => {
    const ref = target as TargetRef;
    const data = pickFields(buildCompany(env.seed, ref, env.nowMs), body.fields);
    return { data, credits: 1, reason: 'success', target: ref.url };
  },
};

const postsEnrich: Operation<z.infer<typeof PostEnrichBody>> = {
  ...ENTITY,
  name: 'posts.enrich',
  path: '/v1/posts/enrich',
  schema: PostEnrichBody,
  creditsDoc: '1 credit per successful post',
  target: postRef,
  run: (_body, env, target) => {
    const ref = target as PostRef;
    const author = ref.author
      ? profileAuthor(env.seed, ref.author)
      : { name: profileName(env.seed, `urn-${ref.urn}`), url: ref.url };
    return { data: buildPost(env.seed, ref, env.nowMs, author), credits: 1, reason: 'post_found', target: ref.url };
  },
};

const companiesHeadcount: Operation<z.infer<typeof HeadcountBody>> = {
  ...ENTITY,
  name: 'companies.headcount',
  path: '/v1/companies/headcount',
  schema: HeadcountBody,
  creditsDoc: '1 credit per successful query',
  billAtSubmission: false,
  unprocessableCredits: 1,
  target: (body) => canonicalCompany(body.company_url),
  run: (body, env, target) => {
    const ref = target as TargetRef;
    return {
      data: countHeadcount(env.seed, ref, body.filters, env.nowMs),
      credits: 1,
      reason: 'success',
      target: ref.url,
    };
  },
};

const searchJobsOp: Operation<z.infer<typeof JobSearchBody>> = {
  name: 'search.jobs',
  path: '/v1/search/jobs',
  schema: JobSearchBody,
  creditsDoc: '1 credit per job returned; zero-result queries free',
  billAtSubmission: false,
  unprocessableCredits: 0,
  latencyFactor: () => 1,
  worstCase: (body) => body.max_results ?? 25,
  target: (body) => (body.company_url !== undefined ? canonicalCompany(body.company_url) : null),
  run: (body, env, target) => {
    const outcome = searchJobs(env.seed, body, env.nowMs);
    const key = target?.url ?? `keywords:${(body.keywords ?? []).join(' ')}`;
    return { data: outcome.data, credits: outcome.returned, reason: `${outcome.returned}_jobs_returned`, target: key };
  },
};

const searchPostsOp = searchOperation(
  '/v1/search/posts',
  'search.posts',
  PostSearchBody,
  false,
  searchPosts,
  (body) => `posts:${body.keywords}`,
);

const profilesActivity: Operation<z.infer<typeof ActivityBody>> = {
  ...FEED,
  name: 'profiles.activity',
  path: '/v1/profiles/activity',
  schema: ActivityBody,
  creditsDoc: '2 credits per page (up to 25 items); empty pages free; each kind is its own scrape',
  target: (body) => profileRef(body),
  run: (body, env, target) =>
    feedResult(
      buildActivityPage(env.seed, target as TargetRef, body.kind, body, env.nowMs, env.reposts),
      target as TargetRef,
    ),
};

const companiesPosts: Operation<z.infer<typeof CompanyPostsBody>> = {
  ...FEED,
  name: 'companies.posts',
  path: '/v1/companies/posts',
  schema: CompanyPostsBody,
  creditsDoc: '2 credits per page (up to 25 posts); empty pages free',
  target: (body) => companyRef(body),
  run: (body, env, target) =>
    feedResult(buildCompanyPostsPage(env.seed, target as TargetRef, body, env.nowMs), target as TargetRef),
};

const PAGE_COST_DOC = '2 credits per page (up to 25 items); empty pages free; a 422 is billed like activity';

const postsComments: Operation<z.infer<typeof PostCommentsBody>> = {
  ...FEED,
  name: 'posts.comments',
  path: '/v1/posts/comments',
  schema: PostCommentsBody,
  creditsDoc: PAGE_COST_DOC,
  target: postRef,
  run: (body, env, target) =>
    builtResult(buildPostCommentsPage(env.seed, target as PostRef, body, env.nowMs), target as TargetRef),
};

const postsReactions: Operation<z.infer<typeof PostReactionsBody>> = {
  ...FEED,
  name: 'posts.reactions',
  path: '/v1/posts/reactions',
  schema: PostReactionsBody,
  creditsDoc: PAGE_COST_DOC,
  target: postRef,
  run: (body, env, target) =>
    builtResult(buildPostReactionsPage(env.seed, target as PostRef, body, env.nowMs), target as TargetRef),
};

const profilesRecommendations: Operation<z.infer<typeof ProfileRecommendationsBody>> = {
  ...FEED,
  name: 'profiles.recommendations',
  path: '/v1/profiles/recommendations',
  schema: ProfileRecommendationsBody,
  creditsDoc: PAGE_COST_DOC,
  target: (body) => canonicalProfile(body.url),
  run: (body, env, target) =>
    builtResult(
      buildRecommendationsPage(env.seed, target as TargetRef, body.direction ?? 'received', body, env.nowMs),
      target as TargetRef,
    ),
};

const profilesInterests: Operation<z.infer<typeof ProfileInterestsBody>> = {
  ...FEED,
  name: 'profiles.interests',
  path: '/v1/profiles/interests',
  schema: ProfileInterestsBody,
  creditsDoc: PAGE_COST_DOC,
  target: (body) => canonicalProfile(body.url),
  run: (body, env, target) =>
    builtResult(
      buildInterestsPage(env.seed, target as TargetRef, body.kind ?? 'companies', body, env.nowMs),
      target as TargetRef,
    ),
};

const peopleClassic = peopleSearch('/v1/search/people', 'search.people', 'classic');
const peopleSalesNav = peopleSearch('/v1/search/people/sales-nav', 'search.people.sales_nav', 'sales-nav');
const companiesClassic = companySearch('/v1/search/companies', 'search.companies', 'classic');

/** Every scrape endpoint of the service. */
export const OPERATIONS: readonly Operation[] = [
  profilesEnrich,
  companiesEnrich,
  postsEnrich,
  companiesHeadcount,
  peopleClassic,
  peopleSearch('/v1/search/people/standard', 'search.people', 'standard'),
  peopleSalesNav,
  companiesClassic,
  companySearch('/v1/search/companies/standard', 'search.companies', 'standard'),
  companySearch('/v1/search/companies/sales-nav', 'search.companies.sales_nav', 'sales-nav'),
  searchJobsOp,
  searchPostsOp,
  profilesActivity,
  companiesPosts,
  postsComments,
  postsReactions,
  profilesRecommendations,
  profilesInterests,
];

/** Operations a batch item may name (docs/service-assumptions.md#batch-items-and-results). */
export const BATCH_OPERATIONS: Record<BatchOperation, Operation> = {
  'profiles.enrich': profilesEnrich,
  'companies.enrich': companiesEnrich,
  'posts.enrich': postsEnrich,
  'companies.headcount': companiesHeadcount,
  'search.people': peopleClassic,
  'search.people.sales_nav': peopleSalesNav,
  'search.companies': companiesClassic,
  'search.jobs': searchJobsOp,
  'profiles.activity': profilesActivity,
  'companies.posts': companiesPosts,
  'posts.comments': postsComments,
  'posts.reactions': postsReactions,
  'profiles.recommendations': profilesRecommendations,
  'profiles.interests': profilesInterests,
};

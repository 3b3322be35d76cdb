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
  PostSearchBody,
  ProfileEnrichBody,
} from '../../schemas/index.js';
import type { BatchOperation } from '../../schemas/index.js';
import { buildActivityPage, buildCompanyPostsPage, profileAuthor } from './fixtures/activity.js';
import { canonicalCompany, canonicalPost, canonicalProfile, companyFromDomain, companyFromNetworkId, profileFromUrn } from './fixtures/canonical.js';
import type { TargetRef } from './fixtures/canonical.js';
import { buildCompany } from './fixtures/company.js';
import { buildPost, urnOfToken } from './fixtures/post.js';
import { buildProfile, COUNT_FIELDS, profileName } from './fixtures/profile.js';
import { countHeadcount, searchCompanies, searchJobs, searchPeople, searchPosts, SEARCH_PAGE_SIZE } from './fixtures/search.js';
import type { SearchOutcome, SearchVariant } from './fixtures/search.js';

/** What an operation needs to build its answer. */
export interface OperationEnv {
  seed: number;
  nowMs: number;
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

function companyRef(body: { url?: string | undefined; domain?: string | undefined; network_id?: string | undefined }): TargetRef {
  if (body.url !== undefined) return canonicalCompany(body.url);
  if (body.domain !== undefined) return companyFromDomain(body.domain);
  return companyFromNetworkId(body.network_id as string);
}

const profileRef = (body: { url?: string | undefined; urn?: string | undefined }) =>
  body.url !== undefined ? canonicalProfile(body.url) : profileFromUrn(body.urn as string);

const flat = () => 1;

function searchResult(outcome: SearchOutcome, target: string): OperationResult {
  const result: OperationResult = { data: outcome.data, credits: pageCost(outcome.pages), reason: 'success', target };
  if (outcome.resolvedSearchUrl !== undefined) result.resolvedSearchUrl = outcome.resolvedSearchUrl;
  return result;
}

function peopleSearch(path: string, name: string, variant: SearchVariant): Operation<z.infer<typeof PeopleSearchBody>> {
  return {
    name,
    path,
    schema: PeopleSearchBody,
    creditsDoc: '2 credits per page scraped (up to 25 results per page); empty pages free',
    billAtSubmission: variant === 'sales-nav',
    unprocessableCredits: 0,
    latencyFactor: (body) => searchPages(body.max_results),
    worstCase: (body) => pageCost(searchPages(body.max_results)),
    target: () => null,
    run: (body, env) => {
      const outcome = searchPeople(env.seed, body, variant, env.nowMs);
      return searchResult(outcome, outcome.resolvedSearchUrl as string);
    },
  };
}

function companySearch(path: string, name: string, variant: SearchVariant): Operation<z.infer<typeof CompanySearchBody>> {
  return {
    name,
    path,
    schema: CompanySearchBody,
    creditsDoc: '2 credits per page scraped (up to 25 results per page); empty pages free',
    billAtSubmission: false,
    unprocessableCredits: 0,
    latencyFactor: (body) => searchPages(body.max_results),
    worstCase: (body) => pageCost(searchPages(body.max_results)),
    target: () => null,
    run: (body, env) => {
      const outcome = searchCompanies(env.seed, body, variant, env.nowMs);
      return searchResult(outcome, outcome.resolvedSearchUrl as string);
    },
  };
}

const profilesEnrich: Operation<z.infer<typeof ProfileEnrichBody>> = {
  name: 'profiles.enrich',
  path: '/v1/profiles/enrich',
  schema: ProfileEnrichBody,
  creditsDoc: '1 credit per successful profile',
  billAtSubmission: true,
  // The spec's errors table bills 422 everywhere, but the enrichment pages say a private or deleted
  // target is not charged; the single endpoint follows the enrichment pages (batch items follow rule 1).
  unprocessableCredits: 0,
  latencyFactor: (body) => (wantsCounts(body) ? 1.5 : 1),
  worstCase: () => 1,
  target: (body) => profileRef(body),
  run: (body, env, target) => {
    const ref = target as TargetRef;
    const data = buildProfile(env.seed, ref, env.nowMs, { fields: body.fields, withCounts: wantsCounts(body) });
    return { data, credits: 1, reason: 'profile_found', target: ref.url };
  },
};

function wantsCounts(body: z.infer<typeof ProfileEnrichBody>): boolean {
  return body.with_followers_and_connections === true || (body.fields ?? []).some((f) => (COUNT_FIELDS as readonly string[]).includes(f));
}

const companiesEnrich: Operation<z.infer<typeof CompanyEnrichBody>> = {
  name: 'companies.enrich',
  path: '/v1/companies/enrich',
  schema: CompanyEnrichBody,
  creditsDoc: '1 credit per successful company',
  billAtSubmission: true,
  unprocessableCredits: 0,
  latencyFactor: flat,
  worstCase: () => 1,
  target: (body) => companyRef(body),
  run: (body, env, target) => {
    const ref = target as TargetRef;
    let data = buildCompany(env.seed, ref, env.nowMs);
    if (body.fields !== undefined) {
      const keep = new Set(['url', 'network_id', 'scraped_at', ...body.fields]);
      data = Object.fromEntries(Object.entries(data).filter(([key]) => keep.has(key)));
    }
    return { data, credits: 1, reason: 'success', target: ref.url };
  },
};

const postsEnrich: Operation<z.infer<typeof PostEnrichBody>> = {
  name: 'posts.enrich',
  path: '/v1/posts/enrich',
  schema: PostEnrichBody,
  creditsDoc: '1 credit per successful post',
  billAtSubmission: true,
  unprocessableCredits: 0,
  latencyFactor: flat,
  worstCase: () => 1,
  target: (body, env) => canonicalPost(body, (token) => urnOfToken(env.seed, token, env.nowMs)),
  run: (_body, env, target) => {
    const ref = canonicalPostRef(target);
    const author = ref.author ? profileAuthor(env.seed, ref.author) : { name: profileName(env.seed, `urn-${ref.urn}`), url: ref.url };
    return { data: buildPost(env.seed, ref, env.nowMs, author), credits: 1, reason: 'post_found', target: ref.url };
  },
};

function canonicalPostRef(target: TargetRef | null) {
  return target as ReturnType<typeof canonicalPost>;
}

const companiesHeadcount: Operation<z.infer<typeof HeadcountBody>> = {
  name: 'companies.headcount',
  path: '/v1/companies/headcount',
  schema: HeadcountBody,
  creditsDoc: '1 credit per successful query',
  billAtSubmission: false,
  unprocessableCredits: 1,
  latencyFactor: flat,
  worstCase: () => 1,
  target: (body) => canonicalCompany(body.company_url),
  run: (body, env, target) => {
    const ref = target as TargetRef;
    return { data: countHeadcount(env.seed, ref, body.filters, env.nowMs), credits: 1, reason: 'success', target: ref.url };
  },
};

const searchJobsOp: Operation<z.infer<typeof JobSearchBody>> = {
  name: 'search.jobs',
  path: '/v1/search/jobs',
  schema: JobSearchBody,
  creditsDoc: '1 credit per job returned; zero-result queries free',
  billAtSubmission: false,
  unprocessableCredits: 0,
  latencyFactor: flat,
  worstCase: (body) => body.max_results ?? 25,
  target: (body) => (body.company_url !== undefined ? canonicalCompany(body.company_url) : null),
  run: (body, env, target) => {
    const outcome = searchJobs(env.seed, body, env.nowMs);
    const key = target?.url ?? `keywords:${(body.keywords ?? []).join(' ')}`;
    return { data: outcome.data, credits: outcome.returned, reason: `${outcome.returned}_jobs_returned`, target: key };
  },
};

const searchPostsOp: Operation<z.infer<typeof PostSearchBody>> = {
  name: 'search.posts',
  path: '/v1/search/posts',
  schema: PostSearchBody,
  creditsDoc: '2 credits per page of up to 25 posts; empty pages free',
  billAtSubmission: false,
  unprocessableCredits: 0,
  latencyFactor: (body) => searchPages(body.max_results),
  worstCase: (body) => pageCost(searchPages(body.max_results)),
  target: () => null,
  run: (body, env) => searchResult(searchPosts(env.seed, body, env.nowMs), `posts:${body.keywords}`),
};

const profilesActivity: Operation<z.infer<typeof ActivityBody>> = {
  name: 'profiles.activity',
  path: '/v1/profiles/activity',
  schema: ActivityBody,
  creditsDoc: '2 credits per page (up to 25 items); empty pages free; each kind is its own scrape',
  billAtSubmission: false,
  unprocessableCredits: 2,
  latencyFactor: flat,
  worstCase: () => 2,
  target: (body) => profileRef(body),
  run: (body, env, target) => {
    const ref = target as TargetRef;
    const data = buildActivityPage(env.seed, ref, body.kind, body, env.nowMs);
    const returned = (data.pagination as { returned: number }).returned;
    return { data, credits: returned > 0 ? 2 : 0, reason: 'success', target: ref.url };
  },
};

const companiesPosts: Operation<z.infer<typeof CompanyPostsBody>> = {
  name: 'companies.posts',
  path: '/v1/companies/posts',
  schema: CompanyPostsBody,
  creditsDoc: '2 credits per page (up to 25 posts); empty pages free',
  billAtSubmission: false,
  unprocessableCredits: 2,
  latencyFactor: flat,
  worstCase: () => 2,
  target: (body) => companyRef(body),
  run: (body, env, target) => {
    const ref = target as TargetRef;
    const data = buildCompanyPostsPage(env.seed, ref, body, env.nowMs);
    const returned = (data.pagination as { returned: number }).returned;
    return { data, credits: returned > 0 ? 2 : 0, reason: 'success', target: ref.url };
  },
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
];

/** Operations a batch item may name (CONTRACT.md 1). */
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
};

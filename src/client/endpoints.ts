import { z } from 'zod';
import {
  Account,
  ActivityBody,
  ActivityPage,
  Company,
  CompanyEnrichBody,
  CompanyPostsBody,
  CompanyPostsPage,
  CompanySearchBody,
  CompanySearchResult,
  HeadcountBody,
  HeadcountResult,
  JobSearchBody,
  JobSearchResult,
  PeopleSearchBody,
  PeopleSearchResult,
  Post,
  PostCommentsBody,
  PostCommentsPage,
  PostEnrichBody,
  PostReactionsBody,
  PostReactionsPage,
  PostSearchBody,
  PostSearchResult,
  Profile,
  ProfileEnrichBody,
  ProfileInterestsBody,
  ProfileInterestsPage,
  ProfileRecommendationsBody,
  ProfileRecommendationsPage,
  Signal,
  SignalUsageRow,
  Trigger,
} from '../../schemas/index.js';

/** What the client knows of one endpoint: its operation name (in credit reports), body check, data schema and billing. */
export interface KnownEndpoint {
  operation: string;
  method: 'GET' | 'POST';
  path: string;
  /** Checked before sending, so a body the service would refuse is never sent. */
  bodySchema?: z.ZodType;
  /** The answer's `data`, validated leniently. */
  schema: z.ZodType;
  /** Billed without an Idempotency-Key: retried only after an answer that says it was not processed. */
  billed: boolean;
  /** Rewrites the body before it is checked and sent. */
  prepare?: (body: Record<string, unknown>) => Record<string, unknown>;
}

/** Top-level fields a Profile answer needs (the schema requires them), kept when `fields` restricts the answer. */
const PROFILE_IDENTITY_FIELDS = ['url', 'public_identifier', 'urn', 'scraped_at'] as const;
/** Top-level fields a Company answer needs. */
const COMPANY_IDENTITY_FIELDS = ['url', 'network_id', 'scraped_at'] as const;

/** `body` with `identity` added to its `fields` when it restricts the answer (the service charges the same). */
function withIdentityFields(identity: readonly string[]) {
  return <Body extends { fields?: unknown }>(body: Body): Body => {
    if (!Array.isArray(body.fields)) return body;
    return { ...body, fields: [...new Set([...(body.fields as string[]), ...identity])] };
  };
}

const post = (
  operation: string,
  path: string,
  bodySchema: z.ZodType,
  schema: z.ZodType,
  prepare?: KnownEndpoint['prepare'],
): KnownEndpoint => ({
  operation,
  method: 'POST',
  path,
  bodySchema,
  schema,
  billed: true,
  ...(prepare ? { prepare } : {}),
});
const get = (operation: string, path: string, schema: z.ZodType): KnownEndpoint => ({
  operation,
  method: 'GET',
  path,
  schema,
  billed: false,
});

const searchVariants = (operation: string, path: string, bodySchema: z.ZodType, schema: z.ZodType): KnownEndpoint[] =>
  (['default', 'sales-nav', 'standard'] as const).map((variant) =>
    post(
      variant === 'default' ? operation : `${operation}:${variant}`,
      variant === 'default' ? path : `${path}/${variant}`,
      bodySchema,
      schema,
    ),
  );

const ENDPOINTS: readonly KnownEndpoint[] = [
  post('enrichProfile', '/v1/profiles/enrich', ProfileEnrichBody, Profile, withIdentityFields(PROFILE_IDENTITY_FIELDS)),
  post(
    'enrichCompany',
    '/v1/companies/enrich',
    CompanyEnrichBody,
    Company,
    withIdentityFields(COMPANY_IDENTITY_FIELDS),
  ),
  post('enrichPost', '/v1/posts/enrich', PostEnrichBody, Post),
  post('companyHeadcount', '/v1/companies/headcount', HeadcountBody, HeadcountResult),
  ...searchVariants('searchPeople', '/v1/search/people', PeopleSearchBody, PeopleSearchResult),
  ...searchVariants('searchCompanies', '/v1/search/companies', CompanySearchBody, CompanySearchResult),
  post('searchJobs', '/v1/search/jobs', JobSearchBody, JobSearchResult),
  post('searchPosts', '/v1/search/posts', PostSearchBody, PostSearchResult),
  post('profileActivity', '/v1/profiles/activity', ActivityBody, ActivityPage),
  post('companyPosts', '/v1/companies/posts', CompanyPostsBody, CompanyPostsPage),
  post('postComments', '/v1/posts/comments', PostCommentsBody, PostCommentsPage),
  post('postReactions', '/v1/posts/reactions', PostReactionsBody, PostReactionsPage),
  post(
    'profileRecommendations',
    '/v1/profiles/recommendations',
    ProfileRecommendationsBody,
    ProfileRecommendationsPage,
  ),
  post('profileInterests', '/v1/profiles/interests', ProfileInterestsBody, ProfileInterestsPage),
  get('listTriggers', '/v1/triggers', z.array(Trigger)),
  get('listSignals', '/v1/signals', z.array(Signal)),
  get('getSignalUsage', '/v1/usage/signals', z.array(SignalUsageRow)),
  get('getAccount', '/v1/account', Account),
];

const BY_ROUTE = new Map(ENDPOINTS.map((endpoint) => [`${endpoint.method} ${endpoint.path}`, endpoint]));

/** The endpoint the client knows at `method` and `path`, if any. */
export function knownEndpoint(method: string, path: string): KnownEndpoint | undefined {
  return BY_ROUTE.get(`${method} ${path}`);
}

/** The known endpoint at `method` and `path`; throws for one the client does not know (a programming error). */
export function endpoint(method: 'GET' | 'POST', path: string): KnownEndpoint {
  const found = knownEndpoint(method, path);
  if (!found) throw new Error(`no known endpoint ${method} ${path}`);
  return found;
}

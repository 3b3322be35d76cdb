import type { Meta } from '../../schemas/common.js';
import type { BatchJob, BatchResultEntry } from '../../schemas/batch.js';
import { canonicalErrorType } from '../client/errors.js';
import { StreamDefinitionError } from './engine-errors.js';

/** A typed response as the client returns it. */
export interface ServiceResponse<T = unknown> {
  data: T;
  meta: Meta;
}

type Body = Record<string, unknown>;

/**
 * The part of `ApiClient` the engine uses, declared structurally so the engine depends on
 * behaviour, not on the client module (and tests can drive it with the real client over HTTP).
 */
export interface ServiceClient {
  enrichProfile(body: Body): Promise<ServiceResponse>;
  enrichCompany(body: Body): Promise<ServiceResponse>;
  enrichPost(body: Body): Promise<ServiceResponse>;
  companyHeadcount(body: Body): Promise<ServiceResponse>;
  searchJobs(body: Body): Promise<ServiceResponse>;
  profileActivity(body: Body): Promise<ServiceResponse>;
  companyPosts(body: Body): Promise<ServiceResponse>;
  searchPeople(body: Body, variant?: 'default' | 'sales-nav' | 'standard'): Promise<ServiceResponse>;
  searchCompanies(body: Body, variant?: 'default' | 'sales-nav' | 'standard'): Promise<ServiceResponse>;
  listTriggers(query?: Body): Promise<ServiceResponse>;
  listSignals(query?: Body): Promise<ServiceResponse>;
  getSignalUsage(query?: Body): Promise<ServiceResponse>;
  getAccount(): Promise<ServiceResponse>;
  submitBatch(body: { items: Body[]; webhook_url?: string }, options: { idempotencyKey?: string }): Promise<ServiceResponse<BatchJob>>;
  getBatchResults(jobId: string, query?: { cursor?: string; limit?: number; status?: 'succeeded' | 'failed' }): Promise<ServiceResponse<BatchResultEntry[]>>;
  /** The account as last read (at connect, and again after a 429). Default: unknown. */
  readonly account?: { rate_limit: { concurrent_batch_jobs: number } } | undefined;
}

type Call = (client: ServiceClient, args: Body) => Promise<ServiceResponse>;

/** The client calls a request-stream manifest may name in `call`. */
export const serviceCalls = {
  searchJobs: (c, a) => c.searchJobs(a),
  profileActivity: (c, a) => c.profileActivity(a),
  companyPosts: (c, a) => c.companyPosts(a),
  searchPeople: (c, a) => c.searchPeople(a.body as Body, variantOf(a.variant)),
  searchCompanies: (c, a) => c.searchCompanies(a.body as Body, variantOf(a.variant)),
  listTriggers: (c, a) => c.listTriggers(a),
  listSignals: (c, a) => c.listSignals(a),
  getSignalUsage: (c, a) => c.getSignalUsage(a),
  getAccount: (c) => c.getAccount(),
} satisfies Record<string, Call>;

/**
 * The single endpoint of each batch operation an item can be retried through. Single enrichment
 * is pay-on-success, so a retry that fails again costs nothing (a batch item bills either way).
 */
export const singleCalls = {
  'profiles.enrich': (c, a) => c.enrichProfile(a),
  'companies.enrich': (c, a) => c.enrichCompany(a),
  'posts.enrich': (c, a) => c.enrichPost(a),
  'companies.headcount': (c, a) => c.companyHeadcount(a),
} satisfies Record<string, Call>;

/** A batch item: the operation and the exact body its single endpoint takes (CONTRACT.md "Batch items and results"). */
export interface BatchItemOf {
  operation: string;
  params: Body;
}

type ItemOf = (args: Body) => BatchItemOf | undefined;

const searchItem = (operations: Partial<Record<'default' | 'sales-nav' | 'standard', string>>): ItemOf => (args) => {
  const operation = operations[variantOf(args.variant) ?? 'default'];
  return operation ? { operation, params: args.body as Body } : undefined;
};

/**
 * The batch item each request-stream call can go as, so its pages can be asked in batch jobs
 * (intent recorded, Idempotency-Key) rather than single calls; undefined for a call (or a search
 * variant) that has no batch operation.
 */
export const batchItems = {
  searchJobs: (a) => ({ operation: 'search.jobs', params: a }),
  profileActivity: (a) => ({ operation: 'profiles.activity', params: a }),
  companyPosts: (a) => ({ operation: 'companies.posts', params: a }),
  searchPeople: searchItem({ default: 'search.people', 'sales-nav': 'search.people.sales_nav' }),
  searchCompanies: searchItem({ default: 'search.companies' }),
} satisfies Partial<Record<keyof typeof serviceCalls, ItemOf>>;

/** The batch item of a call with these args, if it has one. */
export function batchItemOf(call: string, args: Body): BatchItemOf | undefined {
  return (batchItems as Partial<Record<string, ItemOf>>)[call]?.(args);
}

/** A call name known to the engine. */
export type CallName = keyof typeof serviceCalls;

/** Looks a call up by name; throws naming the known ones. */
export function callByName(name: string): Call {
  const call = (serviceCalls as Record<string, Call>)[name];
  if (!call) throw new StreamDefinitionError(`unknown call "${name}": known calls are ${Object.keys(serviceCalls).join(', ')}`);
  return call;
}

function variantOf(value: unknown): 'default' | 'sales-nav' | 'standard' | undefined {
  return value === 'sales-nav' || value === 'standard' || value === 'default' ? value : undefined;
}

/**
 * A response whose records do not all fit their schema was still paid for: take the raw envelope
 * the client kept, so each record is validated on its own and misfits go to `_seedline_rejected`.
 */
export function recoverPaidResponse(error: unknown): ServiceResponse {
  const raw = (error as { code?: string; raw?: unknown }).raw as Partial<ServiceResponse> | undefined;
  if ((error as { code?: string }).code !== 'SEEDLINE_RESPONSE_SHAPE' || !raw || typeof raw !== 'object' || !('data' in raw)) throw error;
  return { data: raw.data, meta: (raw.meta ?? {}) as ServiceResponse['meta'] };
}

/** Statuses whose billing and retry the spec's errors table fixes whatever the type is called. */
const JUDGED_BY_STATUS: ReadonlySet<number> = new Set([402, 422, 429, 500, 502, 504]);

/**
 * The service's error type of a failed call (`unprocessable_target`, …), if it is a service error.
 * On a status whose billing the spec fixes, a type it does not name counts as the one of its
 * status (a 422 of any type is billed). Elsewhere the type is kept as sent: a 404 or 409 of
 * another name must not pass for a lost job or a refused key, which retire a batch.
 */
export function errorType(error: unknown): string | undefined {
  const status = (error as { status?: unknown } | null)?.status;
  const canonical = typeof status === 'number' && JUDGED_BY_STATUS.has(status) ? canonicalErrorType(error) : undefined;
  if (canonical !== undefined) return canonical;
  const type = (error as { type?: unknown } | null)?.type;
  return typeof type === 'string' ? type : undefined;
}

/** A target the service could not process: billed on paged and batch calls, so not asked again until refresh_after. */
export const UNPROCESSABLE = 'unprocessable_target';

/** Error types the spec's errors table says are never billed; each reaches the engine as the service's own error answer. */
const NEVER_BILLED = new Set(['invalid_request', 'invalid_api_key', 'insufficient_credits', 'not_found', 'rate_limited', 'internal_error', 'upstream_timeout', 'upstream_error']);

/**
 * What a call cost, as far as the service has said. `billed` is what it reported (`meta.creditsUsed`,
 * or a 422, which the errors table bills at the call's rate); `atRisk` is what it may have billed
 * without saying so: an answer without `meta.creditsUsed`, or a request that went out and whose
 * answer was lost (reset, timeout, cut-off body, a stop), counted at the call's worst case. A call
 * never sent (refused locally, or no connection made) and an error type the service never bills
 * cost nothing.
 */
export interface Charge {
  billed: number;
  atRisk: number;
}

/** The {@link Charge} of a call whose worst case is `worst`, from its answer or its error. */
export function chargeOf(worst: number, outcome: { response: ServiceResponse } | { error: unknown }): Charge {
  if ('response' in outcome) {
    const used = outcome.response.meta.creditsUsed;
    return used === undefined ? { billed: 0, atRisk: worst } : { billed: used, atRisk: 0 };
  }
  const { error } = outcome;
  if (NEVER_BILLED.has(errorType(error) ?? '') || neverSent(error)) return { billed: 0, atRisk: 0 };
  return errorType(error) === undefined ? { billed: 0, atRisk: worst } : { billed: worst, atRisk: 0 };
}

/** Credits a call is counted at against the budget: what it billed plus what it may have billed (never less than it cost). */
export function creditsOf(worst: number, outcome: { response: ServiceResponse } | { error: unknown }): number {
  const charge = chargeOf(worst, outcome);
  return charge.billed + charge.atRisk;
}

/** A request the service cannot have seen: refused by the client's own checks, or no connection was made. */
function neverSent(error: unknown): boolean {
  const failure = error as { code?: unknown; maybeProcessed?: unknown } | null;
  return failure?.code === 'SEEDLINE_INVALID_REQUEST_BODY' || failure?.maybeProcessed === false;
}

import type { Meta } from '../../schemas/common.js';
import type { BatchJob, BatchResultEntry } from '../../schemas/batch.js';
import { canonicalErrorType } from '../client/errors.js';
import { knownEndpoint } from '../client/endpoints.js';
import type { CallCost, ServiceRequest } from '../manifest/components/requester.js';
import type { Cost, CostModel } from './books/cost-model.js';

export type { BatchItemOf, ServiceRequest } from '../manifest/components/requester.js';

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
  /** Any data endpoint, by method and path. */
  request(call: ServiceRequest): Promise<ServiceResponse>;
  getAccount(): Promise<ServiceResponse>;
  submitBatch(
    body: { items: Body[]; webhook_url?: string },
    options: { idempotencyKey?: string },
  ): Promise<ServiceResponse<BatchJob>>;
  getBatchResults(
    jobId: string,
    query?: { cursor?: string; limit?: number; status?: 'succeeded' | 'failed' },
  ): Promise<ServiceResponse<BatchResultEntry[]>>;
  /** `getBatchResults`, its body read by `decode` unless that answers null. Default: absent (every page parsed by the client). */
  getBatchResultsDecoded?<T>(
    jobId: string,
    query: { cursor?: string; limit?: number },
    decode: (text: string) => Promise<ServiceResponse<T> | null>,
  ): Promise<ServiceResponse<T | BatchResultEntry[]>>;
  /** The account as last read (at connect, and again after a 429). Default: unknown. */
  readonly account?: { rate_limit: { concurrent_batch_jobs: number } } | undefined;
  /** What its rate limiter counted: requests sent so far (a run counts each stream's). Default: not counted. */
  readonly limiter?: { readonly stats: { readonly requests: number } };
}

/**
 * A batch item's params as its single endpoint would send them: the client's rewrite of a known
 * endpoint's body applies (a `fields` list gets the fields that identify the record), so an item
 * answers what a single call would.
 */
export function itemParams(singlePath: string | undefined, params: Body): Body {
  const prepare = singlePath ? knownEndpoint('POST', singlePath)?.prepare : undefined;
  return prepare ? prepare(params) : params;
}

/**
 * What one call of a stream costs: its compiled `cost`, sized by the results its `args` ask (or,
 * for an expected figure, the results it is expected to `return`), never below the service's own
 * figure for `path`.
 */
export function costOfCall(
  costs: CostModel,
  cost: CallCost,
  path: string | undefined,
  args: Body,
  returned?: number,
): Cost {
  return costs.price({
    path,
    cost: { credits: cost.credits, unit: cost.per, pageSize: cost.pageSize },
    sized: cost.sized,
    results: returned ?? cost.resultsAsked(args),
  });
}

/**
 * A response whose records do not all fit their schema was still paid for: take the raw envelope
 * the client kept, so each record is validated on its own and misfits go to `_seedline_rejected`.
 */
export function recoverPaidResponse(error: unknown): ServiceResponse {
  const raw = (error as { code?: string; raw?: unknown }).raw as Partial<ServiceResponse> | undefined;
  if (
    (error as { code?: string }).code !== 'SEEDLINE_RESPONSE_SHAPE' ||
    !raw ||
    typeof raw !== 'object' ||
    !('data' in raw)
  )
    throw error;
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
const NEVER_BILLED = new Set([
  'invalid_request',
  'invalid_api_key',
  'insufficient_credits',
  'not_found',
  'rate_limited',
  'internal_error',
  'upstream_timeout',
  'upstream_error',
]);

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

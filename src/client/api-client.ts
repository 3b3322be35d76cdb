import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import {
  Account,
  Diff,
  AccountPatchBody,
  BatchJob,
  BatchResultsPage,
  BatchSubmitBody,
  CheckResult,
  Signal,
  SignalBulkBody,
  SignalBulkResult,
  SignalCreateBody,
  SignalDeleteResult,
  SignalPatchBody,
  SignalPauseByTagBody,
  SignalPauseByTagResult,
  SignalPauseResult,
  SignalResumeResult,
  SignalUpdateResult,
  SignalUsageRow,
  TestWebhookResult,
  TokenExchangeResponse,
  Trigger,
  WebhookDelivery,
} from '../../schemas/index.js';
import type {
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
} from '../../schemas/index.js';
import type { BatchResultsQuery, SignalListQuery, TriggerListQuery, UsageQuery } from '../../schemas/index.js';
import { ApiTransport, type CallSpec } from './api-transport.js';
import { CreditMeter } from './credit-meter.js';
import { RateLimiter } from './rate-limiter.js';
import type { ApiResponse } from './response-parser.js';
import { endpoint, knownEndpoint, type KnownEndpoint } from './endpoints.js';
import { queryOf, seg, variantSuffix } from './call-helpers.js';
import type { ApiClientOptions, GenericRequest, IdempotencyOptions, SearchVariant } from './client-options.js';

export type {
  ApiClientOptions,
  ClientEvent,
  GenericRequest,
  IdempotencyOptions,
  SearchVariant,
} from './client-options.js';

export type { ApiResponse } from './response-parser.js';

/** Data of POST /v1/signals/{id}/test: the check-now result, or the earlier alias shape. */
export const SignalTestResult = z.union([
  CheckResult,
  z.looseObject({
    check_id: z.string(),
    matched: z.boolean(),
    trigger_id: z.string().nullable().optional(),
    diff: Diff.optional(),
    webhook: z.unknown().optional(),
  }),
]);

/** Data of PATCH /v1/account: the account settings (fields present as the service sends them). */
export const AccountSettings = Account.partial();

/**
 * Typed client of the service: one method per endpoint, each resolving to `{ data, meta }` with
 * `data` validated leniently. Retries, rate limiting, credit metering and token auth are built in.
 *
 * @example
 * ```ts
 * const client = await ApiClient.connect({ baseUrl: 'http://127.0.0.1:4010', apiKey: process.env.SEEDLINE_API_KEY! });
 * const { data, meta } = await client.enrichProfile({ url: 'jane-doe' });
 * console.log(data.full_name, meta.creditsUsed, client.credits.creditsUsed);
 * await client.close();
 * ```
 */
export class ApiClient {
  /** Credits the service reported for this client's calls. */
  readonly credits: CreditMeter = new CreditMeter();
  /** The limiter every attempt passes through. */
  readonly limiter: RateLimiter;
  /** The base address without a trailing slash. */
  readonly baseUrl: string;

  readonly #transport: ApiTransport;
  #account: Account | undefined;
  readonly #ownsLimiter: boolean;
  /** Set once the limiter follows the account's limits (by {@link ApiClient.connect}); a 429 then re-reads them. */
  #limitsFromAccount = false;
  #refreshingLimits: Promise<void> | undefined;

  constructor(options: ApiClientOptions) {
    this.limiter = options.limiter ?? new RateLimiter();
    this.#ownsLimiter = options.limiter === undefined;
    this.#transport = new ApiTransport(options, {
      limiter: this.limiter,
      credits: this.credits,
      onRateLimited: () => this.#rereadLimits(),
    });
    this.baseUrl = this.#transport.baseUrl;
  }

  /**
   * Creates a client, reads GET /v1/account and configures the limiter from
   * `rate_limit.requests_per_minute` and `rate_limit.concurrent_batch_jobs`.
   */
  static async connect(options: ApiClientOptions): Promise<ApiClient> {
    const client = new ApiClient(options);
    try {
      await client.refreshLimits();
    } catch (error) {
      await client.close();
      throw error;
    }
    return client;
  }

  /**
   * Reads GET /v1/account (free) and applies its `rate_limit` to the limiter. {@link connect} does
   * it first; after that every 429 does it again (one read at a time), since a 429 can mean the
   * account's limits changed (a tier change, another client sharing the key).
   */
  async refreshLimits(): Promise<void> {
    const { data } = await this.getAccount();
    this.limiter.configure({
      requestsPerMinute: data.rate_limit.requests_per_minute,
      concurrentBatchJobs: data.rate_limit.concurrent_batch_jobs,
    });
    this.#limitsFromAccount = true;
  }

  /** The account read by the last {@link getAccount} (set by {@link connect}); undefined before. */
  get account(): Account | undefined {
    return this.#account;
  }

  /**
   * POST /v1/profiles/enrich: 1 credit per successful profile. `fields` restricts the answer to those top-level
   * fields (same cost); the fields that identify a profile are added to the list, so the answer is a Profile.
   */
  enrichProfile(body: ProfileEnrichBody): Promise<ApiResponse<Profile>> {
    return this.#known(endpoint('POST', '/v1/profiles/enrich'), body);
  }

  /** POST /v1/companies/enrich: 1 credit per successful company. `fields` works as in {@link enrichProfile}. */
  enrichCompany(body: CompanyEnrichBody): Promise<ApiResponse<Company>> {
    return this.#known(endpoint('POST', '/v1/companies/enrich'), body);
  }

  /** POST /v1/posts/enrich: 1 credit per successful post. */
  enrichPost(body: PostEnrichBody): Promise<ApiResponse<Post>> {
    return this.#known(endpoint('POST', '/v1/posts/enrich'), body);
  }

  /** POST /v1/companies/headcount: 1 credit per successful query. */
  companyHeadcount(body: HeadcountBody): Promise<ApiResponse<HeadcountResult>> {
    return this.#known(endpoint('POST', '/v1/companies/headcount'), body);
  }

  /** POST /v1/search/people (or `/sales-nav`, `/standard`): 2 credits per page scraped. Variant default `default`. */
  searchPeople(body: PeopleSearchBody, variant: SearchVariant = 'default'): Promise<ApiResponse<PeopleSearchResult>> {
    return this.#known(endpoint('POST', `/v1/search/people${variantSuffix(variant)}`), body);
  }

  /** POST /v1/search/companies (or `/sales-nav`, `/standard`): 2 credits per page scraped. Variant default `default`. */
  searchCompanies(
    body: CompanySearchBody,
    variant: SearchVariant = 'default',
  ): Promise<ApiResponse<CompanySearchResult>> {
    return this.#known(endpoint('POST', `/v1/search/companies${variantSuffix(variant)}`), body);
  }

  /** POST /v1/search/jobs: 1 credit per job returned. */
  searchJobs(body: JobSearchBody): Promise<ApiResponse<JobSearchResult>> {
    return this.#known(endpoint('POST', '/v1/search/jobs'), body);
  }

  /** POST /v1/search/posts: 2 credits per page of up to 25. */
  searchPosts(body: PostSearchBody): Promise<ApiResponse<PostSearchResult>> {
    return this.#known(endpoint('POST', '/v1/search/posts'), body);
  }

  /** POST /v1/profiles/activity: 2 credits per page; one `kind` per request. */
  profileActivity(body: ActivityBody): Promise<ApiResponse<ActivityPage>> {
    return this.#known(endpoint('POST', '/v1/profiles/activity'), body);
  }

  /** POST /v1/companies/posts: 2 credits per page. */
  companyPosts(body: CompanyPostsBody): Promise<ApiResponse<CompanyPostsPage>> {
    return this.#known(endpoint('POST', '/v1/companies/posts'), body);
  }

  /**
   * Any data endpoint by method and path, as a stream manifest names it: `body` is sent as JSON
   * (POST), `query` as the query string (GET). An endpoint this client knows is checked, typed and
   * retried as its own method is; another one's `data` is taken as it comes, and `billed` says
   * whether a retry must wait for an answer that says it was not processed.
   */
  request(call: GenericRequest): Promise<ApiResponse<unknown>> {
    const known = knownEndpoint(call.method, call.path);
    if (known) return this.#known(known, call.method === 'GET' ? call.query : call.body);
    const query = call.method === 'GET' ? queryOf(call.query) : undefined;
    return this.#transport.send({
      operation: `${call.method} ${call.path}`,
      method: call.method,
      path: call.path,
      schema: z.unknown(),
      billed: call.billed,
      ...(query ? { query } : {}),
      ...(call.method === 'POST' ? { body: call.body ?? {} } : {}),
    });
  }

  /** POST /v1/posts/comments: 2 credits per page of up to 25 comments; empty pages free; a 422 is billed. */
  postComments(body: PostCommentsBody): Promise<ApiResponse<PostCommentsPage>> {
    return this.#known(endpoint('POST', '/v1/posts/comments'), body);
  }

  /** POST /v1/posts/reactions: 2 credits per page of up to 25 reactions; empty pages free; a 422 is billed. */
  postReactions(body: PostReactionsBody): Promise<ApiResponse<PostReactionsPage>> {
    return this.#known(endpoint('POST', '/v1/posts/reactions'), body);
  }

  /** POST /v1/profiles/recommendations: 2 credits per page; `direction` default `received`. */
  profileRecommendations(body: ProfileRecommendationsBody): Promise<ApiResponse<ProfileRecommendationsPage>> {
    return this.#known(endpoint('POST', '/v1/profiles/recommendations'), body);
  }

  /** POST /v1/profiles/interests: 2 credits per page; `kind` default `companies`. */
  profileInterests(body: ProfileInterestsBody): Promise<ApiResponse<ProfileInterestsPage>> {
    return this.#known(endpoint('POST', '/v1/profiles/interests'), body);
  }

  /**
   * POST /v1/batch under the `concurrent_batch_jobs` limit. Free at submission. Every retry of this
   * call reuses one Idempotency-Key (yours, or a random one), so a retry never creates a second job.
   */
  submitBatch(body: BatchSubmitBody, options: IdempotencyOptions = {}): Promise<ApiResponse<BatchJob>> {
    return this.#transport.send({
      operation: 'submitBatch',
      method: 'POST',
      path: '/v1/batch',
      body,
      bodySchema: BatchSubmitBody,
      schema: BatchJob,
      idempotencyKey: options.idempotencyKey ?? randomUUID(),
      batchSubmission: true,
    });
  }

  /** GET /v1/batch/{job_id}: status, and `results`/`failures` once completed. Free. */
  getBatch(jobId: string): Promise<ApiResponse<BatchJob>> {
    return this.#transport.send({
      operation: 'getBatch',
      method: 'GET',
      path: `/v1/batch/${seg(jobId)}`,
      schema: BatchJob,
    });
  }

  /** GET /v1/batch/{job_id}/results: result entries resolved so far; the next cursor is `meta.nextCursor`. Free. */
  getBatchResults(jobId: string, query: BatchResultsQuery = {}): Promise<ApiResponse<BatchResultsPage>> {
    return this.#transport.send(batchResultsCall(jobId, query, BatchResultsPage));
  }

  /**
   * {@link getBatchResults}, the body read by `decode` (in a worker thread, say) when it can; when
   * it answers null the page is parsed here, as `getBatchResults` parses it.
   */
  getBatchResultsDecoded<T>(
    jobId: string,
    query: BatchResultsQuery,
    decode: (text: string) => Promise<ApiResponse<T> | null>,
  ): Promise<ApiResponse<T | BatchResultsPage>> {
    return this.#transport.send({
      ...batchResultsCall(jobId, query, BatchResultsPage as z.ZodType<T | BatchResultsPage>),
      decode,
    });
  }

  /** POST /v1/signals: the answer alone carries `notify.webhook_secret`. */
  createSignal(body: SignalCreateBody): Promise<ApiResponse<Signal>> {
    return this.#transport.send({
      operation: 'createSignal',
      method: 'POST',
      path: '/v1/signals',
      body,
      bodySchema: SignalCreateBody,
      schema: Signal,
    });
  }

  /** POST /v1/signals/bulk: up to 1000 targets; retries reuse one Idempotency-Key. Free. */
  bulkCreateSignals(
    body: SignalBulkBody,
    options: IdempotencyOptions = {},
  ): Promise<ApiResponse<z.output<typeof SignalBulkResult>>> {
    return this.#transport.send({
      operation: 'bulkCreateSignals',
      method: 'POST',
      path: '/v1/signals/bulk',
      body,
      bodySchema: SignalBulkBody,
      schema: SignalBulkResult,
      idempotencyKey: options.idempotencyKey ?? randomUUID(),
    });
  }

  /** GET /v1/signals: one page; the next cursor is `meta.nextCursor`. */
  listSignals(query: SignalListQuery = {}): Promise<ApiResponse<Signal[]>> {
    return this.#transport.send({
      operation: 'listSignals',
      method: 'GET',
      path: '/v1/signals',
      query: { cursor: query.cursor, limit: query.limit, tag: query.tag, status: query.status },
      schema: z.array(Signal),
    });
  }

  /** GET /v1/signals/{id}. */
  getSignal(id: string): Promise<ApiResponse<Signal>> {
    return this.#transport.send({
      operation: 'getSignal',
      method: 'GET',
      path: `/v1/signals/${seg(id)}`,
      schema: Signal,
    });
  }

  /** PATCH /v1/signals/{id}: send only changed fields. Free. */
  updateSignal(id: string, patch: SignalPatchBody): Promise<ApiResponse<z.output<typeof SignalUpdateResult>>> {
    return this.#transport.send({
      operation: 'updateSignal',
      method: 'PATCH',
      path: `/v1/signals/${seg(id)}`,
      body: patch,
      bodySchema: SignalPatchBody,
      schema: SignalUpdateResult,
    });
  }

  /** DELETE /v1/signals/{id}. */
  deleteSignal(id: string): Promise<ApiResponse<z.output<typeof SignalDeleteResult>>> {
    return this.#transport.send({
      operation: 'deleteSignal',
      method: 'DELETE',
      path: `/v1/signals/${seg(id)}`,
      schema: SignalDeleteResult,
    });
  }

  /** POST /v1/signals/{id}/pause. Free. */
  pauseSignal(id: string): Promise<ApiResponse<z.output<typeof SignalPauseResult>>> {
    return this.#transport.send({
      operation: 'pauseSignal',
      method: 'POST',
      path: `/v1/signals/${seg(id)}/pause`,
      schema: SignalPauseResult,
    });
  }

  /** POST /v1/signals/pause `{ tag }`: pauses every Signal carrying the tag; `data.paused` is the count. Free. */
  pauseSignalsByTag(tag: string): Promise<ApiResponse<z.output<typeof SignalPauseByTagResult>>> {
    return this.#transport.send({
      operation: 'pauseSignalsByTag',
      method: 'POST',
      path: '/v1/signals/pause',
      body: { tag },
      bodySchema: SignalPauseByTagBody,
      schema: SignalPauseByTagResult,
    });
  }

  /** POST /v1/signals/{id}/resume. */
  resumeSignal(id: string): Promise<ApiResponse<z.output<typeof SignalResumeResult>>> {
    return this.#transport.send({
      operation: 'resumeSignal',
      method: 'POST',
      path: `/v1/signals/${seg(id)}/resume`,
      schema: SignalResumeResult,
    });
  }

  /**
   * POST /v1/signals/{id}/check-now: one real, billed check. It takes no Idempotency-Key, so it is
   * sent once: only a 429 (refused before any check) is retried; a 5xx or a lost answer is thrown.
   */
  checkSignalNow(id: string): Promise<ApiResponse<z.output<typeof CheckResult>>> {
    return this.#transport.send({
      operation: 'checkSignalNow',
      method: 'POST',
      path: `/v1/signals/${seg(id)}/check-now`,
      schema: CheckResult,
      once: true,
    });
  }

  /** POST /v1/signals/{id}/test: the backward-compatible alias of check-now (either answer shape); sent once, like check-now. */
  testSignal(id: string): Promise<ApiResponse<z.output<typeof SignalTestResult>>> {
    return this.#transport.send({
      operation: 'testSignal',
      method: 'POST',
      path: `/v1/signals/${seg(id)}/test`,
      schema: SignalTestResult,
      once: true,
    });
  }

  /** POST /v1/signals/{id}/test-webhook: enqueues a signed `signal.test` delivery; retries reuse one Idempotency-Key. Free. */
  testSignalWebhook(
    id: string,
    options: IdempotencyOptions = {},
  ): Promise<ApiResponse<z.output<typeof TestWebhookResult>>> {
    return this.#transport.send({
      operation: 'testSignalWebhook',
      method: 'POST',
      path: `/v1/signals/${seg(id)}/test-webhook`,
      schema: TestWebhookResult,
      idempotencyKey: options.idempotencyKey ?? randomUUID(),
    });
  }

  /** GET /v1/triggers: one page ordered by `checked_at`; the next cursor is `meta.nextCursor`. Free. */
  listTriggers(query: TriggerListQuery = {}): Promise<ApiResponse<z.output<typeof Trigger>[]>> {
    return this.#transport.send({
      operation: 'listTriggers',
      method: 'GET',
      path: '/v1/triggers',
      query: { cursor: query.cursor, limit: query.limit, signal_id: query.signal_id, since: query.since },
      schema: z.array(Trigger),
    });
  }

  /** GET /v1/usage/signals: usage rows grouped by `external_id`. Free. */
  getSignalUsage(query: UsageQuery = {}): Promise<ApiResponse<z.output<typeof SignalUsageRow>[]>> {
    return this.#transport.send({
      operation: 'getSignalUsage',
      method: 'GET',
      path: '/v1/usage/signals',
      query: { group_by: query.group_by, from: query.from, to: query.to },
      schema: z.array(SignalUsageRow),
    });
  }

  /** GET /v1/account: balance, tier and limits. Free. Also updates {@link account} and the meter's balance. */
  async getAccount(): Promise<ApiResponse<Account>> {
    const answer = await this.#transport.send({
      operation: 'getAccount',
      method: 'GET',
      path: '/v1/account',
      schema: Account,
    });
    this.#account = answer.data;
    this.credits.observeBalance(answer.data.credits_remaining);
    return answer;
  }

  /** PATCH /v1/account: default and fallback webhook URLs; `webhook_secret` comes back when a default webhook is first set. */
  updateAccount(body: AccountPatchBody): Promise<ApiResponse<z.output<typeof AccountSettings>>> {
    return this.#transport.send({
      operation: 'updateAccount',
      method: 'PATCH',
      path: '/v1/account',
      body,
      bodySchema: AccountPatchBody,
      schema: AccountSettings,
    });
  }

  /** GET /v1/webhook-deliveries/{delivery_id}. Free. */
  getWebhookDelivery(id: string): Promise<ApiResponse<WebhookDelivery>> {
    return this.#transport.send({
      operation: 'getWebhookDelivery',
      method: 'GET',
      path: `/v1/webhook-deliveries/${seg(id)}`,
      schema: WebhookDelivery,
    });
  }

  /**
   * POST /api/api-auth/authenticate `{ apiKey }` → `{ accessToken }` (a 24 h JWT). `meta` is
   * synthesized (the answer has no envelope). With `auth: 'token'` the token is also cached for
   * later calls; you never need to call this yourself.
   */
  exchangeToken(): Promise<ApiResponse<z.output<typeof TokenExchangeResponse>>> {
    return this.#transport.exchangeToken();
  }

  /** Closes the connection pool, and the limiter's timers when the client created the limiter (a shared one is left running). */
  async close(): Promise<void> {
    if (this.#ownsLimiter) this.limiter.close();
    await this.#transport.close();
  }

  #rereadLimits(): void {
    if (!this.#limitsFromAccount || this.#refreshingLimits) return;
    // A failed re-read keeps the limits in force; the retry itself still waits out Retry-After.
    this.#refreshingLimits = this.refreshLimits()
      .catch(() => undefined)
      .finally(() => (this.#refreshingLimits = undefined));
  }

  /** A call of a known endpoint with `args` (its body, or its query for a GET). */
  #known<T>(known: KnownEndpoint, args: object | undefined): Promise<ApiResponse<T>> {
    const spec = {
      operation: known.operation,
      method: known.method,
      path: known.path,
      schema: known.schema,
      billed: known.billed,
    };
    if (known.method === 'GET')
      return this.#transport.send({ ...spec, query: queryOf(args as Record<string, unknown> | undefined) }) as Promise<
        ApiResponse<T>
      >;
    const body = known.prepare ? known.prepare({ ...(args as Record<string, unknown>) }) : args;
    return this.#transport.send({
      ...spec,
      body,
      ...(known.bodySchema ? { bodySchema: known.bodySchema } : {}),
    }) as Promise<ApiResponse<T>>;
  }
}

/** The call of `GET /v1/batch/{id}/results`, its data read with `schema`. */
function batchResultsCall<S extends z.ZodType>(jobId: string, query: BatchResultsQuery, schema: S): CallSpec<S> {
  return {
    operation: 'getBatchResults',
    method: 'GET',
    path: `/v1/batch/${seg(jobId)}/results`,
    query: { status: query.status, cursor: query.cursor, limit: query.limit },
    schema,
  };
}

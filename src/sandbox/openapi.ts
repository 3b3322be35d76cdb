import { z } from 'zod';
import * as schemas from '../../schemas/index.js';
import { OPERATIONS } from './operations.js';

/** One documented endpoint. */
interface EndpointDoc {
  method: 'get' | 'post' | 'patch' | 'delete';
  path: string;
  summary: string;
  credits: string;
  /** Component name of the request body. */
  request?: string;
  /** Component name of `data` (array of it when `list`), or undefined for a free-form object. */
  response?: string;
  list?: boolean;
  status?: number;
  query?: string[];
  idempotent?: boolean;
  /** Path parameter name, when the path has one. */
  param?: string;
  /** Set for the token exchange: no credentials, plain bodies instead of the envelope. */
  plain?: boolean;
}

const FREE = 'free';

/** Data schema of each scrape endpoint. */
const SCRAPE_RESPONSES: Record<string, string> = {
  '/v1/profiles/enrich': 'Profile',
  '/v1/companies/enrich': 'Company',
  '/v1/posts/enrich': 'Post',
  '/v1/companies/headcount': 'HeadcountResult',
  '/v1/search/people': 'PeopleSearchResult',
  '/v1/search/people/standard': 'PeopleSearchResult',
  '/v1/search/people/sales-nav': 'PeopleSearchResult',
  '/v1/search/companies': 'CompanySearchResult',
  '/v1/search/companies/standard': 'CompanySearchResult',
  '/v1/search/companies/sales-nav': 'CompanySearchResult',
  '/v1/search/jobs': 'JobSearchResult',
  '/v1/search/posts': 'PostSearchResult',
  '/v1/profiles/activity': 'ActivityPage',
  '/v1/companies/posts': 'CompanyPostsPage',
  '/v1/posts/comments': 'PostCommentsPage',
  '/v1/posts/reactions': 'PostReactionsPage',
  '/v1/profiles/recommendations': 'ProfileRecommendationsPage',
  '/v1/profiles/interests': 'ProfileInterestsPage',
};

function schemaName(schema: unknown): string {
  const found = Object.entries(schemas).find(([, value]) => value === schema);
  if (!found) throw new Error('request schema is not exported from schemas/');
  return found[0];
}

const ENDPOINTS: EndpointDoc[] = [
  {
    method: 'post',
    path: '/api/api-auth/authenticate',
    summary: 'Exchange an API key for a 24-hour access token',
    credits: FREE,
    request: 'TokenExchangeBody',
    response: 'TokenExchangeResponse',
    plain: true,
  },
  {
    method: 'get',
    path: '/v1/account',
    summary: 'Account balance, tier, limits and Signal spend',
    credits: FREE,
    response: 'Account',
  },
  {
    method: 'patch',
    path: '/v1/account',
    summary: 'Update account settings (default and fallback webhooks)',
    credits: FREE,
    request: 'AccountPatchBody',
    response: 'Account',
  },
  ...OPERATIONS.map((op): EndpointDoc => ({
    method: 'post',
    path: op.path,
    summary: `Live scrape: ${op.name}`,
    credits: op.creditsDoc,
    request: schemaName(op.schema),
    response: SCRAPE_RESPONSES[op.path] as string,
  })),
  {
    method: 'post',
    path: '/v1/batch',
    summary: 'Submit a batch job of up to 1000 items',
    credits: 'submission free; each item bills at its operation rate as it resolves (rule 1 items at submission)',
    request: 'BatchSubmitBody',
    response: 'BatchJob',
    status: 202,
    idempotent: true,
  },
  {
    method: 'get',
    path: '/v1/batch/{job_id}',
    summary: 'Batch job status, with results and failures once completed',
    credits: FREE,
    response: 'BatchJob',
    param: 'job_id',
  },
  {
    method: 'get',
    path: '/v1/batch/{job_id}/results',
    summary: 'Result entries in resolution order, by cursor',
    credits: FREE,
    response: 'BatchResultEntry',
    list: true,
    param: 'job_id',
    query: ['status', 'cursor', 'limit'],
  },
  {
    method: 'post',
    path: '/v1/signals',
    summary: 'Create a Signal (the response alone carries notify.webhook_secret)',
    credits: FREE,
    request: 'SignalCreateBody',
    response: 'Signal',
    status: 201,
  },
  {
    method: 'get',
    path: '/v1/signals',
    summary: 'List Signals',
    credits: FREE,
    response: 'Signal',
    list: true,
    query: ['cursor', 'limit', 'tag', 'status'],
  },
  {
    method: 'post',
    path: '/v1/signals/bulk',
    summary: 'Create Signals for up to 1000 targets from one template',
    credits: FREE,
    request: 'SignalBulkBody',
    response: 'SignalBulkResult',
    status: 201,
    idempotent: true,
  },
  {
    method: 'post',
    path: '/v1/signals/pause',
    summary: 'Pause every active Signal carrying a tag',
    credits: FREE,
    request: 'SignalPauseByTagBody',
    response: 'SignalPauseByTagResult',
  },
  { method: 'get', path: '/v1/signals/{id}', summary: 'Get a Signal', credits: FREE, response: 'Signal', param: 'id' },
  {
    method: 'patch',
    path: '/v1/signals/{id}',
    summary: 'Update a Signal in place (snapshot history kept)',
    credits: FREE,
    request: 'SignalPatchBody',
    response: 'SignalUpdateResult',
    param: 'id',
  },
  {
    method: 'delete',
    path: '/v1/signals/{id}',
    summary: 'Delete a Signal',
    credits: FREE,
    response: 'SignalDeleteResult',
    param: 'id',
  },
  {
    method: 'post',
    path: '/v1/signals/{id}/pause',
    summary: 'Pause a Signal',
    credits: FREE,
    response: 'SignalPauseResult',
    param: 'id',
  },
  {
    method: 'post',
    path: '/v1/signals/{id}/resume',
    summary: 'Resume a Signal; the next check diffs against the last snapshot',
    credits: FREE,
    response: 'SignalResumeResult',
    param: 'id',
  },
  {
    method: 'post',
    path: '/v1/signals/{id}/check-now',
    summary: 'Run one real check now',
    credits: "same as the Signal's underlying scrape (1 credit for a profile target); failed and paused checks free",
    response: 'CheckResult',
    param: 'id',
  },
  {
    method: 'post',
    path: '/v1/signals/{id}/test',
    summary: 'Backward-compatible alias of check-now',
    credits: "same as the Signal's underlying scrape; failed and paused checks free",
    response: 'CheckResult',
    param: 'id',
  },
  {
    method: 'post',
    path: '/v1/signals/{id}/test-webhook',
    summary: 'Enqueue a signed signal.test delivery',
    credits: FREE,
    response: 'TestWebhookResult',
    param: 'id',
    idempotent: true,
  },
  {
    method: 'get',
    path: '/v1/triggers',
    summary: 'Triggers of Signal matches, by cursor',
    credits: FREE,
    response: 'Trigger',
    list: true,
    query: ['cursor', 'limit', 'signal_id', 'since'],
  },
  {
    method: 'get',
    path: '/v1/usage/signals',
    summary: 'Signal usage rollups by external_id',
    credits: FREE,
    response: 'SignalUsageRow',
    list: true,
    query: ['group_by', 'from', 'to'],
  },
  {
    method: 'get',
    path: '/v1/webhook-deliveries/{delivery_id}',
    summary: 'A webhook delivery record',
    credits: FREE,
    response: 'WebhookDelivery',
    param: 'delivery_id',
  },
];

const ERRORS: Record<string, string> = {
  '400': 'invalid_request: malformed body, unknown field, bad URL',
  '401': 'invalid_api_key: missing, malformed or revoked key',
  '402': 'insufficient_credits: the balance cannot cover the call',
  '404': 'not_found',
  '409': 'idempotency_conflict: the Idempotency-Key was used with a different body',
  '422': 'unprocessable_target: target not found, private, deleted or unreachable',
  '429': 'rate_limited: over the request, search or concurrent-batch limit (Retry-After)',
  '500': 'internal_error',
  '502': 'upstream_error',
  '504': 'upstream_timeout',
};

function toJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as Record<
    string,
    unknown
  >;
  delete json.$schema;
  return json;
}

function componentNames(): string[] {
  const names = new Set(['Meta', 'ErrorEnvelope', 'TokenExchangeError']);
  for (const endpoint of ENDPOINTS) {
    if (endpoint.request) names.add(endpoint.request);
    if (endpoint.response) names.add(endpoint.response);
  }
  return [...names].sort();
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

function operation(endpoint: EndpointDoc): Record<string, unknown> {
  const data = endpoint.response
    ? endpoint.list
      ? { type: 'array', items: ref(endpoint.response) }
      : ref(endpoint.response)
    : { type: 'object' };
  const body = endpoint.plain
    ? data
    : { type: 'object', required: ['data', 'meta'], properties: { data, meta: ref('Meta') } };
  const responses: Record<string, unknown> = {
    [String(endpoint.status ?? 200)]: { description: 'Success', content: { 'application/json': { schema: body } } },
  };
  if (endpoint.idempotent && endpoint.path === '/v1/batch')
    responses['200'] = {
      description: 'Idempotent replay: the original job',
      content: { 'application/json': { schema: body } },
    };
  for (const [status, description] of Object.entries(ERRORS)) {
    responses[status] = {
      description,
      content: { 'application/json': { schema: endpoint.plain ? ref('TokenExchangeError') : ref('ErrorEnvelope') } },
    };
  }
  const parameters: unknown[] = [];
  if (endpoint.param) parameters.push({ name: endpoint.param, in: 'path', required: true, schema: { type: 'string' } });
  for (const name of endpoint.query ?? [])
    parameters.push({
      name,
      in: 'query',
      required: false,
      schema: name === 'limit' ? { type: 'integer' } : { type: 'string' },
    });
  if (endpoint.idempotent)
    parameters.push({ name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string' } });
  const op: Record<string, unknown> = {
    operationId: `${endpoint.method}${endpoint.path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase())}`,
    summary: endpoint.summary,
    'x-credits': endpoint.credits,
    responses,
  };
  if (parameters.length > 0) op.parameters = parameters;
  if (endpoint.request)
    op.requestBody = { required: true, content: { 'application/json': { schema: ref(endpoint.request) } } };
  if (endpoint.plain) op.security = [];
  return op;
}

let cached: Record<string, unknown> | undefined;

/** The OpenAPI 3.1 document (version 1.0.0) of every endpoint, each operation with `x-credits`; built once per process. */
export function buildOpenApiDocument(): Record<string, unknown> {
  if (cached) return cached;
  const paths: Record<string, Record<string, unknown>> = {};
  for (const endpoint of ENDPOINTS) (paths[endpoint.path] ??= {})[endpoint.method] = operation(endpoint);
  const components: Record<string, unknown> = {};
  for (const name of componentNames())
    components[name] = toJsonSchema((schemas as unknown as Record<string, z.ZodType>)[name] as z.ZodType);
  cached = {
    openapi: '3.1.0',
    info: {
      title: 'Professional-network data service',
      version: '1.0.0',
      description:
        "Live enrichment, search, batch jobs and Signals. Served by the seedline sandbox; costs in credits are in each operation's x-credits.",
    },
    servers: [{ url: '/' }],
    security: [{ apiKey: [] }, { accessToken: [] }],
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        accessToken: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description: 'The token of POST /api/api-auth/authenticate as the whole header value',
        },
      },
    },
  };
  return cached;
}

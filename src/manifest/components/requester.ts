import { lookup } from '../../util/dotted-path.js';
import { compileTemplate } from '../compiled-template.js';
import { StreamDefinitionError } from '../manifest-error.js';
import type { BatchOperationNode, BatchStreamNode, CostNode, RequestNode } from '../manifest-schema.js';
import type { Partition } from './partitions.js';

type Body = Record<string, unknown>;

/** One call by method and path, as a manifest names it (see `ApiClient.request`). */
export interface ServiceRequest {
  method: 'GET' | 'POST';
  path: string;
  body?: Body;
  query?: Body;
  billed: boolean;
}

/**
 * A batch item: the operation and the exact body its single endpoint takes
 * (docs/service-assumptions.md#batch-items-and-results).
 */
export interface BatchItemOf {
  operation: string;
  params: Body;
}

/** What one call of a stream costs, as its manifest states it (a compiled `cost` node). */
export interface CallCost {
  credits: number;
  per: CostNode['per'];
  pageSize: number;
  /** Whether `results` sizes a call (a search that pages internally). */
  sized: boolean;
  /** The results a call with `args` asks for; undefined for a call not sized by them. */
  resultsAsked(args: Body): number | undefined;
}

/** Where a page's state stands, as the request's templates read it (`page.number`). */
export interface PageScope {
  number: number;
  token?: string | null;
  cursor?: string | null;
}

/** A request stream's call (a compiled `request` node, with its `batch` operation and `records` path). */
export interface Requester {
  readonly method: 'GET' | 'POST';
  /** The path a partition's call goes to. */
  pathOf(partition: Partition): string;
  /** The call's `args` (its body, or its query for a GET) for a partition, its saved state and page. */
  argsOf(partition: Partition, state: Body, page: PageScope): Body;
  /** The request of a call with `args`. */
  requestOf(partition: Partition, args: Body): ServiceRequest;
  /** The batch item a call with `args` can go as, and whether its failure bills; undefined when this partition's call has none. */
  batchItemOf(partition: Partition, args: Body): (BatchItemOf & { failuresBilled: boolean }) | undefined;
  /** The records of an answer (its `records` path; a single object is one record). */
  recordsOf(answer: unknown, partition: Partition): unknown[];
}

/** The items of a batch stream (a compiled batch manifest's operation, params and single endpoint). */
export interface BatchItems {
  readonly operation: string;
  /** The endpoint an item is asked through alone (a retry of an item whose failure was billed). */
  readonly singlePath: string | undefined;
  /** Whether a failed item is billed all the same. */
  readonly failedItemsBilled: boolean;
  /** A seed's item params as the manifest renders them. */
  paramsOf(partition: Partition): Body;
}

/** Compiles a `cost` node. */
export function compileCost(node: CostNode): CallCost {
  const results = node.results === undefined ? undefined : compileTemplate(node.results);
  return {
    credits: node.credits,
    per: node.per,
    pageSize: node.page_size,
    sized: results !== undefined,
    resultsAsked: (args) => (results === undefined ? undefined : Number(results({ args }))),
  };
}

/** Compiles a request stream's call with its options. */
export function compileRequester(
  stream: string,
  node: { request: RequestNode; batch?: BatchOperationNode | undefined; records: string; cost: CostNode },
  options: Body,
): Requester {
  const path = compileTemplate(node.request.path, { options });
  const args = compileTemplate(node.request.body ?? node.request.query ?? {}, { options });
  const operation = node.batch ? compileTemplate(node.batch.operation, { options }) : undefined;
  const failuresBilled = node.batch ? compileTemplate(node.batch.failed_items_billed, { options }) : undefined;
  const records = compileTemplate(node.records);
  const { method } = node.request;
  const billed = node.cost.per !== 'free';
  const pathOf = (partition: Partition) => {
    const rendered = path({ partition: partition.values });
    if (typeof rendered !== 'string' || !rendered.startsWith('/'))
      throw new StreamDefinitionError(
        `stream "${stream}": its request path renders to ${JSON.stringify(rendered)} for ${partition.key}, not a path such as /v1/search/jobs`,
      );
    return rendered;
  };
  return {
    method,
    pathOf,
    argsOf: (partition, state, page) => args({ partition: partition.values, state, page }) as Body,
    requestOf: (partition, callArgs) => ({
      method,
      path: pathOf(partition),
      billed,
      ...(method === 'GET' ? { query: callArgs } : { body: callArgs }),
    }),
    batchItemOf: (partition, callArgs) => {
      const name = operation?.({ partition: partition.values });
      if (typeof name !== 'string' || name === '') return undefined;
      return {
        operation: name,
        params: callArgs,
        failuresBilled: failuresBilled?.({ partition: partition.values }) === true,
      };
    },
    recordsOf: (answer, partition) => listOf(lookup(answer, String(records({ partition: partition.values })))),
  };
}

/** Compiles a batch stream's items with its options. */
export function compileBatchItems(node: BatchStreamNode, options: Body): BatchItems {
  const params = compileTemplate(node.params, { options });
  return {
    operation: node.operation,
    singlePath: node.single?.path,
    failedItemsBilled: node.failed_items_billed,
    paramsOf: (partition) => params({ partition: partition.values }) as Body,
  };
}

function listOf(value: unknown): unknown[] {
  if (Array.isArray(value)) return value;
  return value === undefined || value === null ? [] : [value];
}

import { compileTemplate } from '../compiled-template.js';
import type { PaginatorNode } from '../manifest-schema.js';
import type { Partition } from './partitions.js';
import type { CallCost, PageScope } from './requester.js';

type Body = Record<string, unknown>;

/** An answer to a page call, as the single endpoint returns it (a batch result's `data` is the same). */
export interface PageAnswer {
  data: unknown;
  meta: { nextCursor?: string | null };
}

/** How a request stream pages (a compiled `paginator` node). */
export interface Paginator {
  /** Its `type`, for messages. */
  readonly name: PaginatorNode['type'];
  /** The most pages a pass may read; undefined when it sets no limit (free listings). */
  maxPages(partition: Partition): number | undefined;
  /** `args` of a call asking for `page` (the paging arguments added past the first page). */
  pageArgs(args: Body, page: PageScope): Body;
  /** The page after `page` when the answer says there is one (page limits are the caller's). */
  next(answer: PageAnswer, page: PageScope): PageScope | undefined;
  /** The most records one call with `args` answers; Infinity when nothing bounds it. What a plan bounds a child stream by. */
  recordsPerCall(args: Body, cost: CallCost): number;
}

type Factory<T extends PaginatorNode['type']> = (node: Extract<PaginatorNode, { type: T }>, options: Body) => Paginator;

const factories = {
  none: () => ({
    name: 'none',
    maxPages: () => 1,
    pageArgs: (args) => args,
    next: () => undefined,
    recordsPerCall: (args, cost) => cost.resultsAsked(args) || Infinity,
  }),
  /** Body `page` + `pagination_token`; stops when `pagination.has_more` is false. */
  page_token: (node, options) => {
    const maxPages = compileTemplate(node.max_pages, { options });
    return {
      name: 'page_token',
      maxPages: (partition) => Number(maxPages({ partition: partition.values })) || 10,
      pageArgs: (args, page) => {
        if (page.number > 1) {
          args.page = page.number;
          if (page.token) args.pagination_token = page.token;
        }
        return args;
      },
      next: (answer, page) => {
        const data = answer.data as { pagination?: { has_more?: boolean }; pagination_token?: string | null };
        return data.pagination?.has_more === true
          ? { number: page.number + 1, token: data.pagination_token ?? null }
          : undefined;
      },
      recordsPerCall: (args, cost) => Number(args.per_page) || cost.pageSize,
    };
  },
  /** `cursor` argument from `meta.nextCursor`; stops when it is null. */
  cursor: (node) => ({
    name: 'cursor',
    maxPages: () => undefined,
    pageArgs: (args) => args,
    next: (answer, page) =>
      answer.meta.nextCursor ? { number: page.number + 1, cursor: answer.meta.nextCursor } : undefined,
    recordsPerCall: () => node.limit,
  }),
} satisfies { [T in PaginatorNode['type']]: Factory<T> };

/** Compiles a `paginator` node with the stream's options. */
export function compilePaginator(node: PaginatorNode, options: Body): Paginator {
  return (factories[node.type] as Factory<typeof node.type>)(node as never, options);
}

/**
 * The one place that knows what a call costs. Plan and budget enforcement both ask it, so the
 * worst case `seedline plan` shows is exactly what a run reserves before each call.
 *
 * @example
 * ```ts
 * const model = CostModel.fromOpenApi(await (await fetch(`${baseUrl}/openapi.json`)).json());
 * model.callCost('searchPeople', { body: { max_results: 100 } }); // { worst: 8, expected: 8 }
 * model.itemCost('profiles.enrich', { url: 'jane' });             // { worst: 1, expected: 1 }
 * ```
 */

import { StreamDefinitionError } from './engine-errors.js';

/** How an operation's credits scale. */
export type CostUnit = 'call' | 'page' | 'result' | 'free';

/** The cost of one operation, read from its `x-credits` text. */
export interface OperationCost {
  /** Credits per unit (the highest figure the text names, so a conflicting older figure never lowers a worst case). */
  credits: number;
  /** What the credits are per: a successful call, a scraped page, a returned result; or free. */
  unit: CostUnit;
  /** Results per page for `page` costs. Default: 25 (the spec's page size). */
  pageSize: number;
}

/** Worst and expected credits of some work. */
export interface Cost {
  /** What it can cost at most: the amount reserved before the call is sent. */
  worst: number;
  /** What it usually costs: every call succeeds and paged feeds stop after their first page. */
  expected: number;
}

/** The spec's credit-cost table ("Credit costs"), by path, as the service words it (and as `x-credits` does). */
export const SPEC_CREDIT_TEXTS: Readonly<Record<string, string>> = {
  '/v1/profiles/enrich': '1 credit per successful profile',
  '/v1/posts/enrich': '1 credit per successful post',
  '/v1/companies/enrich': '1 credit per successful company',
  '/v1/companies/headcount': '1 credit per successful query',
  '/v1/search/people': '2 credits per page scraped (up to 25 results per page); empty pages free',
  '/v1/search/companies': '2 credits per page scraped (up to 25 results per page); empty pages free. An earlier description states 1 credit per page.',
  '/v1/search/jobs': '1 credit per job returned; zero-result queries free',
  // CONTRACT.md §1 fixes what the spec leaves open for post search.
  '/v1/search/posts': '2 credits per page of up to 25; empty pages free',
  '/v1/profiles/activity': '2 credits per page (up to 25 items); empty pages free; each kind is its own scrape',
  '/v1/companies/posts': '2 credits per page (up to 25 posts); empty pages free',
};

/** A request-stream call (`serviceCalls`) or batch operation and the path whose cost it pays, with how its size is read. */
interface Priced {
  path: string;
  /** Results asked for (searches, job search); `undefined` for one-unit calls. */
  results?: (args: Record<string, unknown>) => unknown;
}

const searchBody = (args: Record<string, unknown>) => (args.body as Record<string, unknown> | undefined)?.max_results;
const own = (args: Record<string, unknown>) => args.max_results;

const CALLS: Readonly<Record<string, Priced | null>> = {
  searchPeople: { path: '/v1/search/people', results: searchBody },
  searchCompanies: { path: '/v1/search/companies', results: searchBody },
  searchJobs: { path: '/v1/search/jobs', results: own },
  profileActivity: { path: '/v1/profiles/activity' },
  companyPosts: { path: '/v1/companies/posts' },
  listTriggers: null,
  listSignals: null,
  getSignalUsage: null,
  getAccount: null,
};

const OPERATIONS: Readonly<Record<string, Priced>> = {
  'profiles.enrich': { path: '/v1/profiles/enrich' },
  'companies.enrich': { path: '/v1/companies/enrich' },
  'posts.enrich': { path: '/v1/posts/enrich' },
  'companies.headcount': { path: '/v1/companies/headcount' },
  'search.people': { path: '/v1/search/people', results: own },
  // A Sales Navigator item reserves a max_results-sized amount, priced like the people search.
  'search.people.sales_nav': { path: '/v1/search/people', results: own },
  'search.companies': { path: '/v1/search/companies', results: own },
  'search.jobs': { path: '/v1/search/jobs', results: own },
  'profiles.activity': { path: '/v1/profiles/activity' },
  'companies.posts': { path: '/v1/companies/posts' },
};

/**
 * Batch operations whose failed items bill all the same (the spec's "Batch items fail
 * individually", rule 1): a retry of such an item pays again.
 */
export const FAILURES_BILLED = new Set(['profiles.enrich', 'companies.enrich', 'posts.enrich', 'search.people.sales_nav']);

/** The default `max_results` of searches when a body leaves it out. */
const DEFAULT_RESULTS = 25;

/** Reads one `x-credits` text ("2 credits per page scraped (up to 25 results per page)") as an {@link OperationCost}. */
export function parseCreditText(text: string): OperationCost {
  const figures = [...text.matchAll(/(\d+)\s*credits?\b/gi)].map((m) => Number(m[1]));
  if (figures.length === 0) return { credits: 0, unit: 'free', pageSize: DEFAULT_RESULTS };
  const head = text.split(/[;.]/)[0] ?? text;
  const unit: CostUnit = /per\s+page/i.test(head) ? 'page' : /per\s+(job|result|item)s?\s+returned/i.test(head) ? 'result' : 'call';
  const pageSize = Number(/up to (\d+)/i.exec(head)?.[1] ?? DEFAULT_RESULTS);
  return { credits: Math.max(...figures), unit, pageSize };
}

/** The credit cost of every service call, from the built-in spec table or the service's OpenAPI `x-credits`. */
export class CostModel {
  private constructor(
    /** Tables to price by, the service's first; a call reserves the highest worst case any of them gives. */
    private readonly tables: readonly ReadonlyMap<string, OperationCost>[],
    /** Where the table came from: `openapi` (the service's document) or `built-in`. */
    readonly source: 'openapi' | 'built-in',
  ) {}

  /** The spec's table as shipped with seedline. */
  static builtIn(): CostModel {
    return new CostModel([tableOf(SPEC_CREDIT_TEXTS)], 'built-in');
  }

  /**
   * The costs the service's OpenAPI document declares (`x-credits` of each POST operation), beside
   * the built-in table. Anything that is not such a document gives the built-in table. Each call is
   * priced with both and reserves the larger worst case, so neither a lower figure nor a unit the
   * service words differently ("per scraped page" read as per call) can shrink a reservation.
   */
  static fromOpenApi(document: unknown): CostModel {
    const paths = (document as { paths?: Record<string, Record<string, { 'x-credits'?: unknown }>> } | null)?.paths;
    if (!paths || typeof paths !== 'object') return CostModel.builtIn();
    const service = new Map<string, OperationCost>();
    for (const [path, item] of Object.entries(paths)) {
      const text = item?.post?.['x-credits'];
      if (typeof text === 'string') service.set(path, parseCreditText(text));
    }
    return service.size === 0 ? CostModel.builtIn() : new CostModel([service, tableOf(SPEC_CREDIT_TEXTS)], 'openapi');
  }

  /** The cost of one `path` (e.g. `/v1/search/people`) as the service states it, else as the spec does; free when neither knows it. */
  operation(path: string): OperationCost {
    for (const table of this.tables) {
      const cost = table.get(path);
      if (cost) return cost;
    }
    return { credits: 0, unit: 'free', pageSize: DEFAULT_RESULTS };
  }

  /** One call of a request stream (`call` as in its manifest, with its rendered args): one page of a feed, a whole search. */
  callCost(call: string, args: Record<string, unknown>): Cost {
    const priced = CALLS[call];
    // An unpriced call must not pass as free: the budget would not hold it.
    if (priced === undefined) throw new StreamDefinitionError(`no credit cost is known for the call "${call}" (known: ${Object.keys(CALLS).join(', ')})`);
    return priced ? this.price(priced, args) : { worst: 0, expected: 0 };
  }

  /** One batch item of `operation` with its params (what the service bills or reserves at submission). */
  itemCost(operation: string, params: Record<string, unknown>): Cost {
    const priced = OPERATIONS[operation];
    if (!priced) throw new StreamDefinitionError(`no credit cost is known for the batch operation "${operation}" (known: ${Object.keys(OPERATIONS).join(', ')})`);
    return this.price(priced, params);
  }

  private price(priced: Priced, args: Record<string, unknown>): Cost {
    const costs = this.tables.flatMap((table) => {
      const cost = table.get(priced.path);
      return cost ? [costWith(cost, priced, args)] : [];
    });
    return { worst: Math.max(0, ...costs.map((c) => c.worst)), expected: Math.max(0, ...costs.map((c) => c.expected)) };
  }
}

/** Worst and expected credits of one call priced by `cost`. */
function costWith(cost: OperationCost, priced: Priced, args: Record<string, unknown>): Cost {
  const results = Number(priced.results?.(args) ?? DEFAULT_RESULTS) || DEFAULT_RESULTS;
  switch (cost.unit) {
    case 'free':
      return { worst: 0, expected: 0 };
    case 'call':
      return { worst: cost.credits, expected: cost.credits };
    case 'result':
      return { worst: cost.credits * results, expected: cost.credits * results };
    case 'page': {
      // A search pages internally up to max_results; a feed call is one page.
      const pages = priced.results ? Math.ceil(results / cost.pageSize) : 1;
      return { worst: cost.credits * pages, expected: cost.credits * pages };
    }
  }
}

function tableOf(texts: Readonly<Record<string, string>>): Map<string, OperationCost> {
  return new Map(Object.entries(texts).map(([path, text]) => [path, parseCreditText(text)]));
}

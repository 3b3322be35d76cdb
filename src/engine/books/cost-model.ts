/**
 * The one place that knows what a call costs. Plan and budget enforcement both ask it, so the
 * worst case `seedline plan` shows is exactly what a run reserves before each call.
 *
 * @example
 * ```ts
 * const model = CostModel.fromOpenApi(await (await fetch(`${baseUrl}/openapi.json`)).json());
 * // A people search of max_results 100, priced 2 credits per page of 25 by its manifest:
 * model.price({ path: '/v1/search/people', cost: { credits: 2, unit: 'page', pageSize: 25 }, sized: true, results: 100 }); // { worst: 8, expected: 8 }
 * ```
 */

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
  /** What it usually costs: every call succeeds (a plan sizes passes by what their partitions typically hold). */
  expected: number;
}

/**
 * One call to price: the cost its stream's manifest states, the path whose `x-credits` the
 * service may state too, and its size (`results` asked, for a call that pages internally).
 */
export interface PricedCall {
  path?: string | undefined;
  cost: OperationCost;
  /** Whether the call is sized by `results` (a search asks up to `max_results`). */
  sized: boolean;
  /** Results asked; when not a number, the default page of 25. */
  results?: number | undefined;
}

/** The default `max_results` of searches when a body leaves it out. */
const DEFAULT_RESULTS = 25;

/** Reads one `x-credits` text ("2 credits per page scraped (up to 25 results per page)") as an {@link OperationCost}. */
export function parseCreditText(text: string): OperationCost {
  const figures = [...text.matchAll(/(\d+)\s*credits?\b/gi)].map((m) => Number(m[1]));
  if (figures.length === 0) return { credits: 0, unit: 'free', pageSize: DEFAULT_RESULTS };
  const head = text.split(/[;.]/)[0] ?? text;
  const unit: CostUnit = /per\s+page/i.test(head)
    ? 'page'
    : /per\s+(job|result|item)s?\s+returned/i.test(head)
      ? 'result'
      : 'call';
  const pageSize = Number(/up to (\d+)/i.exec(head)?.[1] ?? DEFAULT_RESULTS);
  return { credits: Math.max(...figures), unit, pageSize };
}

/**
 * Prices calls: each at the cost its stream's manifest states, or the service's own `x-credits`
 * for its path when the service serves an OpenAPI document and prices it higher.
 */
export class CostModel {
  private constructor(
    /** The service's own costs by path (empty without its OpenAPI document). */
    private readonly service: ReadonlyMap<string, OperationCost>,
    /** Where costs come from: `openapi` (the manifests and the service's document) or `built-in` (the manifests). */
    readonly source: 'openapi' | 'built-in',
  ) {}

  /** The manifests' costs only. */
  static builtIn(): CostModel {
    return new CostModel(new Map(), 'built-in');
  }

  /**
   * The costs the service's OpenAPI document declares (`x-credits` of each POST operation), beside
   * the manifests'. Anything that is not such a document gives the manifests' alone. Each call is
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
    return service.size === 0 ? CostModel.builtIn() : new CostModel(service, 'openapi');
  }

  /** The cost the service states for `path` (e.g. `/v1/search/people`), if it serves one. */
  operation(path: string): OperationCost | undefined {
    return this.service.get(path);
  }

  /** Worst and expected credits of one call (a page of a feed, a whole search, a batch item). */
  price(call: PricedCall): Cost {
    const service = call.path === undefined ? undefined : this.service.get(call.path);
    const costs = [costWith(call.cost, call), ...(service ? [costWith(service, call)] : [])];
    return { worst: Math.max(...costs.map((c) => c.worst)), expected: Math.max(...costs.map((c) => c.expected)) };
  }
}

/** Worst and expected credits of one call priced by `cost`. */
function costWith(cost: OperationCost, call: PricedCall): Cost {
  const results = Number(call.results ?? DEFAULT_RESULTS) || DEFAULT_RESULTS;
  switch (cost.unit) {
    case 'free':
      return { worst: 0, expected: 0 };
    case 'call':
      return { worst: cost.credits, expected: cost.credits };
    case 'result':
      return { worst: cost.credits * results, expected: cost.credits * results };
    case 'page': {
      // A search pages internally up to max_results; a feed call is one page.
      const pages = call.sized ? Math.ceil(results / cost.pageSize) : 1;
      return { worst: cost.credits * pages, expected: cost.credits * pages };
    }
  }
}

import { SandboxError } from '../errors.js';
import { hash53, stableStringify } from '../fixtures/random.js';
import type { Reply, RequestContext } from '../http.js';
import { parseBody } from '../http.js';
import { OPERATIONS } from '../operations.js';
import type { Operation } from '../operations.js';
import type { Router } from '../router.js';
import { performScrape } from '../scrape-runner.js';

const insufficient = () => new SandboxError('insufficient_credits', 'the balance cannot cover this call');

/** One scrape endpoint: validate, scrape, bill on success (and on a billed 422), answer with `meta`. */
async function scrape(operation: Operation, context: RequestContext): Promise<Reply> {
  const { state, account, requestId } = context;
  const body = parseBody(operation.schema, context.body);
  const target = operation.target(body, { seed: state.options.seed, nowMs: state.clock.nowMs() });
  if (!state.billing.canAfford(account, 1)) throw insufficient();
  const attemptKey = `${account.id}|${operation.path}|${hash53(stableStringify(body))}`;
  let outcome;
  try {
    outcome = await performScrape(state, operation, body, target, 'request', attemptKey);
  } catch (error) {
    if (error instanceof SandboxError && error.type === 'unprocessable_target' && operation.unprocessableCredits > 0) {
      const credits = state.billing.canAfford(account, operation.unprocessableCredits)
        ? operation.unprocessableCredits
        : 0;
      state.billing.charge(account, credits, { operation: operation.name, target: target?.url ?? '', requestId });
      error.extra = state.billing.meta(account, credits);
    }
    throw error;
  }
  const { result, latencyMs } = outcome;
  if (!state.billing.canAfford(account, result.credits)) throw insufficient();
  state.billing.charge(account, result.credits, { operation: operation.name, target: result.target, requestId });
  const meta: Record<string, unknown> = {
    ...state.billing.meta(account, result.credits),
    reason: result.reason,
    latencyMs,
  };
  if (result.resolvedSearchUrl !== undefined) meta.resolved_search_url = result.resolvedSearchUrl;
  return { data: result.data, meta };
}

/** Registers every scrape endpoint of the service. */
export function registerScrapeRoutes(router: Router): void {
  for (const operation of OPERATIONS) router.add('POST', operation.path, (context) => scrape(operation, context));
}

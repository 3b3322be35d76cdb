import { CostModel } from '../engine/books/cost-model.js';

/** How long to wait for the service's OpenAPI document before using the built-in cost table. */
const OPENAPI_TIMEOUT_MS = 5_000;

/**
 * The cost model for a service: the `x-credits` of its `/openapi.json` when it serves one (free,
 * unauthenticated), otherwise the spec's table built into seedline. Never fails.
 */
export async function loadCostModel(baseUrl: string): Promise<CostModel> {
  try {
    const response = await fetch(`${baseUrl.replace(/\/+$/, '')}/openapi.json`, {
      signal: AbortSignal.timeout(OPENAPI_TIMEOUT_MS),
    });
    if (!response.ok) return CostModel.builtIn();
    return CostModel.fromOpenApi(await response.json());
  } catch {
    return CostModel.builtIn();
  }
}

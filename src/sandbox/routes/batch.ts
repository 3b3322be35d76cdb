import { decodeCursor, encodeCursor, idempotencyKey, intQuery } from '../http.js';
import { invalidRequest } from '../errors.js';
import type { Router } from '../router.js';

const free = (balance: number) => ({ creditsUsed: 0, creditsRemaining: balance, billed: false });

/** POST /v1/batch, GET /v1/batch/{id}, GET /v1/batch/{id}/results. */
export function registerBatchRoutes(router: Router): void {
  router.add('POST', '/v1/batch', (context) =>
    context.state.batches.submit(context.account, context.body, context.requestId, idempotencyKey(context)),
  );
  router.add('GET', '/v1/batch/:id', ({ state, account, params }) => ({
    data: state.batches.view(state.batches.get(account, params.id as string)),
    meta: free(account.balance),
  }));
  router.add('GET', '/v1/batch/:id/results', ({ state, account, params, query }) => {
    const job = state.batches.get(account, params.id as string);
    const status = query.get('status');
    if (status !== null && status !== 'succeeded' && status !== 'failed')
      throw invalidRequest('status must be succeeded or failed');
    const limit = intQuery(query, 'limit', 1, 500, 100);
    const page = state.batches.page(job, status, decodeCursor(query.get('cursor')), limit);
    return {
      data: page.entries,
      meta: { ...free(account.balance), nextCursor: page.next === null ? null : encodeCursor(page.next) },
    };
  });
}

import { notFound } from '../errors.js';
import type { Router } from '../router.js';

/** GET /v1/webhook-deliveries/{id}: another organization's ids are 404 like unknown ones. */
export function registerDeliveryRoutes(router: Router): void {
  router.add('GET', '/v1/webhook-deliveries/:id', ({ state, account, params }) => {
    const record = state.webhooks.get(account.id, params.id as string);
    if (!record) throw notFound(`webhook delivery ${params.id} does not exist`);
    return {
      data: state.webhooks.view(record),
      meta: { creditsUsed: 0, creditsRemaining: account.balance, billed: false },
    };
  });
}

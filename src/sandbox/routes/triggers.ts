import { invalidRequest } from '../errors.js';
import type { Router } from '../router.js';
import { pageOf } from './signals.js';

function instant(raw: string | null, name: string, fallback: number): number {
  if (raw === null || raw === '') return fallback;
  const ms = Date.parse(raw);
  if (Number.isNaN(ms)) throw invalidRequest(`${name} must be an ISO 8601 instant`);
  return ms;
}

/** GET /v1/triggers and GET /v1/usage/signals. */
export function registerTriggerRoutes(router: Router): void {
  router.add('GET', '/v1/triggers', (context) => {
    const { state, account, query } = context;
    const signalId = query.get('signal_id');
    const since = instant(query.get('since'), 'since', Number.NEGATIVE_INFINITY);
    const all = state.signals
      .triggersOf(account.id)
      .filter((t) => (signalId === null || t.signal_id === signalId) && Date.parse(t.checked_at) >= since)
      .map(({ accountId: _owner, ...trigger }) => trigger);
    const { page, nextCursor } = pageOf(context, all, 50, 100);
    return { data: page, meta: { creditsUsed: 0, creditsRemaining: account.balance, billed: false, nextCursor } };
  });

  router.add('GET', '/v1/usage/signals', (context) => {
    const { state, account, query } = context;
    const groupBy = query.get('group_by') ?? 'external_id';
    if (groupBy !== 'external_id') throw invalidRequest('group_by must be external_id');
    const now = state.clock.now();
    const from = instant(query.get('from'), 'from', Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    // `to` defaults to now, inclusive of checks made at this very virtual instant.
    const to = instant(query.get('to'), 'to', now.getTime() + 1);
    return {
      data: state.signals.usageRows(account.id, from, to),
      meta: {
        creditsRemaining: account.balance,
        group_by: groupBy,
        from: new Date(from).toISOString(),
        to: new Date(to).toISOString(),
      },
    };
  });
}

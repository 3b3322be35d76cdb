import { AccountPatchBody } from '../../../schemas/index.js';
import type { SandboxAccount } from '../accounts.js';
import { parseBody } from '../http.js';
import type { Router } from '../router.js';
import type { SandboxState } from '../state.js';

/** Price the sandbox reports per 1,000 credits. */
const PRICE_PER_1K_USD = 2.5;

/** Account resource of GET /v1/account. */
export function accountView(state: SandboxState, account: SandboxAccount): Record<string, unknown> {
  const signals = state.signals.summary(account.id);
  return {
    account_id: account.id,
    volume_band: account.live ? 'growth' : 'sandbox',
    credits_remaining: account.balance,
    credits_used_this_month: account.usedThisMonth,
    price_per_1k_credits_usd: PRICE_PER_1K_USD,
    rate_limit: { requests_per_minute: state.options.rpm, concurrent_batch_jobs: state.options.concurrentBatchJobs },
    signals,
    default_webhook_url: account.defaultWebhookUrl,
    fallback_webhook_url: account.fallbackWebhookUrl,
  };
}

/** GET and PATCH /v1/account. */
export function registerAccountRoutes(router: Router): void {
  router.add('GET', '/v1/account', ({ state, account }) => ({
    data: accountView(state, account),
    meta: { creditsUsed: 0, creditsRemaining: account.balance, billed: false },
  }));
  router.add('PATCH', '/v1/account', ({ state, account, body }) => {
    const patch = parseBody(AccountPatchBody, body);
    const firstDefault = account.defaultWebhookUrl === null && typeof patch.default_webhook_url === 'string';
    if (patch.default_webhook_url !== undefined) account.defaultWebhookUrl = patch.default_webhook_url;
    if (patch.fallback_webhook_url !== undefined) account.fallbackWebhookUrl = patch.fallback_webhook_url;
    const data = accountView(state, account);
    // The account secret is shown once, when a default webhook is first set.
    if (firstDefault) data.webhook_secret = account.webhookSecret;
    return {
      data,
      meta: { creditsUsed: 0, creditsRemaining: account.balance, billed: false, reason: 'account_updated' },
    };
  });
}

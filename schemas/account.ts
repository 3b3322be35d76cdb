import { z } from 'zod';
import { Id, Int } from './common.js';

/** Account resource of GET /v1/account. */
export const Account = z.looseObject({
  account_id: Id,
  volume_band: z.string().nullable().optional(),
  credits_remaining: Int,
  credits_used_this_month: Int,
  price_per_1k_credits_usd: z.number(),
  rate_limit: z.looseObject({ requests_per_minute: Int, concurrent_batch_jobs: Int }),
  signals: z.looseObject({ active: Int, paused: Int, estimated_monthly_credits: Int }),
  default_webhook_url: z.string().nullable().optional(),
  fallback_webhook_url: z.string().nullable().optional(),
  webhook_secret: z.string().optional(),
});
export type Account = z.infer<typeof Account>;

/** Token exchange: request body of POST /api/api-auth/authenticate. */
export const TokenExchangeBody = z.strictObject({ apiKey: z.string() });
/** Token exchange: success body. */
export const TokenExchangeResponse = z.looseObject({ accessToken: z.string() });
/** Token exchange: failure body (a plain string, not the envelope). */
export const TokenExchangeError = z.looseObject({ error: z.string() });

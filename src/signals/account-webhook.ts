import type { Account, AccountPatchBody } from '../../schemas/index.js';
import type { ApiClient } from '../client/index.js';
import type { AccountDefaultWebhook } from '../config/config-schema.js';

/** One account webhook setting: the account's value against the config's. */
export interface AccountWebhookSetting {
  /** The account field: `default_webhook_url` or `fallback_webhook_url`. */
  field: 'default_webhook_url' | 'fallback_webhook_url';
  /** The account's value: null when unset, undefined when GET /v1/account does not report it. */
  current: string | null | undefined;
  /** The value `webhooks.account_default` declares. */
  desired: string;
  /** Whether apply sends it (it differs, or the account does not report it). */
  changed: boolean;
}

/** The declared account webhooks against the account's (`webhooks.account_default`). */
export interface AccountWebhookPlan {
  /** The declared settings, each against the account's; empty when the config declares none. */
  settings: AccountWebhookSetting[];
  /** PATCH /v1/account body with only the differing fields; null when nothing differs, so apply sends nothing. */
  patch: AccountPatchBody | null;
  /** The account's default webhook once applied: null when none, undefined when unknown (not reported, not declared). */
  defaultAfter: string | null | undefined;
  /** The PATCH may set a first default webhook, whose answer carries the account's secret (shown once). */
  expectsSecret: boolean;
  /** The account's id, for the secrets file line. */
  accountId: string;
}

/** The account's webhook secret as the secrets file keeps it: a line without `id`, which `serve` tries on every delivery. */
export interface AccountSecret {
  /** The account's id. */
  account_id: string;
  /** The account-level secret (`whsec_…`); it signs `batch.completed` and `signal.paused`. */
  webhook_secret: string;
}

/** What {@link applyAccountWebhook} did; never the secret itself. */
export interface AccountWebhookResult {
  /** Whether PATCH /v1/account was sent. */
  updated: boolean;
  /** The account's secret: handed to `onSecret` (`kept`), returned with nowhere to go (`dropped`), or not returned (`none`). */
  secret: 'kept' | 'dropped' | 'none';
}

/** PATCH /v1/account failed: apply stops before any Signal is changed. */
export class AccountWebhookError extends Error {
  readonly code = 'SEEDLINE_ACCOUNT_WEBHOOK_FAILED';
}

/** The account fields a plan reads (GET /v1/account, free). */
export type AccountWebhooks = Pick<Account, 'account_id' | 'default_webhook_url' | 'fallback_webhook_url'>;

/**
 * Compares `webhooks.account_default` with the account. Pure: no call. A field the account does
 * not report counts as differing (sending the same value again changes nothing); a fallback the
 * config leaves out is left alone.
 */
export function planAccountWebhook(
  declared: AccountDefaultWebhook | undefined,
  account: AccountWebhooks,
): AccountWebhookPlan {
  const settings: AccountWebhookSetting[] = [];
  const compare = (field: AccountWebhookSetting['field'], desired: string | undefined) => {
    if (desired === undefined) return;
    const current = account[field];
    settings.push({ field, current, desired, changed: current !== desired });
  };
  compare('default_webhook_url', declared?.url);
  compare('fallback_webhook_url', declared?.fallback_url);
  const changed = settings.filter((s) => s.changed);
  const patch = changed.length === 0 ? null : Object.fromEntries(changed.map((s) => [s.field, s.desired]));
  const currentDefault = account.default_webhook_url;
  return {
    settings,
    patch,
    defaultAfter: declared?.url ?? currentDefault,
    expectsSecret: patch?.default_webhook_url !== undefined && (currentDefault ?? null) === null,
    accountId: account.account_id,
  };
}

/**
 * Why the declared Signals' events would reach no receiver: Signals without `notify` deliver to
 * the account's default webhook, and the account would have none (or does not say). Undefined when
 * they have somewhere to go.
 */
export function nowhereWarning(signalWebhookUrl: string | null, plan: AccountWebhookPlan): string | undefined {
  if (signalWebhookUrl !== null || typeof plan.defaultAfter === 'string') return undefined;
  const fix =
    'set webhooks.account_default.url (signals apply sets it on the account) or signals.notify.webhook_url. ' +
    'Triggers stay readable through GET /v1/triggers (the triggers stream)';
  return plan.defaultAfter === null
    ? `signals.notify is not set and the account has no default webhook: the events of these Signals would be delivered nowhere; ${fix}`
    : `signals.notify is not set and GET /v1/account does not report a default webhook: the events of these Signals may be delivered nowhere; ${fix}`;
}

/**
 * Sends the plan's PATCH /v1/account (free), if any. The account's secret in the answer goes to
 * `onSecret` at once, and nowhere else: it is never logged or returned.
 */
export async function applyAccountWebhook(
  client: Pick<ApiClient, 'updateAccount'>,
  plan: AccountWebhookPlan,
  onSecret?: (secret: AccountSecret) => Promise<void>,
): Promise<AccountWebhookResult> {
  if (plan.patch === null) return { updated: false, secret: 'none' };
  let data;
  try {
    ({ data } = await client.updateAccount(plan.patch));
  } catch (error) {
    throw new AccountWebhookError(
      `PATCH /v1/account (webhooks.account_default) failed: ${(error as Error).message}; no Signal was changed, run apply again`,
      { cause: error },
    );
  }
  const secret = data.webhook_secret;
  if (typeof secret !== 'string' || secret === '') return { updated: true, secret: 'none' };
  if (!onSecret) return { updated: true, secret: 'dropped' };
  await onSecret({ account_id: data.account_id ?? plan.accountId, webhook_secret: secret });
  return { updated: true, secret: 'kept' };
}

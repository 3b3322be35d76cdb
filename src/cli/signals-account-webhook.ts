import { nowhereWarning, type AccountWebhookPlan, type AccountWebhookResult } from '../signals/account-webhook.js';
import { formatTable } from './format-table.js';
import { UsageError } from './run-command.js';

/** An account value as the plan shows it. */
const shown = (value: string | null | undefined) => (value === null ? '(none)' : (value ?? '(not reported)'));

/**
 * The account-webhook part of `signals plan|apply`: the declared settings against the account's,
 * or, when none are declared and the Signals have no `notify`, where their events go; then the
 * warning when they would go nowhere. Empty when there is nothing to say.
 * @param signalWebhookUrl the declared Signals' `notify.webhook_url`; null when they have none
 */
export function describeAccountWebhook(plan: AccountWebhookPlan, signalWebhookUrl: string | null): string {
  const lines: string[] = [];
  if (plan.settings.length > 0) {
    const changes = plan.settings.filter((s) => s.changed).length;
    lines.push(
      `account webhooks (webhooks.account_default): ${changes === 0 ? 'unchanged' : `${changes} to update (PATCH /v1/account, free)`}`,
      formatTable(
        plan.settings.map((s) => ({
          setting: s.field,
          account: shown(s.current),
          declared: s.desired,
          action: s.changed ? 'update' : 'unchanged',
        })),
      ),
    );
  } else if (signalWebhookUrl === null) {
    lines.push(
      `Signals without notify deliver to the account's default webhook: ${shown(plan.defaultAfter)} (webhooks.account_default is not set, so apply leaves it alone)`,
    );
  }
  const warning = nowhereWarning(signalWebhookUrl, plan);
  if (warning !== undefined) lines.push(`warning: ${warning}`);
  return lines.join('\n');
}

/** The account-webhook part of the `--json` plan (see {@link describeAccountWebhook}). */
export function accountWebhookJson(plan: AccountWebhookPlan, signalWebhookUrl: string | null) {
  return {
    settings: plan.settings,
    patch: plan.patch,
    defaultAfterApply: plan.defaultAfter ?? null,
    warning: nowhereWarning(signalWebhookUrl, plan) ?? null,
  };
}

/** What apply did to the account's webhooks, and where the account's secret went (never the secret). */
export function describeAccountResult(result: AccountWebhookResult, secretsPath: string | undefined): string {
  if (!result.updated) return '';
  const lines = ['account webhooks: updated (PATCH /v1/account)'];
  if (result.secret === 'kept')
    lines.push(
      `the account's webhook secret (shown once by the service; it signs batch.completed and signal.paused) was appended to ${secretsPath} (mode 0600): ` +
        '`seedline serve` reads it there when webhooks.secrets_file names that file; or copy it into an environment variable listed in webhooks.secrets, e.g. "${SEEDLINE_ACCOUNT_WEBHOOK_SECRET}"',
    );
  if (result.secret === 'dropped')
    lines.push(
      "note: the service returned the account's webhook secret, which was not kept (--discard-secrets): `seedline serve` cannot verify batch.completed and signal.paused deliveries; " +
        'the service shows it only when a default webhook is first set',
    );
  return lines.join('\n');
}

/** What an apply would receive once, and whether it has a file to keep it in. */
export interface OneTimeSecrets {
  /** Signals to create (each answered with its own secret). */
  creates: number;
  /** The account PATCH may set a first default webhook (answered with the account's secret). */
  accountSecret: boolean;
  /** A secrets file is named, or `--discard-secrets` was given. */
  provided: boolean;
}

/** Refuses, before any call, an apply that would receive one-time secrets with nowhere to keep them. */
export function refuseLostSecrets({ creates, accountSecret, provided }: OneTimeSecrets): void {
  if (provided) return;
  if (creates > 0)
    throw new UsageError(
      "every new Signal is signed with its own webhook secret, which the service shows only once (also when deliveries go to the account's default webhook): " +
        'add --secrets-out FILE (or set webhooks.secrets_file) to keep them, or --discard-secrets to create them anyway (nothing was changed)',
    );
  if (accountSecret)
    throw new UsageError(
      "webhooks.account_default sets the account's first default webhook, and the service shows the account's webhook secret (it signs batch.completed and signal.paused) only in that answer: " +
        'add --secrets-out FILE (or set webhooks.secrets_file) to keep it, or --discard-secrets to set it anyway (nothing was changed)',
    );
}

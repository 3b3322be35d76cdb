import { resolve } from 'node:path';
import type { ApiClient } from '../client/index.js';
import type { LoadedConfig } from '../config/load-config.js';
import { quoteIdentifier } from '../destinations/identifiers.js';
import { type Destination } from '../destinations/destination.js';
import { applyAccountWebhook, planAccountWebhook, type AccountWebhookPlan } from '../signals/account-webhook.js';
import { resolveDesiredSignals } from '../signals/desired-signals.js';
import { ChunkJournal } from '../signals/chunk-journal.js';
import {
  applySignalPlan,
  listTaggedSignals,
  replayChunks,
  type ApplyResult,
  type SignalSecret,
} from '../signals/signal-apply.js';
import {
  diffSignals,
  estimateMonthlyCredits,
  oversizedAttributes,
  type DesiredSignals,
  type SignalPlan,
} from '../signals/signal-diff.js';
import { runId as newRunId } from '../util/run-id.js';
import { appendSecrets } from './append-secrets.js';
import { formatTable } from './format-table.js';
import { writeJson } from './json-output.js';
import { openSession } from './open-session.js';
import { UsageError } from './run-command.js';
import {
  accountWebhookJson,
  describeAccountResult,
  describeAccountWebhook,
  refuseLostSecrets,
} from './signals-account-webhook.js';

/** Options of `seedline signals plan|apply`. */
export interface SignalsOptions {
  /** Config file path. */
  config: string;
  /** Delete tagged Signals the config no longer wants. Default: false. */
  prune: boolean;
  /** File the created Signals' one-time webhook secrets are appended to (JSON lines, mode 0600). Default: `webhooks.secrets_file`. */
  secretsOut?: string;
  /** Create Signals although their one-time secrets are kept nowhere. Default: false. */
  discardSecrets?: boolean;
  /** Print the plan (and what apply did) as one JSON document; notes go to stderr. Default: false. */
  json: boolean;
}

const MAX_ROWS = 200;

/** `seedline signals plan`: what apply would create, update and prune, and the monthly credits; changes nothing. */
export function planSignals(opts: SignalsOptions): Promise<number> {
  return withPlan(opts, undefined, async ({ desired, plan, loaded, account }) => {
    const refusal = capRefusal(loaded, desired, plan, opts.prune);
    if (opts.json) {
      writeJson({
        plan: planJson(desired, plan, account, opts.prune),
        applyWouldRefuse: refusal ?? null,
        changed: false,
      });
      return 0;
    }
    const overCap = refusal === undefined ? '' : `\n\napply would refuse: ${refusal}`;
    const changes =
      plan.create.length + plan.update.length + (opts.prune ? plan.prune.length : 0) + (account.patch ? 1 : 0);
    const next =
      changes === 0
        ? 'Nothing to apply: the account already has these Signals.'
        : `Nothing was changed. Apply with: seedline signals apply --config ${opts.config}${opts.prune ? ' --prune' : ''}`;
    process.stdout.write(`${describeAll(desired, plan, account, opts.prune)}${overCap}\n\n${next}\n`);
    return 0;
  });
}

/** `seedline signals apply`: creates, updates and (with `--prune`) deletes tagged Signals to match the config. */
export function applySignals(opts: SignalsOptions): Promise<number> {
  return withJournalLock((held) =>
    withPlan(opts, recoverLostSecrets(opts, held), async ({ desired, plan, client, destination, loaded, account }) => {
      const secretsPath = secretsPathOf(opts, loaded);
      refuseLostSecrets({
        creates: plan.create.length,
        accountSecret: account.expectsSecret,
        provided: secretsPath !== undefined || (opts.discardSecrets ?? false),
      });
      if (!opts.json) process.stdout.write(`${describeAll(desired, plan, account, opts.prune)}\n\n`);
      checkMonthlyCap(loaded, desired, plan, opts.prune);
      // The account's secret comes once: a secrets file that cannot take it fails before the PATCH.
      if (account.expectsSecret && secretsPath !== undefined) await appendSecrets(secretsPath, []);
      const accountResult = await applyAccountWebhook(
        client,
        account,
        secretsPath === undefined ? undefined : (secret) => appendSecrets(secretsPath, [secret]),
      );
      const journal = secretsPath === undefined ? undefined : new ChunkJournal(journalPath(secretsPath));
      const result = await applySignalPlan(client, desired, plan, {
        prune: opts.prune,
        ...(secretsPath === undefined
          ? {}
          : { onSecrets: (secrets: SignalSecret[]) => appendSecrets(secretsPath, secrets), journal }),
      });
      await journal?.clearIfSettled();
      const accountLines = describeAccountResult(accountResult, secretsPath);
      if (!opts.json)
        process.stdout.write(
          `${accountLines ? `${accountLines}\n` : ''}${describeResult(result, plan, secretsPath)}\n`,
        );
      const runId =
        result.rejected.length > 0 ? await recordRejected(destination, desired.tag, result.rejected) : undefined;
      const where = `${destination.schema}._seedline_rejected (stream 'signals'${runId === undefined ? ', recorded by an earlier apply' : `, run_id '${runId}'`})`;
      if (opts.json)
        writeJson({
          plan: planJson(desired, plan, account, opts.prune),
          result: { ...result, accountWebhook: accountResult },
          secretsFile: result.secrets > 0 || accountResult.secret === 'kept' ? secretsPath : null,
          rejectedKeptIn: result.rejected.length > 0 ? where : null,
        });
      else if (result.rejected.length > 0) process.stdout.write(`\nthe rejected targets are kept in ${where}\n`);
      return result.failures.length > 0 || result.rejected.length > 0 ? 1 : 0;
    }),
  );
}

/** What plan and apply work on. */
interface PlanContext {
  desired: DesiredSignals;
  client: ApiClient;
  destination: Destination;
  loaded: LoadedConfig;
}

/** What the body of plan and apply gets: the context, the Signals' plan and the account webhooks' plan. */
interface PlannedContext extends PlanContext {
  plan: SignalPlan;
  account: AccountWebhookPlan;
}

async function withPlan(
  opts: SignalsOptions,
  beforePlan: ((context: PlanContext) => Promise<void>) | undefined,
  body: (context: PlannedContext) => Promise<number>,
): Promise<number> {
  const session = await openSession(opts.config);
  try {
    const desired = await resolveDesiredSignals(session.loaded, (sql, size) =>
      session.destination.readQueryChunks(sql, size),
    );
    checkAttributeSizes(desired);
    const context = {
      desired,
      client: await session.connect(),
      destination: session.destination,
      loaded: session.loaded,
    };
    await beforePlan?.(context);
    const plan = diffSignals(desired, await listTaggedSignals(context.client, desired.tag));
    // Connecting read GET /v1/account already; read it again only if that answer is missing.
    const current = context.client.account ?? (await context.client.getAccount()).data;
    const account = planAccountWebhook(session.loaded.config.webhooks?.account_default, current);
    return await body({ ...context, plan, account });
  } finally {
    await session.close();
  }
}

/** Rendered external_id or metadata of some targets exceed the service's limits. */
export class SignalAttributesTooLargeError extends Error {
  readonly code = 'SEEDLINE_SIGNAL_ATTRIBUTES_TOO_LARGE';
}

/** Refuses, before any call, targets whose rendered external_id or metadata the service would refuse. */
function checkAttributeSizes(desired: DesiredSignals): void {
  const problems = oversizedAttributes(desired);
  if (problems.length === 0) return;
  const shown = problems.slice(0, 20).map((p) => `  ${p.seed}: ${p.problem}`);
  throw new SignalAttributesTooLargeError(
    [
      `${problems.length} rendered values exceed the service's limits; shorten signals.external_id or signals.metadata (e.g. use {key} rather than {seed}), nothing was changed:`,
      ...shown,
      ...(problems.length > 20 ? [`  … and ${problems.length - 20} more`] : []),
    ].join('\n'),
  );
}

/** A plan whose tagged Signals would be estimated above `signals.max_monthly_credits`. */
export class SignalsOverBudgetError extends Error {
  readonly code = 'SEEDLINE_SIGNALS_OVER_BUDGET';
}

/** Estimated monthly credits of the tagged profile Signals once the plan is applied (the declared interval for every kept one). */
function monthlyCreditsAfter(desired: DesiredSignals, plan: SignalPlan, prune: boolean): number {
  const kept = plan.update.length + plan.unchanged.length + (prune ? 0 : plan.prune.length);
  return estimateMonthlyCredits(desired.settings.interval, plan.create.length + kept);
}

/** Estimated monthly credits of the tagged Signals as they are, from the service's own estimates. */
function monthlyCreditsNow(plan: SignalPlan): number {
  return [...plan.update, ...plan.unchanged, ...plan.prune].reduce(
    (sum, { signal }) => sum + (signal.status === 'active' ? (signal.estimated_monthly_credits ?? 0) : 0),
    0,
  );
}

/** Refuses, before any call, a plan whose tagged Signals would be estimated above `signals.max_monthly_credits`. */
function checkMonthlyCap(loaded: LoadedConfig, desired: DesiredSignals, plan: SignalPlan, prune: boolean): void {
  const cap = loaded.config.signals?.max_monthly_credits;
  const after = monthlyCreditsAfter(desired, plan, prune);
  if (cap === undefined || after <= cap) return;
  throw new SignalsOverBudgetError(
    `the tagged Signals would be estimated at ${after} credits a month after this apply, above signals.max_monthly_credits (${cap}): ` +
      'declare fewer targets, a longer schedule.interval, or raise the limit (nothing was changed)',
  );
}

/** Why apply would refuse for the monthly cap, as `plan` says it; undefined when it would not. */
function capRefusal(
  loaded: LoadedConfig,
  desired: DesiredSignals,
  plan: SignalPlan,
  prune: boolean,
): string | undefined {
  try {
    checkMonthlyCap(loaded, desired, plan, prune);
    return undefined;
  } catch (error) {
    if (!(error instanceof SignalsOverBudgetError)) throw error;
    return error.message.replace(' (nothing was changed)', '');
  }
}

/** The Signals' plan, then the account webhooks' part (and its warning). */
function describeAll(desired: DesiredSignals, plan: SignalPlan, account: AccountWebhookPlan, prune: boolean): string {
  const accountPart = describeAccountWebhook(account, desired.settings.webhookUrl);
  return `${describePlan(desired, plan, prune)}${accountPart ? `\n\n${accountPart}` : ''}`;
}

/** The diff table, the counts and the credits estimate. */
function describePlan(desired: DesiredSignals, plan: SignalPlan, prune: boolean): string {
  const { interval } = desired.settings;
  const rows = [
    ...plan.create.map((t) => ({ action: 'create', target: t.seed, signal: '', status: '', detail: '' })),
    ...plan.update.map((u) => ({
      action: 'update',
      target: u.key,
      signal: u.signal.id,
      status: u.signal.status,
      detail: u.changes.join(', '),
    })),
    ...plan.prune.map((p) => ({
      action: prune ? 'prune' : 'prune (kept)',
      target: p.key ?? p.signal.target?.type ?? '?',
      signal: p.signal.id,
      status: p.signal.status,
      detail: p.reason,
    })),
    ...plan.unreadable.map((s) => ({
      action: 'ignored',
      target: '?',
      signal: s.id,
      status: s.status,
      detail: 'listed without a target',
    })),
  ];
  const lines = [
    `Signals tagged "${desired.tag}": ${plan.create.length} to create, ${plan.update.length} to update, ${plan.prune.length} to prune${prune || plan.prune.length === 0 ? '' : ' (kept without --prune)'}, ${plan.unchanged.length} unchanged`,
  ];
  if (rows.length > 0)
    lines.push(
      '',
      formatTable(rows.slice(0, MAX_ROWS)),
      ...(rows.length > MAX_ROWS ? [`… and ${rows.length - MAX_ROWS} more`] : []),
    );
  lines.push(
    '',
    `estimated monthly credits of the new Signals: ${estimateMonthlyCredits(interval, plan.create.length)} (${plan.create.length} profiles × ${estimateMonthlyCredits(interval, 1)} checks at ${interval})`,
    `estimated monthly credits of the tagged profile Signals: ${monthlyCreditsNow(plan)} now (active ones, as the service estimates them), ${monthlyCreditsAfter(desired, plan, prune)} afterwards`,
  );
  return lines.join('\n');
}

/** The plan as `--json` prints it: the rows of the text table, grouped by action, the monthly estimates and the account webhooks. */
function planJson(desired: DesiredSignals, plan: SignalPlan, account: AccountWebhookPlan, prune: boolean) {
  return {
    tag: desired.tag,
    create: plan.create.map((t) => ({ target: t.seed, key: t.key })),
    update: plan.update.map((u) => ({
      signal: u.signal.id,
      target: u.key,
      status: u.signal.status,
      changes: u.changes,
    })),
    prune: plan.prune.map((p) => ({
      signal: p.signal.id,
      target: p.key ?? null,
      status: p.signal.status,
      reason: p.reason,
      deletedByApply: prune,
    })),
    unchanged: plan.unchanged.length,
    ignored: plan.unreadable.map((s) => ({ signal: s.id, status: s.status, reason: 'listed without a target' })),
    monthlyCredits: {
      newSignals: estimateMonthlyCredits(desired.settings.interval, plan.create.length),
      now: monthlyCreditsNow(plan),
      afterApply: monthlyCreditsAfter(desired, plan, prune),
    },
    accountWebhook: accountWebhookJson(account, desired.settings.webhookUrl),
  };
}

/** What apply did; never a secret. */
function describeResult(result: ApplyResult, plan: SignalPlan, secretsPath: string | undefined): string {
  const lines = [
    `applied: ${result.created.length} created, ${result.updated.length} updated, ${result.deleted.length} deleted, ${plan.unchanged.length} unchanged, ${result.rejected.length} rejected, ${result.failures.length} failed`,
  ];
  if (result.keptUnwanted > 0)
    lines.push(
      `${result.keptUnwanted} tagged Signals are no longer declared and were kept: run apply with --prune to delete them`,
    );
  const problems = [
    ...result.rejected.map((r) => ({ problem: 'rejected', target: r.seed, reason: r.reason })),
    ...result.failures.map((f) => ({ problem: `${f.action} failed`, target: f.subject, reason: f.message })),
  ];
  if (problems.length > 0) lines.push('', formatTable(problems));
  if (result.secrets > 0)
    lines.push(
      '',
      `${result.secrets} one-time webhook secrets appended to ${secretsPath} (mode 0600); point webhooks.secrets_file at that file and \`seedline serve\` verifies deliveries with them`,
    );
  if (result.droppedSecrets > 0) {
    lines.push(
      '',
      `note: the service returned ${result.droppedSecrets} one-time webhook secrets that were not kept; pass --secrets-out FILE next time to keep them`,
    );
  }
  return lines.join('\n');
}

/**
 * Keeps the targets the service refused, with its reason, in `_seedline_rejected` (stream and
 * table `signals`, the record `{ tag, site_url }`), where they stay queryable after the output is
 * gone. A rejection already kept (same record and reason) is not added again, so applying the
 * same config again does not pile up copies. Returns the run id of the new rows, if any.
 */
async function recordRejected(
  destination: Destination,
  tag: string,
  rejected: ApplyResult['rejected'],
): Promise<string | undefined> {
  const table = `${quoteIdentifier(destination.schema, 'schema')}.${quoteIdentifier('_seedline_rejected', 'table')}`;
  const kept = await destination.query<{ record: string; reason: string }>(
    `select record, reason from ${table} where stream = $1`,
    ['signals'],
  );
  const known = new Set(kept.map((row) => `${row.record}\n${row.reason}`));
  const runId = newRunId('signals');
  const rows = rejected
    .map((r) => ({
      runId,
      stream: 'signals',
      table: 'signals',
      record: JSON.stringify({ tag, site_url: r.seed }),
      reason: r.reason,
    }))
    .filter(
      (row, i, all) =>
        !known.has(`${row.record}\n${row.reason}`) &&
        all.findIndex((o) => o.record === row.record && o.reason === row.reason) === i,
    );
  if (rows.length === 0) return undefined;
  const unit = await destination.beginUnit(runId);
  try {
    await unit.reject(rows);
    await unit.commit();
  } catch (error) {
    await unit.rollback().catch(() => undefined);
    throw error;
  }
  return runId;
}

/** The chunk journal kept beside a secrets file. */
function journalPath(secretsPath: string): string {
  return `${secretsPath}.journal`;
}

/** Where created Signals' secrets go: `--secrets-out`, else `webhooks.secrets_file` (where `serve` reads them), else nowhere. */
function secretsPathOf(opts: SignalsOptions, loaded: LoadedConfig): string | undefined {
  if (opts.discardSecrets && opts.secretsOut !== undefined)
    throw new UsageError('--discard-secrets and --secrets-out contradict each other: give one of them');
  if (opts.discardSecrets) return undefined;
  if (opts.secretsOut !== undefined) return resolve(opts.secretsOut);
  const file = loaded.config.webhooks?.secrets_file;
  return file === undefined ? undefined : resolve(loaded.baseDir, file);
}

/** The journal lock an apply holds from before its replay until it ends. */
interface HeldLock {
  release?: () => Promise<void>;
}

async function withJournalLock(body: (held: HeldLock) => Promise<number>): Promise<number> {
  const held: HeldLock = {};
  try {
    return await body(held);
  } finally {
    await held.release?.();
  }
}

/**
 * Before planning, settles the chunks an earlier apply sent but was killed before keeping their
 * answer (journaled beside the secrets file): asks for them again where that is safe
 * (`replayChunks`), else names the Signals whose secrets are lost.
 */
function recoverLostSecrets(opts: SignalsOptions, held: HeldLock): (context: PlanContext) => Promise<void> {
  return async ({ client, desired, loaded }) => {
    const secretsPath = secretsPathOf(opts, loaded);
    if (secretsPath === undefined) return;
    const journal = new ChunkJournal(journalPath(secretsPath));
    held.release = await journal.lock();
    const scope = {
      tag: desired.tag,
      namePrefix: desired.namePrefix,
      wanted: new Set(desired.targets.map((t) => t.key)),
    };
    const { recovered, lostSecrets } = await replayChunks(client, journal, scope, (secrets) =>
      appendSecrets(secretsPath, secrets),
    );
    const note = (text: string) => (opts.json ? process.stderr : process.stdout).write(text);
    if (recovered > 0)
      note(`recovered ${recovered} webhook secrets of Signals created by an interrupted apply into ${secretsPath}\n\n`);
    if (lostSecrets.length > 0) {
      note(
        `warning: an interrupted apply created ${lostSecrets.length} Signals whose one-time webhook secrets can no longer be recovered ` +
          `(the 24 h Idempotency-Key window passed, or asking again could create undeclared targets): ${lostSecrets.join(', ')}. ` +
          'Their deliveries fail verification: delete them and apply again to recreate them with new secrets\n\n',
      );
    }
    await journal.clearIfSettled();
  };
}

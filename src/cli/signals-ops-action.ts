import type { ApiClient } from '../client/index.js';
import type { Signal } from '../../schemas/signal.js';
import { listTaggedSignals } from '../signals/signal-apply.js';
import { formatTable } from './format-table.js';
import {
  closingLine,
  DELIVERY_EXIT,
  followDelivery,
  outcomeOf,
  parseWait,
  stateLine,
  type FollowResult,
} from './follow-delivery.js';
import { writeJson } from './json-output.js';
import { openServiceSession } from './open-session.js';
import { UsageError } from './run-command.js';

/** A billed check was sent but its answer never came: it may have run and been billed. */
export class CheckOutcomeUnknownError extends Error {
  readonly code = 'SEEDLINE_CHECK_OUTCOME_UNKNOWN';
}

/** Options shared by the day-to-day Signal commands. */
export interface OpsOptions {
  /** Config file path (for `api:`; the destination is not opened). */
  config: string;
  /** Act on every Signal carrying this tag instead of one id. Default: none. */
  tag?: string;
  /** `resume --tag`: also resume Signals the service paused (insufficient_credits, webhook_failing, …). Default: false. */
  all?: boolean;
  /** Print the service's answer as JSON instead of text. Default: false. */
  json?: boolean;
  /** `list`: only Signals of this status. Default: every status. */
  status?: string;
  /** `list`: at most this many Signals. Default: 100. */
  limit?: string;
  /** `test-webhook`, `delivery`: seconds to follow the delivery until it is final; 0 does not follow. Default: 60 (`delivery`: 0). */
  wait?: string;
}

/** The most Signals `signals list` prints at once. */
const MAX_LISTED = 10_000;

/** Lists the account's Signals (all, or by `--tag` and `--status`), page by page up to `--limit`. Returns the exit code. */
export function listSignals(opts: OpsOptions): Promise<number> {
  const limit = listLimit(opts.limit);
  const status = opts.status;
  if (status !== undefined && status !== 'active' && status !== 'paused')
    throw new UsageError(`--status: expected active or paused, got "${status}"`);
  return withClient(opts, async (client) => {
    const signals: Signal[] = [];
    let cursor: string | undefined;
    let more = false;
    do {
      const page = await client.listSignals({
        limit: Math.min(100, limit - signals.length),
        ...(opts.tag ? { tag: opts.tag } : {}),
        ...(status ? { status } : {}),
        ...(cursor ? { cursor } : {}),
      });
      signals.push(...page.data.slice(0, limit - signals.length));
      cursor = page.meta.nextCursor ?? undefined;
      more = cursor !== undefined && signals.length >= limit;
    } while (cursor !== undefined && signals.length < limit);
    const rows = signals.map((signal) => ({
      id: signal.id,
      name: signal.name,
      target: targetOf(signal),
      status: signal.paused_reason ? `${signal.status} (${signal.paused_reason})` : signal.status,
      next_check: signal.next_check_at ?? '',
      tags: (signal.tags ?? []).join(', '),
    }));
    const tail = more ? `\n(more Signals: --limit N lists more, up to ${MAX_LISTED})` : '';
    return { json: signals, text: rows.length === 0 ? '(no Signals)' : `${formatTable(rows)}${tail}` };
  });
}

function listLimit(value: string | undefined): number {
  if (value === undefined) return 100;
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LISTED)
    throw new UsageError(`--limit: expected a number of Signals from 1 to ${MAX_LISTED}, got "${value}"`);
  return limit;
}

/** What a Signal watches, as one cell: the profile or the company whose jobs it follows. */
function targetOf(signal: Signal): string {
  const target = signal.target as { type?: string; site_url?: string; company_url?: string } | undefined;
  if (!target) return '';
  if (target.site_url) return target.site_url;
  if (target.company_url) return `${target.company_url} (jobs)`;
  return target.type ?? '';
}

/** Pauses one Signal, or every Signal carrying `--tag`. Returns the exit code. */
export function pauseSignals(id: string | undefined, opts: OpsOptions): Promise<number> {
  return withClient(opts, async (client) => {
    if (idOrTag(id, opts, 'pause') === 'tag') {
      const { data } = await client.pauseSignalsByTag(opts.tag!);
      return { json: data, text: `paused ${data.paused} Signals tagged "${opts.tag}"` };
    }
    const { data } = await client.pauseSignal(id!);
    return {
      json: data,
      text: `paused ${data.id} (${data.status}${data.paused_reason ? `, reason ${data.paused_reason}` : ''})`,
    };
  });
}

/** Resumes one paused Signal, or the paused Signals carrying `--tag` (see `resumeTagged`). Returns the exit code. */
export function resumeSignals(id: string | undefined, opts: OpsOptions): Promise<number> {
  return withClient(opts, async (client) => {
    if (idOrTag(id, opts, 'resume') === 'id') {
      const { data } = await client.resumeSignal(id!);
      return {
        json: data,
        text: `resumed ${data.id} (${data.status}); next check at ${data.next_check_at ?? 'unknown'}`,
      };
    }
    return resumeTagged(client, opts.tag!, opts.all ?? false);
  });
}

/** Runs one real (billed) check of a Signal now and prints its outcome. Returns the exit code. */
export function checkSignalNow(id: string, opts: OpsOptions): Promise<number> {
  return withClient(opts, async (client) => {
    const { data } = await checkOnce(client, id);
    const row = {
      signal: data.signal_id,
      check: data.check_number,
      status: data.is_baseline ? `${data.status} (baseline)` : data.status,
      credits: data.credits_used,
      trigger: data.trigger_id ?? '',
      changed: Object.keys(data.diff).join(', '),
    };
    const failure = data.error_type
      ? `\ncheck failed (not billed): ${data.error_type}${data.error_message ? `: ${data.error_message}` : ''}`
      : '';
    return { json: data, text: `${formatTable([row])}${failure}` };
  });
}

/**
 * Sends a signed signal.test delivery to the Signal's webhook, then follows it (free reads) until
 * it is delivered or failed, or `--wait` seconds have passed. Returns the exit code
 * ({@link DELIVERY_EXIT}: 0 delivered or not followed, 1 failed, 3 not final yet).
 */
export function testSignalWebhook(id: string, opts: OpsOptions): Promise<number> {
  const wait = parseWait(opts.wait);
  return withClient(opts, async (client) => {
    const { data } = await client.testSignalWebhook(id);
    const sent = {
      id: data.delivery_id,
      event: data.event,
      url: data.url,
      status: data.status,
      attempts: data.attempts,
    };
    const later = `seedline signals delivery ${sent.id} --config ${opts.config}`;
    const progress = progressTo(opts);
    progress(`${formatTable([{ delivery: sent.id, event: sent.event, url: sent.url }])}\n`);
    if (wait === 0)
      return {
        json: { outcome: 'not_followed', delivery: data },
        text: `${stateLine(sent)}\nnot followed (--wait 0): see how it went with ${later} (free)`,
      };
    progress(`following it for up to ${wait} s (GET /v1/webhook-deliveries/${sent.id}, free):`);
    const result = await followDelivery(client, sent, wait, progress);
    const note =
      result.outcome === 'delivered'
        ? '\n`seedline serve` records signal.test deliveries apart from real Triggers'
        : '';
    return {
      json: { outcome: result.outcome, delivery: result.delivery },
      text: `${closingLine(result, wait, later)}${note}`,
      code: DELIVERY_EXIT[result.outcome],
    };
  });
}

/**
 * Shows a webhook delivery (GET /v1/webhook-deliveries/{id}, free); with `--wait`, follows it until
 * it is final. Returns the exit code ({@link DELIVERY_EXIT}: 0 delivered, 1 failed, 3 not final yet).
 */
export function showDelivery(id: string, opts: OpsOptions): Promise<number> {
  const wait = opts.wait === undefined ? 0 : parseWait(opts.wait);
  return withClient(opts, async (client) => {
    const { data } = await client.getWebhookDelivery(id);
    const progress = progressTo(opts);
    progress(`${formatTable([{ delivery: data.id, event: data.event, url: data.url, created: data.created_at }])}\n`);
    let result: FollowResult;
    if (wait > 0 && outcomeOf(data) === 'pending') result = await followDelivery(client, data, wait, progress);
    else {
      progress(stateLine(data));
      result = { outcome: outcomeOf(data), delivery: data };
    }
    return {
      json: { outcome: result.outcome, delivery: result.delivery },
      text: closingLine(result, wait, `seedline signals delivery ${id} --config ${opts.config}`),
      code: DELIVERY_EXIT[result.outcome],
    };
  });
}

/** Where a command's lines go as they happen: stdout, or stderr under `--json` (stdout holds the one document). */
function progressTo(opts: OpsOptions): (line: string) => void {
  const stream = opts.json ? process.stderr : process.stdout;
  return (line) => void stream.write(`${line}\n`);
}

/** What a command prints as text and with `--json` (the service's answer, as it came), and its exit code (default 0). */
interface Outcome {
  text: string;
  json: unknown;
  code?: number;
}

async function withClient(opts: OpsOptions, body: (client: ApiClient) => Promise<Outcome>): Promise<number> {
  const session = await openServiceSession(opts.config);
  try {
    const outcome = await body(session.client);
    if (opts.json) writeJson(outcome.json, { keys: 'as-is' });
    else process.stdout.write(`${outcome.text}\n`);
    return outcome.code ?? 0;
  } finally {
    await session.close();
  }
}

/**
 * One check-now, sent once: a check lost to a 5xx or a dropped connection may have run and been
 * billed, so it is reported as unknown rather than sent again.
 */
async function checkOnce(client: ApiClient, id: string): ReturnType<ApiClient['checkSignalNow']> {
  try {
    return await client.checkSignalNow(id);
  } catch (error) {
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) throw error;
    throw new CheckOutcomeUnknownError(
      `check-now of ${id}: outcome unknown (${(error as Error).message}); the check may have run and been billed (1 credit). ` +
        `Look at GET /v1/usage/signals (credits per Signal) or the Signal's Triggers (GET /v1/triggers) before running it again`,
      { cause: error },
    );
  }
}

/** Exactly one of an id and `--tag`. */
function idOrTag(id: string | undefined, opts: OpsOptions, verb: string): 'id' | 'tag' {
  if ((id === undefined) === (opts.tag === undefined)) {
    throw new UsageError(
      `signals ${verb}: give a Signal id or --tag TAG (one of them), e.g. seedline signals ${verb} --config seedline.yaml --tag watch`,
    );
  }
  return id === undefined ? 'tag' : 'id';
}

/**
 * Resumes the tag's Signals paused by hand (`paused_reason` user), or with `all` every paused one,
 * one by one; a failure is reported and the rest go on. Signals the service paused are named, not
 * resumed: resuming them before their cause (credits, a failing webhook) is fixed pauses them again.
 */
async function resumeTagged(client: ApiClient, tag: string, all: boolean): Promise<Outcome> {
  const paused = await listTaggedSignals(client, tag, 'paused');
  const chosen = all ? paused : paused.filter((s) => (s.paused_reason ?? 'user') === 'user');
  const failures: { signal: string; error: string }[] = [];
  for (const signal of chosen) {
    await client
      .resumeSignal(signal.id)
      .catch((error: Error) => failures.push({ signal: signal.id, error: error.message }));
  }
  const lines = [`resumed ${chosen.length - failures.length} of ${chosen.length} paused Signals tagged "${tag}"`];
  const left = paused.filter((s) => !chosen.includes(s));
  if (left.length > 0) {
    lines.push(
      '',
      `kept paused (paused by the service; fix the cause, then resume them by id or with --all):`,
      formatTable(left.map((s) => ({ signal: s.id, reason: s.paused_reason ?? '' }))),
    );
  }
  if (failures.length > 0) lines.push('', formatTable(failures));
  const json = {
    tag,
    resumed: chosen.filter((s) => !failures.some((f) => f.signal === s.id)).map((s) => s.id),
    kept_paused: left.map((s) => ({ signal: s.id, reason: s.paused_reason ?? null })),
    failures,
  };
  return { text: lines.join('\n'), json, code: failures.length > 0 ? 1 : 0 };
}

import type { Signal, SignalBulkBody } from '../../schemas/index.js';
import type { ApiClient } from '../client/index.js';
import { crashPoint } from '../util/crash-point.js';
import type { ChunkJournal } from './chunk-journal.js';
import { seedKey } from '../util/seed-keys.js';
import { sha256, stableJson } from '../util/stable-json.js';
import {
  desiredTags,
  profileSiteOf,
  targetAttributes,
  type DesiredSignals,
  type DesiredTarget,
  type SignalPlan,
} from './signal-diff.js';

/** The client calls Signals-as-config needs (structural, so tests can pass a fake). */
export type SignalsClient = Pick<ApiClient, 'listSignals' | 'bulkCreateSignals' | 'updateSignal' | 'deleteSignal'>;

/** Most targets the service takes in one bulk create. */
export const BULK_LIMIT = 1000;
const PAGE_LIMIT = 100;
const WRITE_CONCURRENCY = 8;

/** A created Signal's one-time webhook secret, for the file named by `--secrets-out`. */
export interface SignalSecret {
  /** Signal id. */
  id: string;
  /** The target as the service canonicalised it. */
  site_url: string;
  /** The secret (`whsec_…`): returned once, never again. */
  webhook_secret: string;
}

/** Options of {@link applySignalPlan}. */
export interface ApplyOptions {
  /** Delete tagged Signals the config no longer wants. Default: false (they are only reported). */
  prune?: boolean;
  /** Receives the secrets of each created chunk as soon as it is answered. Default: none (secrets are dropped). */
  onSecrets?: (secrets: SignalSecret[]) => Promise<void>;
  /** Size of a bulk-create chunk. Default and maximum: {@link BULK_LIMIT}. */
  chunkSize?: number;
  /** Write-ahead log of chunks, so an answer lost to a crash can be asked for again ({@link replayChunks}). Default: none. */
  journal?: ChunkJournal;
}

/** What apply did; holds no secret. */
export interface ApplyResult {
  /** Created Signals, per target. */
  created: { key: string; seed: string; id: string }[];
  /** Targets the service refused (`invalid_url`, `duplicate_target`, …). */
  rejected: { seed: string; reason: string }[];
  /** PATCHed Signals and what changed. */
  updated: { id: string; key: string; changes: string[] }[];
  /** Deleted Signals (with `prune`). */
  deleted: { id: string; key: string | undefined }[];
  /** Signals to prune that were kept because `prune` was off. */
  keptUnwanted: number;
  /** Calls that failed, with the service's message. */
  failures: { action: 'create' | 'update' | 'delete'; subject: string; message: string }[];
  /** Secrets handed to `onSecrets`. */
  secrets: number;
  /** Secrets received with nowhere to go (no `onSecrets`). */
  droppedSecrets: number;
}

/** Every Signal of the account carrying `tag` (only those in `status` when given), all pages. Free. */
export async function listTaggedSignals(
  client: SignalsClient,
  tag: string,
  status?: 'active' | 'paused',
): Promise<Signal[]> {
  const signals: Signal[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listSignals({
      tag,
      limit: PAGE_LIMIT,
      ...(status === undefined ? {} : { status }),
      ...(cursor === undefined ? {} : { cursor }),
    });
    signals.push(...page.data);
    cursor = page.meta.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return signals;
}

/** The bulk-create template of the declared Signals. */
export function bulkTemplate(desired: DesiredSignals): SignalBulkBody['template'] {
  const { settings } = desired;
  return {
    name_prefix: desired.namePrefix,
    tags: desiredTags(desired),
    schedule: { interval: settings.interval, timezone: settings.timezone },
    criteria: { mode: settings.mode, fields: [...settings.fields] },
    ...(settings.webhookUrl === null ? {} : { notify: { webhook_url: settings.webhookUrl } }),
  };
}

/**
 * Idempotency-Key of one bulk chunk, derived from the tag, the template and the chunk's sorted targets,
 * so a retried or re-run apply of the same chunk is answered with the original result instead of
 * creating duplicates. `salt` separates a deliberate re-creation from an earlier, since-deleted one.
 */
export function bulkIdempotencyKey(
  desired: DesiredSignals,
  targets: readonly DesiredTarget[],
  salt: readonly string[] = [],
): string {
  const sorted = [...targets]
    .sort((a, b) => compare(a.key, b.key) || compare(a.seed, b.seed))
    .map((t) => [t.key, t.seed]);
  return `seedline-signals-${sha256(stableJson({ tag: desired.tag, template: bulkTemplate(desired), targets: sorted, salt: [...salt].sort() })).slice(0, 48)}`;
}

/**
 * Carries out a plan: bulk-creates missing targets in chunks with deterministic Idempotency-Keys,
 * PATCHes differing Signals, and deletes unwanted ones when `prune` is set. A failed call is recorded
 * and the rest continues.
 */
export async function applySignalPlan(
  client: SignalsClient,
  desired: DesiredSignals,
  plan: SignalPlan,
  options: ApplyOptions = {},
): Promise<ApplyResult> {
  const result: ApplyResult = {
    created: [],
    rejected: [],
    updated: [],
    deleted: [],
    keptUnwanted: 0,
    failures: [],
    secrets: 0,
    droppedSecrets: 0,
  };
  await createTargets(client, desired, plan.create, options, result);
  // A bulk template has no external_id or metadata: each created Signal gets its own by PATCH (free).
  // A crash before it leaves a difference the next plan shows and applies.
  await forEachLimited(result.created, async ({ key, seed, id }) => {
    const attributes = targetAttributes(desired, { key, seed });
    if (Object.keys(attributes).length === 0) return;
    try {
      await client.updateSignal(id, attributes);
    } catch (error) {
      result.failures.push({ action: 'update', subject: id, message: (error as Error).message });
    }
  });
  await forEachLimited(plan.update, async ({ signal, key, patch, changes }) => {
    try {
      await client.updateSignal(signal.id, patch);
      result.updated.push({ id: signal.id, key, changes });
    } catch (error) {
      result.failures.push({ action: 'update', subject: signal.id, message: (error as Error).message });
    }
  });
  if (!options.prune) {
    result.keptUnwanted = plan.prune.length;
    return result;
  }
  await forEachLimited(plan.prune, async ({ signal, key }) => {
    try {
      await client.deleteSignal(signal.id);
      result.deleted.push({ id: signal.id, key });
    } catch (error) {
      result.failures.push({ action: 'delete', subject: signal.id, message: (error as Error).message });
    }
  });
  return result;
}

async function createTargets(
  client: SignalsClient,
  desired: DesiredSignals,
  targets: readonly DesiredTarget[],
  options: ApplyOptions,
  result: ApplyResult,
): Promise<void> {
  if (targets.length === 0) return;
  const size = Math.min(options.chunkSize ?? BULK_LIMIT, BULK_LIMIT);
  const sorted = [...targets].sort((a, b) => compare(a.key, b.key));
  const submitted: { chunk: DesiredTarget[]; created: ApplyResult['created'] }[] = [];
  for (let start = 0; start < sorted.length; start += size) {
    const chunk = sorted.slice(start, start + size);
    submitted.push({ chunk, created: await createChunk(client, desired, chunk, [], options, result) });
    crashPoint('signals-after-chunk');
  }
  // A key is kept 24 h: a chunk created, deleted and declared again within that window is answered
  // with the original (deleted) Signals. Those ids are not live, so the chunk is sent once more
  // under a key salted with them.
  const live = new Set((await listTaggedSignals(client, desired.tag)).map((s) => s.id));
  for (const { chunk, created } of submitted) {
    const stale = created.filter((c) => !live.has(c.id));
    if (stale.length === 0) {
      result.created.push(...created);
      continue;
    }
    result.created.push(...created.filter((c) => live.has(c.id)));
    const again = chunk.filter((t) => stale.some((s) => s.key === t.key));
    result.created.push(
      ...(await createChunk(
        client,
        desired,
        again,
        stale.map((s) => s.id),
        options,
        result,
      )),
    );
  }
}

async function createChunk(
  client: SignalsClient,
  desired: DesiredSignals,
  chunk: DesiredTarget[],
  salt: string[],
  options: ApplyOptions,
  result: ApplyResult,
): Promise<ApplyResult['created']> {
  let data;
  const body = {
    template: bulkTemplate(desired),
    targets: chunk.map((t) => ({ type: 'profile' as const, site_url: t.seed })),
  };
  const idempotencyKey = bulkIdempotencyKey(desired, chunk, salt);
  await options.journal?.sending({ idempotencyKey, body });
  try {
    ({ data } = await client.bulkCreateSignals(body, { idempotencyKey }));
  } catch (error) {
    const message = (error as Error).message;
    result.failures.push(...chunk.map((t) => ({ action: 'create' as const, subject: t.seed, message })));
    // A refusal (4xx) created nothing; anything else may have, so it stays to be asked for again.
    if (isRefusal(error)) await options.journal?.done(idempotencyKey);
    return [];
  }
  crashPoint('signals-after-answer');
  const bySeed = new Map(chunk.map((t) => [t.seed, t]));
  const byKey = new Map(chunk.map((t) => [t.key, t]));
  const answered = new Set<string>();
  for (const { site_url, reason } of data.rejected) {
    const target = bySeed.get(site_url) ?? byKey.get(seedKey('profile', site_url));
    result.rejected.push({ seed: target?.seed ?? site_url, reason });
    if (target) answered.add(target.key);
  }
  const created: ApplyResult['created'] = [];
  for (const signal of data.signals) {
    const site = profileSiteOf(signal, desired.namePrefix);
    const target = site === undefined ? undefined : byKey.get(seedKey('profile', site));
    if (target) {
      created.push({ key: target.key, seed: target.seed, id: signal.id });
      answered.add(target.key);
    }
  }
  const secrets = secretsOf(data.signals, desired.namePrefix);
  for (const target of chunk) {
    if (!answered.has(target.key))
      result.failures.push({
        action: 'create',
        subject: target.seed,
        message: 'the bulk answer names neither a Signal nor a rejection for this target',
      });
  }
  if (secrets.length > 0) {
    if (options.onSecrets) {
      await options.onSecrets(secrets);
      result.secrets += secrets.length;
    } else {
      result.droppedSecrets += secrets.length;
    }
  }
  await options.journal?.done(idempotencyKey);
  return created;
}

/** How long the service keeps an Idempotency-Key: a chunk sent longer ago cannot be asked for again. */
export const KEY_WINDOW_MS = 24 * 60 * 60 * 1000;

/** What {@link replayChunks} did with the journaled chunks. */
export interface ReplayResult {
  /** Secrets recovered and handed to `onSecrets`. */
  recovered: number;
  /** Chunks dropped because none of their targets has a Signal: they were never created (or since deleted). */
  dropped: number;
  /** Ids of Signals an interrupted chunk created whose secrets can no longer be asked for (key expired, or a resend could create undeclared targets). */
  lostSecrets: string[];
}

/**
 * Settles the journaled chunks whose answer a crash lost. A chunk is sent once more under its own
 * key, so the service answers with the original result (secrets included) and creates nothing,
 * only when that is safe: at least one of its targets has a tagged Signal (else the POST never
 * happened or its Signals were deleted, and a resend would be a first send), every target without
 * one is still declared (`wanted` keys), and its key is younger than {@link KEY_WINDOW_MS}. Otherwise
 * the chunk is dropped, naming the existing Signals whose secrets are lost.
 */
export async function replayChunks(
  client: SignalsClient,
  journal: ChunkJournal,
  scope: { tag: string; namePrefix: string; wanted: ReadonlySet<string> },
  onSecrets: (secrets: SignalSecret[]) => Promise<void>,
  now: Date = new Date(),
): Promise<ReplayResult> {
  const result: ReplayResult = { recovered: 0, dropped: 0, lostSecrets: [] };
  const pending = await journal.pending();
  if (pending.length === 0) return result;
  const live = new Map<string, string>();
  for (const signal of await listTaggedSignals(client, scope.tag)) {
    const site = profileSiteOf(signal, scope.namePrefix);
    if (site !== undefined) live.set(seedKey('profile', site), signal.id);
  }
  for (const { idempotencyKey, body, sentAt } of pending) {
    const keys = body.targets.map((t) => seedKey('profile', t.site_url));
    const existing = keys.flatMap((key) => live.get(key) ?? []);
    const expired = sentAt === null || now.getTime() - sentAt.getTime() >= KEY_WINDOW_MS;
    const wouldCreateUnwanted = keys.some((key) => !live.has(key) && !scope.wanted.has(key));
    if (existing.length === 0) result.dropped += 1;
    else if (expired || wouldCreateUnwanted) result.lostSecrets.push(...existing);
    else result.recovered += await replayChunk(client, idempotencyKey, body, onSecrets);
    await journal.done(idempotencyKey);
  }
  return result;
}

async function replayChunk(
  client: SignalsClient,
  idempotencyKey: string,
  body: SignalBulkBody,
  onSecrets: (secrets: SignalSecret[]) => Promise<void>,
): Promise<number> {
  try {
    const { data } = await client.bulkCreateSignals(body, { idempotencyKey });
    const secrets = secretsOf(data.signals, body.template.name_prefix ?? '');
    if (secrets.length > 0) await onSecrets(secrets);
    return secrets.length;
  } catch (error) {
    if (!isRefusal(error)) throw error;
    return 0;
  }
}

function secretsOf(signals: readonly Signal[], namePrefix: string): SignalSecret[] {
  return signals.flatMap((signal) => {
    const secret = signal.notify?.webhook_secret;
    return secret === undefined
      ? []
      : [{ id: signal.id, site_url: profileSiteOf(signal, namePrefix) ?? '', webhook_secret: secret }];
  });
}

/** The service refused the call (4xx): nothing was created. */
function isRefusal(error: unknown): boolean {
  const status = (error as { status?: unknown }).status;
  return typeof status === 'number' && status >= 400 && status < 500;
}

async function forEachLimited<T>(items: readonly T[], body: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await body(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(WRITE_CONCURRENCY, items.length) }, worker));
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

import type { Signal, SignalPatchBody } from '../../schemas/index.js';
import { seedKey } from '../util/seed-keys.js';
import { stableJson } from '../util/stable-json.js';

/** One profile the config wants watched. */
export interface DesiredTarget {
  /** Canonical key (`seedKey('profile', seed)`): what desired and existing Signals are matched on. */
  key: string;
  /** The seed as the user wrote it; sent as the target's `site_url`. */
  seed: string;
}

/** The settings every managed Signal should have. */
export interface SignalSettings {
  /** Check interval, e.g. `7d`. */
  interval: string;
  /** IANA time zone; `UTC` when the config names none (the service's default). */
  timezone: string;
  /** Criteria mode (`field_change`). */
  mode: string;
  /** Watched fields; compared as a set. */
  fields: readonly string[];
  /** Webhook of the Signal; null uses the account default. */
  webhookUrl: string | null;
}

/** What the config declares: the tag, the settings and the profiles. */
export interface DesiredSignals {
  /** Management handle: only Signals carrying it are compared. */
  tag: string;
  /** Prefix of created Signals' names. */
  namePrefix: string;
  /** Settings every managed Signal should have. */
  settings: SignalSettings;
  /** Profiles to watch, one per key (first seed wins), in config order. */
  targets: readonly DesiredTarget[];
  /** Tags besides `tag` every managed Signal carries (`signals.tags`). Default: none. */
  extraTags?: readonly string[];
  /**
   * Per-target templates (`{key}`: the profile's key, `{seed}`: the seed as written) of the
   * Signal's `external_id` and `metadata`. Default: undeclared, so the Signal's own value is left alone.
   */
  templates?: { externalId?: string; metadata?: Record<string, unknown> };
}

/** `external_id` and `metadata` of one target, as a PATCH sets them. */
export type TargetAttributes = Pick<SignalPatchBody, 'external_id' | 'metadata'>;

/** A tagged Signal whose settings differ from the config: PATCHed by apply (free). */
export interface SignalUpdate {
  /** The Signal as listed. */
  signal: Signal;
  /** Its target key. */
  key: string;
  /** Only the changed fields. */
  patch: SignalPatchBody;
  /** Names of the changed settings, for the table (`interval 7d→1d`). */
  changes: string[];
}

/** A tagged Signal the config no longer wants: deleted by `apply --prune`, reported otherwise. */
export interface SignalPrune {
  /** The Signal as listed. */
  signal: Signal;
  /** Its target key; undefined for a target that is not a profile. */
  key: string | undefined;
  /** Why it is not wanted. */
  reason: 'not in targets' | 'duplicate of a kept Signal' | 'not a profile target';
}

/** The difference between the config and the tagged Signals of the account. */
export interface SignalPlan {
  /** Targets without a tagged Signal. */
  create: DesiredTarget[];
  /** Tagged Signals whose schedule, criteria or notify differ. */
  update: SignalUpdate[];
  /** Tagged Signals no longer wanted. */
  prune: SignalPrune[];
  /** Tagged Signals already as declared. */
  unchanged: { signal: Signal; key: string }[];
  /** Tagged Signals listed without a target: never pruned, since what they watch is unknown. */
  unreadable: Signal[];
}

/** Settings as a Signal carries them, defaults filled the way the service fills them. */
export function settingsOf(signal: Signal): SignalSettings {
  return {
    interval: signal.schedule.interval,
    timezone: signal.schedule.timezone ?? 'UTC',
    mode: signal.criteria?.mode ?? '',
    fields: signal.criteria?.fields ?? [],
    webhookUrl: signal.notify?.webhook_url ?? null,
  };
}

/** Compares desired and existing settings; the patch carries only what differs. */
export function settingsPatch(
  desired: SignalSettings,
  existing: SignalSettings,
): { patch: SignalPatchBody; changes: string[] } {
  const patch: SignalPatchBody = {};
  const changes: string[] = [];
  if (desired.interval !== existing.interval || desired.timezone !== existing.timezone) {
    patch.schedule = { interval: desired.interval, timezone: desired.timezone };
    if (desired.interval !== existing.interval) changes.push(`interval ${existing.interval}→${desired.interval}`);
    if (desired.timezone !== existing.timezone) changes.push(`timezone ${existing.timezone}→${desired.timezone}`);
  }
  if (desired.mode !== existing.mode || !sameSet(desired.fields, existing.fields)) {
    patch.criteria = { mode: desired.mode, fields: [...desired.fields] };
    changes.push(`fields ${existing.fields.join('+') || '-'}→${desired.fields.join('+')}`);
  }
  if (desired.webhookUrl !== existing.webhookUrl) {
    patch.notify = { webhook_url: desired.webhookUrl };
    changes.push(desired.webhookUrl === null ? 'webhook → account default' : 'webhook changed');
  }
  return { patch, changes };
}

/** The tags every managed Signal carries: the management tag first. */
export function desiredTags(desired: DesiredSignals): string[] {
  return [...new Set([desired.tag, ...(desired.extraTags ?? [])])];
}

/** The target's `external_id` and `metadata`, rendered from the templates; keys absent when not declared. */
export function targetAttributes(desired: DesiredSignals, target: DesiredTarget): TargetAttributes {
  const { externalId, metadata } = desired.templates ?? {};
  const render = (value: unknown): unknown => {
    if (typeof value === 'string') return value.replaceAll('{key}', target.key).replaceAll('{seed}', target.seed);
    if (Array.isArray(value)) return value.map(render);
    if (value !== null && typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, render(v)]));
    return value;
  };
  return {
    ...(externalId === undefined ? {} : { external_id: render(externalId) as string }),
    ...(metadata === undefined ? {} : { metadata: render(metadata) as Record<string, unknown> }),
  };
}

/** Service limits of a Signal's attribution fields. */
const MAX_EXTERNAL_ID_CHARS = 256;
const MAX_METADATA_BYTES = 8192;

/**
 * Targets whose rendered `external_id` or `metadata` exceed the service's limits (256 characters,
 * 8192 bytes of JSON): the templates are checked in the config, but `{seed}` can make a value longer.
 */
export function oversizedAttributes(desired: DesiredSignals): { seed: string; problem: string }[] {
  if (desired.templates === undefined) return [];
  return desired.targets.flatMap((target) => {
    const { external_id: externalId, metadata } = targetAttributes(desired, target);
    const problems: string[] = [];
    if (typeof externalId === 'string' && externalId.length > MAX_EXTERNAL_ID_CHARS)
      problems.push(`external_id is ${externalId.length} characters (at most ${MAX_EXTERNAL_ID_CHARS})`);
    const bytes = metadata === undefined ? 0 : Buffer.byteLength(JSON.stringify(metadata));
    if (bytes > MAX_METADATA_BYTES) problems.push(`metadata is ${bytes} bytes of JSON (at most ${MAX_METADATA_BYTES})`);
    return problems.map((problem) => ({ seed: target.seed, problem }));
  });
}

/**
 * The profile a Signal watches: its target's `site_url`. The spec does not show the Signal's fields, only that a
 * bulk-created one is named `{name_prefix} — {target url}`: without a target, the URL is read from such a name.
 */
export function profileSiteOf(signal: Signal, namePrefix: string): string | undefined {
  const target = signal.target;
  if (target !== undefined)
    return target.type === 'profile' && typeof target.site_url === 'string' ? target.site_url : undefined;
  const prefix = `${namePrefix} — `;
  const site = signal.name.startsWith(prefix) ? signal.name.slice(prefix.length).trim() : '';
  return site === '' ? undefined : site;
}

/** Name, tags, external_id and metadata of one Signal against the config; the patch carries only what differs. */
export function attributesPatch(
  desired: DesiredSignals,
  target: DesiredTarget,
  signal: Signal,
): { patch: SignalPatchBody; changes: string[] } {
  const patch: SignalPatchBody = {};
  const changes: string[] = [];
  const prefix = `${desired.namePrefix} — `;
  const site = (signal.target as { site_url?: string } | undefined)?.site_url ?? target.seed;
  if (!signal.name.startsWith(prefix)) {
    patch.name = `${prefix}${site}`;
    changes.push(`name prefix → ${desired.namePrefix}`);
  }
  // Tags added by hand stay: only the config's missing tags are added (the PATCH replaces the list).
  const current = signal.tags ?? [];
  const missing = desiredTags(desired).filter((tag) => !current.includes(tag));
  if (missing.length > 0) {
    patch.tags = [...new Set([...current, ...missing])];
    changes.push(`tags +${missing.join('+')}`);
  }
  const wanted = targetAttributes(desired, target);
  if (wanted.external_id !== undefined && wanted.external_id !== (signal.external_id ?? null)) {
    patch.external_id = wanted.external_id;
    changes.push(`external_id ${signal.external_id ?? '-'}→${wanted.external_id}`);
  }
  if (wanted.metadata !== undefined && stableJson(wanted.metadata) !== stableJson(signal.metadata ?? null)) {
    patch.metadata = wanted.metadata;
    changes.push('metadata changed');
  }
  return { patch, changes };
}

/**
 * Diffs the declared Signals against the account's Signals carrying the tag. Pure: no call.
 * Targets match on `seedKey('profile', …)`, the engine's key, so `jane-doe` and the service's
 * canonical `https://…/in/jane-doe` are one target.
 */
export function diffSignals(desired: DesiredSignals, existing: readonly Signal[]): SignalPlan {
  const plan: SignalPlan = { create: [], update: [], prune: [], unchanged: [], unreadable: [] };
  const wanted = new Map(desired.targets.map((t) => [t.key, t]));
  const kept = new Set<string>();
  for (const signal of existing) {
    if (!signal.tags?.includes(desired.tag)) continue;
    const target = signal.target;
    if (target !== undefined && (target.type !== 'profile' || typeof target.site_url !== 'string')) {
      plan.prune.push({ signal, key: undefined, reason: 'not a profile target' });
      continue;
    }
    const site = profileSiteOf(signal, desired.namePrefix);
    if (site === undefined) {
      plan.unreadable.push(signal);
      continue;
    }
    const key = seedKey('profile', site);
    if (!wanted.has(key)) {
      plan.prune.push({ signal, key, reason: 'not in targets' });
      continue;
    }
    if (kept.has(key)) {
      plan.prune.push({ signal, key, reason: 'duplicate of a kept Signal' });
      continue;
    }
    kept.add(key);
    const settings = settingsPatch(desired.settings, settingsOf(signal));
    const attributes = attributesPatch(desired, wanted.get(key)!, signal);
    const patch = { ...settings.patch, ...attributes.patch };
    const changes = [...settings.changes, ...attributes.changes];
    if (changes.length > 0) plan.update.push({ signal, key, patch, changes });
    else plan.unchanged.push({ signal, key });
  }
  plan.create = desired.targets.filter((t) => !kept.has(t.key));
  return plan;
}

/**
 * Estimated monthly credits of `count` profile Signals at `interval`: ceil(30 / interval days) checks,
 * 1 credit each (docs/service-assumptions.md#signals, `estimated_monthly_credits`).
 */
export function estimateMonthlyCredits(interval: string, count: number): number {
  return Math.ceil(30 / Number.parseInt(interval, 10)) * count;
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const left = new Set(a);
  const right = new Set(b);
  return left.size === right.size && [...left].every((v) => right.has(v));
}

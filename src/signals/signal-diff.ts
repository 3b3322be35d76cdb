import type { Signal, SignalPatchBody } from '../../schemas/index.js';
import { seedKey } from '../engine/seed-keys.js';

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
}

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
export function settingsPatch(desired: SignalSettings, existing: SignalSettings): { patch: SignalPatchBody; changes: string[] } {
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

/**
 * Diffs the declared Signals against the account's Signals carrying the tag. Pure: no call.
 * Targets match on `seedKey('profile', …)`, the engine's key, so `jane-doe` and the service's
 * canonical `https://…/in/jane-doe` are one target.
 */
export function diffSignals(desired: DesiredSignals, existing: readonly Signal[]): SignalPlan {
  const plan: SignalPlan = { create: [], update: [], prune: [], unchanged: [], unreadable: [] };
  const wanted = new Set(desired.targets.map((t) => t.key));
  const kept = new Set<string>();
  for (const signal of existing) {
    if (!signal.tags?.includes(desired.tag)) continue;
    const target = signal.target;
    if (target === undefined) {
      plan.unreadable.push(signal);
      continue;
    }
    if (target.type !== 'profile' || typeof target.site_url !== 'string') {
      plan.prune.push({ signal, key: undefined, reason: 'not a profile target' });
      continue;
    }
    const key = seedKey('profile', target.site_url);
    if (!wanted.has(key)) {
      plan.prune.push({ signal, key, reason: 'not in targets' });
      continue;
    }
    if (kept.has(key)) {
      plan.prune.push({ signal, key, reason: 'duplicate of a kept Signal' });
      continue;
    }
    kept.add(key);
    const { patch, changes } = settingsPatch(desired.settings, settingsOf(signal));
    if (changes.length > 0) plan.update.push({ signal, key, patch, changes });
    else plan.unchanged.push({ signal, key });
  }
  plan.create = desired.targets.filter((t) => !kept.has(t.key));
  return plan;
}

/**
 * Estimated monthly credits of `count` profile Signals at `interval`: ceil(30 / interval days) checks,
 * 1 credit each (CONTRACT.md, `estimated_monthly_credits`).
 */
export function estimateMonthlyCredits(interval: string, count: number): number {
  return Math.ceil(30 / Number.parseInt(interval, 10)) * count;
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const left = new Set(a);
  const right = new Set(b);
  return left.size === right.size && [...left].every((v) => right.has(v));
}

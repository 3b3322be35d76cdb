import { describe, expect, it } from 'vitest';
import type { Signal } from '../../schemas/index.js';
import { parseConfig } from '../../src/config/load-config.js';
import { bulkIdempotencyKey, bulkTemplate } from '../../src/signals/signal-apply.js';
import {
  desiredTags,
  diffSignals,
  oversizedAttributes,
  estimateMonthlyCredits,
  targetAttributes,
  type DesiredSignals,
} from '../../src/signals/signal-diff.js';

const desired = (over: Partial<DesiredSignals> = {}): DesiredSignals => ({
  tag: 'team-a',
  namePrefix: 'seedline',
  settings: {
    interval: '7d',
    timezone: 'UTC',
    mode: 'field_change',
    fields: ['headline', 'position'],
    webhookUrl: null,
  },
  targets: [
    { key: 'jane-doe', seed: 'jane-doe' },
    { key: 'john-roe', seed: 'https://www.network.example/in/John-Roe/' },
  ],
  ...over,
});

let ids = 0;
const signal = (siteUrl: string | undefined, over: Partial<Signal> = {}): Signal => ({
  id: `sig_${++ids}`,
  name: `seedline — ${siteUrl}`,
  tags: ['team-a'],
  status: 'active',
  ...(siteUrl === undefined ? {} : { target: { type: 'profile', site_url: siteUrl } }),
  schedule: { interval: '7d', timezone: 'UTC' },
  criteria: { mode: 'field_change', fields: ['position', 'headline'] },
  notify: { webhook_url: null },
  estimated_monthly_credits: 5,
  ...over,
});

describe('signals diff', () => {
  it('given no tagged Signals, when diffed, then every target is to create', () => {
    const plan = diffSignals(desired(), []);
    expect(plan.create.map((t) => t.key)).toEqual(['jane-doe', 'john-roe']);
    expect([plan.update, plan.prune, plan.unchanged]).toEqual([[], [], []]);
  });

  it('given Signals on the canonical URLs with the same settings, when diffed, then they are unchanged (fields compared as a set)', () => {
    const existing = [
      signal('https://www.network.example/in/jane-doe'),
      signal('https://www.network.example/in/john-roe'),
    ];
    const plan = diffSignals(desired(), existing);
    expect(plan.create).toEqual([]);
    expect(plan.unchanged.map((u) => u.key)).toEqual(['jane-doe', 'john-roe']);
  });

  it('given a different interval, fields and webhook, when diffed, then the patch carries only those', () => {
    const existing = [
      signal('https://www.network.example/in/jane-doe', { schedule: { interval: '1d', timezone: 'UTC' } }),
      signal('https://www.network.example/in/john-roe', {
        criteria: { mode: 'field_change', fields: ['headline'] },
        notify: { webhook_url: 'https://hooks.example/x' },
      }),
    ];
    const plan = diffSignals(desired(), existing);
    expect(plan.update.map((u) => u.patch)).toEqual([
      { schedule: { interval: '7d', timezone: 'UTC' } },
      { criteria: { mode: 'field_change', fields: ['headline', 'position'] }, notify: { webhook_url: null } },
    ]);
    expect(plan.update[0]!.changes).toEqual(['interval 1d→7d']);
  });

  it('given a tagged Signal for an undeclared target, a duplicate and a company target, when diffed, then they are to prune with the reason', () => {
    const existing = [
      signal('https://www.network.example/in/jane-doe'),
      signal('jane-doe'),
      signal('https://www.network.example/in/gone'),
      signal(undefined, { target: { type: 'company_jobs', company_url: 'https://www.network.example/company/acme' } }),
    ];
    const plan = diffSignals(desired(), existing);
    expect(plan.prune.map((p) => [p.key, p.reason])).toEqual([
      ['jane-doe', 'duplicate of a kept Signal'],
      ['gone', 'not in targets'],
      [undefined, 'not a profile target'],
    ]);
    expect(plan.create.map((t) => t.key)).toEqual(['john-roe']);
  });

  it('given Signals without the tag, or without a target and a name of another form, when diffed, then they are neither matched nor pruned', () => {
    const plan = diffSignals(desired(), [
      signal('jane-doe', { tags: ['other'] }),
      signal(undefined, { name: 'watching Jane by hand' }),
    ]);
    expect(plan.create).toHaveLength(2);
    expect(plan.prune).toEqual([]);
    expect(plan.unreadable).toHaveLength(1);
  });

  it('given Signals the service lists without a target, when diffed, then they are matched by their bulk-created name "{name_prefix} — {url}"', () => {
    const listed = [
      signal(undefined, { name: 'seedline — https://www.network.example/in/jane-doe' }),
      signal(undefined, { name: 'seedline — https://www.network.example/in/someone-else' }),
    ];
    const plan = diffSignals(desired(), listed);
    expect(plan.unchanged).toEqual([{ signal: listed[0], key: 'jane-doe' }]);
    expect(plan.create.map((t) => t.key)).toEqual(['john-roe']);
    expect(plan.prune).toEqual([expect.objectContaining({ signal: listed[1], reason: 'not in targets' })]);
    expect(plan.unreadable).toEqual([]);
  });
});

describe('signals diff: name, tags, external_id and metadata', () => {
  const templated = desired({
    namePrefix: 'crm',
    extraTags: ['sales'],
    templates: { externalId: 'lead-{key}', metadata: { source: 'seedline', seed: '{seed}', rank: 1 } },
  });

  it('given templates, when rendered for a target, then {key} and {seed} are filled at every depth and other values kept', () => {
    expect(targetAttributes(templated, { key: 'john-roe', seed: 'https://www.network.example/in/John-Roe/' })).toEqual({
      external_id: 'lead-john-roe',
      metadata: { source: 'seedline', seed: 'https://www.network.example/in/John-Roe/', rank: 1 },
    });
    expect(targetAttributes(desired(), { key: 'a', seed: 'a' })).toEqual({});
  });

  it('given a Signal with another prefix, missing tag, old external_id and equal metadata, when diffed, then the patch carries only the name, tags and external_id', () => {
    const site = 'https://www.network.example/in/jane-doe';
    const existing = signal(site, {
      tags: ['team-a'],
      external_id: 'old',
      metadata: { rank: 1, seed: 'jane-doe', source: 'seedline' },
    });
    const plan = diffSignals({ ...templated, targets: [{ key: 'jane-doe', seed: 'jane-doe' }] }, [existing]);
    expect(plan.update.map((u) => u.patch)).toEqual([
      { name: `crm — ${site}`, tags: ['team-a', 'sales'], external_id: 'lead-jane-doe' },
    ]);
    expect(plan.update[0]!.changes).toEqual(['name prefix → crm', 'tags +sales', 'external_id old→lead-jane-doe']);
  });

  it('given a Signal carrying every declared tag and one added by hand, when diffed, then it is unchanged: the hand-added tag stays', () => {
    const site = 'https://www.network.example/in/jane-doe';
    const existing = signal(site, {
      name: `crm — ${site}`,
      tags: ['vip', ...desiredTags(templated)],
      external_id: 'lead-jane-doe',
      metadata: { rank: 1, seed: 'jane-doe', source: 'seedline' },
    });
    const plan = diffSignals({ ...templated, targets: [{ key: 'jane-doe', seed: 'jane-doe' }] }, [existing]);
    expect(plan.update).toEqual([]);
    expect(plan.unchanged).toHaveLength(1);
  });

  it('given undeclared templates, when a Signal carries its own external_id and metadata, then they are left alone', () => {
    const plan = diffSignals(desired({ targets: [{ key: 'jane-doe', seed: 'jane-doe' }] }), [
      signal('https://www.network.example/in/jane-doe', { external_id: 'mine', metadata: { a: 1 } }),
    ]);
    expect(plan.update).toEqual([]);
    expect(plan.unchanged).toHaveLength(1);
  });
});

describe('signals: rendered attributes against the service limits', () => {
  it('given templates within limits whose {seed} makes some targets too long, when checked, then those targets are named per field', () => {
    const long = `https://www.network.example/in/${'x'.repeat(250)}`;
    const d = desired({
      templates: { externalId: 'crm-{seed}', metadata: { seed: '{seed}', note: 'n'.repeat(8000) } },
      targets: [
        { key: 'short', seed: 'short' },
        { key: 'long', seed: long },
      ],
    });
    expect(oversizedAttributes(d)).toEqual([
      { seed: long, problem: `external_id is ${4 + long.length} characters (at most 256)` },
      { seed: long, problem: expect.stringMatching(/^metadata is \d+ bytes of JSON \(at most 8192\)$/) },
    ]);
    expect(oversizedAttributes(desired())).toEqual([]);
  });
});

describe('signals credits and idempotency keys', () => {
  it('given an interval and a count, when estimated, then it is ceil(30 / days) per profile', () => {
    expect(estimateMonthlyCredits('1d', 2)).toBe(60);
    expect(estimateMonthlyCredits('7d', 3)).toBe(15);
    expect(estimateMonthlyCredits('14d', 1)).toBe(3);
    expect(estimateMonthlyCredits('30d', 0)).toBe(0);
  });

  it('given the same chunk in another order, when keyed, then the key is the same; another template or salt changes it', () => {
    const d = desired();
    const key = bulkIdempotencyKey(d, d.targets);
    expect(bulkIdempotencyKey(d, [...d.targets].reverse())).toBe(key);
    expect(bulkIdempotencyKey(desired({ settings: { ...d.settings, interval: '1d' } }), d.targets)).not.toBe(key);
    expect(bulkIdempotencyKey(d, d.targets, ['sig_1'])).not.toBe(key);
    expect(bulkTemplate(d)).toEqual({
      name_prefix: 'seedline',
      tags: ['team-a'],
      schedule: { interval: '7d', timezone: 'UTC' },
      criteria: { mode: 'field_change', fields: ['headline', 'position'] },
    });
  });
});

describe('signals config', () => {
  const base =
    'api: { base_url: sandbox, api_key: svc_test_x }\ndestination: { type: duckdb, path: w.duckdb }\nstreams: {}\n';

  it('given a signals block, when parsed, then defaults apply and every target form is accepted', () => {
    const config = parseConfig(
      `${base}signals: { tag: t, schedule: { interval: 7d }, criteria: { mode: field_change, fields: [headline] }, targets: { from_seeds: profiles } }\n`,
      'x.yaml',
    );
    expect(config.signals?.name_prefix).toBe('seedline');
    expect(config.signals?.targets).toEqual({ from_seeds: 'profiles' });
    const file = parseConfig(
      `${base}signals: { tag: t, schedule: { interval: 1d }, criteria: { mode: field_change, fields: [skills] }, targets: { file: p.csv } }\n`,
      'x.yaml',
    );
    expect(file.signals?.targets).toEqual({ file: 'p.csv', column: 'url' });
  });

  it('given a placeholder other than {key} and {seed} in external_id, when parsed, then it is named', () => {
    const text = `${base}signals: { tag: t, schedule: { interval: 7d }, criteria: { mode: field_change, fields: [headline] }, targets: [a], external_id: 'x-{name}' }\n`;
    expect(() => parseConfig(text, 'x.yaml')).toThrow(/signals\.external_id[\s\S]*only \{key\} and \{seed\}/);
  });

  it('given an unknown field, interval or time zone, when parsed, then each is named', () => {
    const text = `${base}signals: { tag: t, schedule: { interval: 2d, timezone: Mars/Base }, criteria: { mode: field_change, fields: [salary] }, targets: [a] }\n`;
    expect(() => parseConfig(text, 'x.yaml')).toThrow(
      /signals\.schedule\.interval[\s\S]*signals\.schedule\.timezone[\s\S]*signals\.criteria\.fields\[0\]/,
    );
  });
});

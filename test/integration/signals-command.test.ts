import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Signal } from '../../schemas/index.js';
import { ApiClient } from '../../src/client/index.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { listTaggedSignals } from '../../src/signals/signal-apply.js';
import { tempWorkspace, writeConfig } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';

const KEY = 'svc_test_signals_e2e';
const TAG = 'e2e-watch';
const siteOf = (signal: Signal) => (signal.target as { site_url?: string } | undefined)?.site_url;
const TARGETS = [
  'https://www.network.example/in/ada-lovelace/',
  'grace-hopper',
  'https://network.example/in/Alan-Turing?trk=x',
];

describe('seedline signals plan|apply', () => {
  let sandbox: Sandbox;
  let client: ApiClient;
  let dir: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ rpm: 100_000 });
    client = new ApiClient({ baseUrl: sandbox.url, apiKey: KEY });
    dir = await tempWorkspace();
  });
  afterAll(async () => {
    await client?.close();
    await sandbox?.close();
  });

  const config = (signals: Record<string, unknown>) =>
    writeConfig(dir, {
      api: { base_url: sandbox.url, api_key: KEY },
      destination: { type: 'duckdb', path: join(dir, 'w.duckdb') },
      streams: {},
      signals: {
        tag: TAG,
        schedule: { interval: '7d' },
        criteria: { mode: 'field_change', fields: ['headline', 'position'] },
        targets: TARGETS,
        ...signals,
      },
    });
  const signals = (...args: string[]) => runCliInProcess(['signals', ...args]);
  /** Apply where the secrets do not matter to the test. */
  const apply = (...args: string[]) => signals('apply', ...args, '--discard-secrets');
  const tagged = () => listTaggedSignals(client, TAG);

  it('given three declared targets, when planned, then it shows three to create with their monthly credits and writes nothing', async () => {
    const path = await config({});
    const ledgerBefore = sandbox.ledger.entries.length;
    const result = await signals('plan', '--config', path);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/3 to create, 0 to update, 0 to prune/);
    expect(result.stdout).toMatch(/estimated monthly credits of the new Signals: 15 \(3 profiles × 5 checks at 7d\)/);
    expect(result.stdout).toContain('Nothing was changed. Apply with: seedline signals apply');
    expect(await tagged()).toEqual([]);
    expect(sandbox.ledger.entries.length).toBe(ledgerBefore);
  });

  it('given the plan, when applied with --secrets-out, then three tagged Signals exist and their secrets are only in the 0600 file', async () => {
    const path = await config({});
    const secrets = join(dir, 'secrets.jsonl');
    const result = await signals('apply', '--config', path, '--secrets-out', secrets);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/applied: 3 created, 0 updated, 0 deleted/);
    expect(`${result.stdout}${result.stderr}`).not.toMatch(/whsec_/);
    const live = await tagged();
    expect(live.map(siteOf).sort()).toEqual(
      ['ada-lovelace', 'alan-turing', 'grace-hopper'].map((slug) => `https://www.network.example/in/${slug}`),
    );
    expect(live.every((s) => s.schedule.interval === '7d')).toBe(true);
    const lines = (await readFile(secrets, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; webhook_secret: string });
    expect(lines.map((l) => l.id).sort()).toEqual(live.map((s) => s.id).sort());
    expect(lines.every((l) => l.webhook_secret.startsWith('whsec_'))).toBe(true);
    expect((await stat(secrets)).mode & 0o777).toBe(0o600);

    // signals list: each with its id, target, status, next check and tags; no secret.
    const listed = await signals('list', '--config', path, '--tag', TAG);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/id\s+name\s+target\s+status\s+next_check\s+tags/);
    for (const signal of live) expect(listed.stdout).toContain(signal.id);
    expect(listed.stdout).toContain('https://www.network.example/in/ada-lovelace');
    expect(listed.stdout).not.toMatch(/whsec_/);
    const one = await signals('list', '--config', path, '--tag', TAG, '--limit', '1', '--json');
    expect(JSON.parse(one.stdout)).toHaveLength(1);
    expect((await signals('list', '--config', path, '--status', 'sleeping')).code).toBe(2);
  });

  it('given everything applied, when planned and applied again, then the plan has nothing to apply and apply creates nothing', async () => {
    const planned = await signals('plan', '--config', await config({}));
    expect(planned.stdout).toContain('Nothing to apply: the account already has these Signals.');
    expect(planned.stdout).not.toContain('Apply with');
    const before = (await tagged()).map((s) => s.id).sort();
    const result = await apply('--config', await config({}));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/0 to create, 0 to update, 0 to prune, 3 unchanged/);
    expect(result.stdout).toMatch(/applied: 0 created/);
    expect((await tagged()).map((s) => s.id).sort()).toEqual(before);
  });

  it('given the interval changed to 1d, when applied, then the three Signals are PATCHed in place', async () => {
    const before = (await tagged()).map((s) => s.id).sort();
    const result = await apply('--config', await config({ schedule: { interval: '1d' } }));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/0 to create, 3 to update/);
    expect(result.stdout).toMatch(/interval 7d→1d/);
    const after = await tagged();
    expect(after.map((s) => s.id).sort()).toEqual(before);
    expect(after.every((s) => s.schedule.interval === '1d')).toBe(true);
  });

  it('given a target removed from the config, when planned and applied without then with --prune, then it is reported, kept, then deleted', async () => {
    const path = await config({ schedule: { interval: '1d' }, targets: TARGETS.slice(0, 2) });
    const plan = await signals('plan', '--config', path);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toMatch(/1 to prune/);
    expect(plan.stdout).toMatch(/prune \(kept\)\s+alan-turing/);

    const kept = await apply('--config', path);
    expect(kept.code, kept.stderr).toBe(0);
    expect(kept.stdout).toMatch(/1 tagged Signals are no longer declared and were kept/);
    expect(await tagged()).toHaveLength(3);

    const pruned = await apply('--config', path, '--prune');
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toMatch(/applied: 0 created, 0 updated, 1 deleted/);
    const left = await tagged();
    expect(left).toHaveLength(2);
    expect(left.map(siteOf).some((url) => url?.endsWith('/alan-turing'))).toBe(false);
  });

  it('given the removed target declared again, when applied, then it is created again', async () => {
    const result = await apply('--config', await config({ schedule: { interval: '1d' } }));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/applied: 1 created/);
    expect(await tagged()).toHaveLength(3);
  });

  it('given a lone target created, pruned and declared again within the key window, when applied, then a live Signal is created', async () => {
    const solo = (targets: string[]) => config({ tag: 'e2e-solo', targets });
    expect((await apply('--config', await solo(['linus-pauling']))).code).toBe(0);
    const first = await listTaggedSignals(client, 'e2e-solo');
    expect((await apply('--config', await solo([]), '--prune')).stdout).toMatch(/1 deleted/);
    const again = await apply('--config', await solo(['linus-pauling']));
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/applied: 1 created/);
    const live = await listTaggedSignals(client, 'e2e-solo');
    expect(live).toHaveLength(1);
    expect(live[0]!.id).not.toBe(first[0]!.id);
  });

  it('given an invalid URL and a profile already watched by an untagged Signal, when applied, then each is reported per target and it exits 1', async () => {
    await client.bulkCreateSignals({
      template: {
        name_prefix: 'manual',
        schedule: { interval: '7d' },
        criteria: { mode: 'field_change', fields: ['headline'] },
      },
      targets: [{ type: 'profile', site_url: 'katherine-johnson' }],
    });
    const bad = 'https://www.network.example/company/not-a-profile';
    const result = await apply(
      '--config',
      await config({
        schedule: { interval: '1d' },
        targets: [...TARGETS, bad, 'katherine-johnson', 'edsger-dijkstra'],
      }),
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/applied: 1 created, 0 updated, 0 deleted, 3 unchanged, 2 rejected/);
    expect(result.stdout).toMatch(new RegExp(`rejected\\s+${bad}\\s+invalid_url`));
    expect(result.stdout).toMatch(/rejected\s+katherine-johnson\s+duplicate_target/);
    expect(await tagged()).toHaveLength(4);
  });

  it('given signals.max_monthly_credits below the plan, when planned and applied, then plan warns, apply refuses before any call, and a limit that fits applies', async () => {
    const path = await config({
      tag: 'e2e-capped',
      schedule: { interval: '1d' },
      targets: ['ida-rhodes', 'jean-sammet'],
      max_monthly_credits: 59,
    });
    const planned = await signals('plan', '--config', path);
    expect(planned.code, planned.stderr).toBe(0);
    expect(planned.stdout).toMatch(/0 now \(active ones, as the service estimates them\), 60 afterwards/);
    expect(planned.stdout).toMatch(/apply would refuse: .*60 credits a month.*max_monthly_credits \(59\)/);
    const refused = await apply('--config', path);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/SEEDLINE_SIGNALS_OVER_BUDGET/);
    expect(await listTaggedSignals(client, 'e2e-capped')).toEqual([]);

    const fits = await apply(
      '--config',
      await config({
        tag: 'e2e-capped',
        schedule: { interval: '1d' },
        targets: ['ida-rhodes', 'jean-sammet'],
        max_monthly_credits: 60,
      }),
    );
    expect(fits.code, fits.stderr).toBe(0);
    expect(await listTaggedSignals(client, 'e2e-capped')).toHaveLength(2);
  });

  it.each([
    ['a notify webhook', { notify: { webhook_url: 'https://hooks.example/seedline' } }],
    ["the account's default webhook", {}],
  ])(
    'given %s and nowhere to keep secrets, when applied, then it refuses before creating anything',
    async (_, notify) => {
      const path = await config({ tag: 'e2e-notify', ...notify, targets: ['barbara-liskov'] });
      const result = await signals('apply', '--config', path);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/--secrets-out FILE \(or set webhooks.secrets_file\).*--discard-secrets/);
      expect(await listTaggedSignals(client, 'e2e-notify')).toEqual([]);
    },
  );

  it('given webhooks.secrets_file in the config and no --secrets-out, when applied, then the secrets land in that file', async () => {
    const path = await writeConfig(
      dir,
      {
        api: { base_url: sandbox.url, api_key: KEY },
        destination: { type: 'duckdb', path: join(dir, 'w.duckdb') },
        streams: {},
        webhooks: { secrets_file: 'from-config.jsonl' },
        signals: {
          tag: 'e2e-secrets-file',
          schedule: { interval: '7d' },
          criteria: { mode: 'field_change', fields: ['headline'] },
          targets: ['frances-allen'],
        },
      },
      'secrets-file.yaml',
    );
    const result = await signals('apply', '--config', path);
    expect(result.code, result.stderr).toBe(0);
    const [signal] = await listTaggedSignals(client, 'e2e-secrets-file');
    const kept = (await readFile(join(dir, 'from-config.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string });
    expect(kept.map((k) => k.id)).toEqual([signal!.id]);
    expect((await stat(join(dir, 'from-config.jsonl'))).mode & 0o777).toBe(0o600);
  });
});

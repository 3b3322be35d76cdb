import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Signal } from '../../schemas/index.js';
import { ApiClient } from '../../src/client/index.js';
import { createDestination } from '../../src/destinations/create-destination.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { listTaggedSignals } from '../../src/signals/signal-apply.js';
import { runCli, tempWorkspace, writeConfig } from '../helpers/cli.js';
import { runCliInProcess } from '../helpers/cli-in-process.js';
import { startRecordingProxy } from '../helpers/recording-proxy.js';
import { startReceiver, type WebhookReceiver } from '../helpers/sandbox.js';

const KEY = 'svc_live_signals_ops';
const siteOf = (signal: Signal) => (signal.target as { site_url?: string } | undefined)?.site_url;

describe('seedline signals: PATCHes, templates, rejections, day-to-day commands and crashes', () => {
  let sandbox: Sandbox;
  let proxy: Awaited<ReturnType<typeof startRecordingProxy>>;
  let receiver: WebhookReceiver;
  let client: ApiClient;
  let dir: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ rpm: 100_000 });
    proxy = await startRecordingProxy(sandbox.url);
    receiver = await startReceiver();
    client = new ApiClient({ baseUrl: sandbox.url, apiKey: KEY });
    dir = await tempWorkspace();
  });
  afterAll(async () => {
    await client?.close();
    await proxy?.close();
    await receiver?.close();
    await sandbox?.close();
  });

  const config = (tag: string, signals: Record<string, unknown>) =>
    writeConfig(
      dir,
      {
        api: { base_url: proxy.url, api_key: KEY },
        destination: { type: 'duckdb', path: join(dir, 'w.duckdb') },
        streams: {},
        signals: {
          tag,
          schedule: { interval: '7d' },
          criteria: { mode: 'field_change', fields: ['headline'] },
          targets: ['ada', 'grace', 'alan'].map((name) => `${tag}-${name}`),
          ...signals,
        },
      },
      `${tag}.yaml`,
    );
  /** `signals …`; an apply without --secrets-out discards the secrets, which these tests do not need. */
  const cli = (...args: string[]) =>
    runCli([
      'signals',
      ...args,
      ...(args[0] === 'apply' && !args.includes('--secrets-out') ? ['--discard-secrets'] : []),
    ]);
  const patchesSince = (mark: number) =>
    proxy.seen
      .slice(mark)
      .filter((r) => r.method === 'PATCH')
      .map((r) => JSON.parse(r.body) as unknown);

  it('given applied Signals, when only the interval changes, then each PATCH carries the schedule alone; when templates are added, only those', async () => {
    // The first apply is setup (in-process, no webhook so no secrets); the PATCHes under test come from processes.
    expect(
      (await runCliInProcess(['signals', 'apply', '--config', await config('ops-patch', {}), '--discard-secrets']))
        .code,
    ).toBe(0);

    let mark = proxy.seen.length;
    const interval = await cli('apply', '--config', await config('ops-patch', { schedule: { interval: '1d' } }));
    expect(interval.code, interval.stderr).toBe(0);
    expect(patchesSince(mark)).toEqual(Array(3).fill({ schedule: { interval: '1d', timezone: 'UTC' } }));

    mark = proxy.seen.length;
    const templated = {
      schedule: { interval: '1d' },
      tags: ['sales'],
      external_id: 'lead-{key}',
      metadata: { source: 'seedline', seed: '{seed}' },
    };
    const attributes = await cli('apply', '--config', await config('ops-patch', templated));
    expect(attributes.code, attributes.stderr).toBe(0);
    const bodies = patchesSince(mark) as { external_id: string }[];
    expect(bodies.map((b) => Object.keys(b).sort())).toEqual(Array(3).fill(['external_id', 'metadata', 'tags']));
    const live = await listTaggedSignals(client, 'ops-patch');
    expect(live.map((s) => [s.external_id, s.metadata, s.tags, s.schedule.interval]).sort()).toEqual(
      ['ops-patch-ada', 'ops-patch-alan', 'ops-patch-grace'].map((key) => [
        `lead-${key}`,
        { source: 'seedline', seed: key },
        ['ops-patch', 'sales'],
        '1d',
      ]),
    );

    mark = proxy.seen.length;
    const again = await cli('apply', '--config', await config('ops-patch', templated));
    expect(again.stdout).toMatch(/0 to create, 0 to update, 0 to prune, 3 unchanged/);
    expect(patchesSince(mark)).toEqual([]);
  });

  it('given external_id and metadata templates, when new targets are applied, then every created Signal carries its own', async () => {
    const result = await cli(
      'apply',
      '--config',
      await config('ops-new', { external_id: 'crm-{key}', metadata: { team: 'growth' } }),
    );
    expect(result.code, result.stderr).toBe(0);
    const live = await listTaggedSignals(client, 'ops-new');
    expect(live.map((s) => s.external_id).sort()).toEqual(['crm-ops-new-ada', 'crm-ops-new-alan', 'crm-ops-new-grace']);
    expect(live.every((s) => JSON.stringify(s.metadata) === '{"team":"growth"}')).toBe(true);
  });

  it('given an invalid target, when applied twice, then it is printed each time and kept once in _seedline_rejected with its reason', async () => {
    const bad = 'https://www.network.example/company/not-a-profile';
    const result = await cli('apply', '--config', await config('ops-rejected', { targets: ['ops-linus', bad] }));
    expect(result.code).toBe(1);
    const again = await cli('apply', '--config', await config('ops-rejected', { targets: ['ops-linus', bad] }));
    expect(again.stdout).toMatch(new RegExp(`rejected\\s+${bad}\\s+invalid_url`));
    expect(again.stdout).toMatch(/recorded by an earlier apply/);
    expect(result.stdout).toMatch(new RegExp(`rejected\\s+${bad}\\s+invalid_url`));
    const runId = /run_id '([^']+)'/.exec(result.stdout)?.[1];
    expect(runId).toBeDefined();
    const destination = await createDestination({ type: 'duckdb', path: join(dir, 'w.duckdb') });
    try {
      const rows = await destination.query(
        `select stream, "table", record, reason from seedline._seedline_rejected where run_id = $1`,
        [runId],
      );
      expect(rows).toEqual([
        {
          stream: 'signals',
          table: 'signals',
          record: JSON.stringify({ tag: 'ops-rejected', site_url: bad }),
          reason: 'invalid_url',
        },
      ]);
      const all = await destination.query(`select run_id from seedline._seedline_rejected where record = $1`, [
        JSON.stringify({ tag: 'ops-rejected', site_url: bad }),
      ]);
      expect(all).toEqual([{ run_id: runId }]);
    } finally {
      await destination.close();
    }
    // A target the service refused is not a record of a table: rejected retry leaves it with the service's reason.
    const retry = await runCli(['rejected', 'retry', '--config', join(dir, 'ops-rejected.yaml')]);
    expect(retry.stdout).toMatch(/nothing to retry/);
    const kept = await createDestination({ type: 'duckdb', path: join(dir, 'w.duckdb') });
    try {
      expect(
        await kept.query(`select reason from seedline._seedline_rejected where record = $1`, [
          JSON.stringify({ tag: 'ops-rejected', site_url: bad }),
        ]),
      ).toEqual([{ reason: 'invalid_url' }]);
    } finally {
      await kept.close();
    }
  });

  it('given tagged Signals, when paused and resumed by tag and by id, then their status follows; check-now and test-webhook answer', async () => {
    const path = await config('ops-daily', { notify: { webhook_url: `${receiver.url}/hook` } });
    expect((await cli('apply', '--config', path, '--secrets-out', join(dir, 'secrets.jsonl'))).code).toBe(0);
    const statuses = async () => (await listTaggedSignals(client, 'ops-daily')).map((s) => s.status);

    const paused = await cli('pause', '--config', path, '--tag', 'ops-daily');
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout).toMatch(/paused 3 Signals tagged "ops-daily"/);
    expect(await statuses()).toEqual(['paused', 'paused', 'paused']);

    const [first] = await listTaggedSignals(client, 'ops-daily');
    const one = await cli('resume', first!.id, '--config', path);
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toMatch(new RegExp(`resumed ${first!.id} \\(active\\); next check at \\d{4}-`));
    const rest = await cli('resume', '--config', path, '--tag', 'ops-daily');
    expect(rest.stdout).toMatch(/resumed 2 of 2 paused Signals tagged "ops-daily"/);
    expect(await statuses()).toEqual(['active', 'active', 'active']);
    const single = await cli('pause', first!.id, '--config', path);
    expect(single.stdout).toMatch(new RegExp(`paused ${first!.id} \\(paused, reason user\\)`));
    expect((await cli('resume', first!.id, '--config', path)).code).toBe(0);

    const check = await cli('check-now', first!.id, '--config', path);
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toMatch(new RegExp(`${first!.id}\\s+1\\s+not_matched \\(baseline\\)\\s+1`));
    expect(
      sandbox.ledger.entries
        .filter((e) => e.operation === 'signal.check' && e.target === first!.id)
        .map((e) => e.credits),
    ).toEqual([1]);

    const test = await cli('test-webhook', first!.id, '--config', path);
    expect(test.code, test.stderr).toBe(0);
    expect(test.stdout).toMatch(new RegExp(`\\S+\\s+signal\\.test\\s+${receiver.url}/hook`));
  });

  it('given one Signal paused by hand and one paused by the service for credits, when resumed by tag, then only the first resumes unless --all', async () => {
    const poor = await startSandbox({ rpm: 100_000, balance: 1 });
    const poorClient = new ApiClient({ baseUrl: poor.url, apiKey: KEY });
    try {
      const path = await writeConfig(
        dir,
        {
          api: { base_url: poor.url, api_key: KEY },
          destination: { type: 'duckdb', path: join(dir, 'poor.duckdb') },
          streams: {},
        },
        'poor.yaml',
      );
      const { data } = await poorClient.bulkCreateSignals({
        template: {
          name_prefix: 'poor',
          tags: ['ops-poor'],
          schedule: { interval: '7d' },
          criteria: { mode: 'field_change', fields: ['headline'] },
        },
        targets: ['ops-poor-hand', 'ops-poor-credits'].map((site_url) => ({ type: 'profile' as const, site_url })),
      });
      const [byHand, byService] = data.signals;
      await poorClient.pauseSignal(byHand!.id);
      await poorClient.checkSignalNow(byService!.id);
      await poorClient.checkSignalNow(byService!.id);
      expect((await poorClient.getSignal(byService!.id)).data).toMatchObject({
        status: 'paused',
        paused_reason: 'insufficient_credits',
      });

      const resumed = await cli('resume', '--config', path, '--tag', 'ops-poor');
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stdout).toMatch(/resumed 1 of 1 paused Signals tagged "ops-poor"/);
      expect(resumed.stdout).toMatch(new RegExp(`${byService!.id}\\s+insufficient_credits`));
      expect((await poorClient.getSignal(byHand!.id)).data.status).toBe('active');
      expect((await poorClient.getSignal(byService!.id)).data.status).toBe('paused');

      const all = await cli('resume', '--config', path, '--tag', 'ops-poor', '--all');
      expect(all.stdout).toMatch(/resumed 1 of 1 paused Signals tagged "ops-poor"/);
      expect((await poorClient.getSignal(byService!.id)).data.status).toBe('active');
    } finally {
      await poorClient.close();
      await poor.close();
    }
  });

  it('given neither or both of an id and --tag, or an unknown id, when paused, then it says what to give and changes nothing', async () => {
    const path = await config('ops-daily', {});
    const neither = await cli('pause', '--config', path);
    expect(neither.code).toBe(2);
    expect(neither.stderr).toMatch(/give a Signal id or --tag TAG/);
    expect((await cli('pause', 'sig_x', '--config', path, '--tag', 'ops-daily')).stderr).toMatch(/one of them/);
    const unknown = await cli('pause', 'sig_does_not_exist', '--config', path);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/not_found|not found/i);
    expect((await listTaggedSignals(client, 'ops-daily')).every((s) => s.status === 'active')).toBe(true);
  });

  it('given a kill -9 after the bulk answer came but before its secrets were kept, when applied again, then the secrets are recovered and nothing is created twice', async () => {
    const path = await config('ops-lost', { notify: { webhook_url: `${receiver.url}/hook` } });
    const secrets = join(dir, 'lost-secrets.jsonl');
    const crashed = await runCli(['signals', 'apply', '--config', path, '--secrets-out', secrets], {
      env: { SEEDLINE_TEST_CRASH_AT: 'signals-after-answer' },
    });
    expect(crashed.signal).toBe('SIGKILL');
    const created = await listTaggedSignals(client, 'ops-lost');
    expect(created).toHaveLength(3);
    await expect(readFile(secrets, 'utf8')).rejects.toThrow(/ENOENT/);

    const rerun = await cli('apply', '--config', path, '--secrets-out', secrets);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stdout).toMatch(/recovered 3 webhook secrets/);
    expect(rerun.stdout).toMatch(/0 to create, 0 to update, 0 to prune, 3 unchanged/);
    expect(`${rerun.stdout}${rerun.stderr}`).not.toMatch(/whsec_/);
    const kept = (await readFile(secrets, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: string; webhook_secret: string });
    expect(kept.map((k) => k.id).sort()).toEqual(created.map((s) => s.id).sort());
    expect(kept.every((k) => k.webhook_secret.startsWith('whsec_'))).toBe(true);
    expect((await stat(secrets)).mode & 0o777).toBe(0o600);
    await expect(stat(`${secrets}.journal`)).rejects.toThrow(/ENOENT/);
    expect(await listTaggedSignals(client, 'ops-lost')).toHaveLength(3);
  });

  it('given 1,500 targets and a kill -9 after the first bulk chunk, when applied again, then each target has exactly one Signal', async () => {
    const targets = Array.from({ length: 1500 }, (_, i) => `ops-crash-${String(i).padStart(4, '0')}`);
    const path = await config('ops-crash', { targets });
    const crashed = await runCli(['signals', 'apply', '--config', path, '--discard-secrets'], {
      env: { SEEDLINE_TEST_CRASH_AT: 'signals-after-chunk:1' },
    });
    expect(crashed.signal).toBe('SIGKILL');
    expect(await listTaggedSignals(client, 'ops-crash')).toHaveLength(1000);

    const rerun = await cli('apply', '--config', path);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stdout).toMatch(/applied: 500 created/);
    const all: Signal[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listSignals({ limit: 100, ...(cursor ? { cursor } : {}) });
      all.push(...page.data);
      cursor = page.meta.nextCursor ?? undefined;
    } while (cursor);
    const sites = all.map(siteOf).filter((site) => site?.includes('/in/ops-crash-'));
    expect(sites).toHaveLength(1500);
    expect(new Set(sites).size).toBe(1500);
  });
});

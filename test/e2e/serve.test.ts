import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signWebhook } from '../../src/client/webhook-signature.js';
import { createDestination } from '../../src/destinations/create-destination.js';
import { DestinationError } from '../../src/destinations/destination-error.js';
import type { Destination, DestinationConfig, DestinationKind } from '../../src/destinations/destination.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { sleep } from '../../src/util/sleep.js';
import { cliNodeArgs, runCli, tempWorkspace, writeConfig } from '../helpers/cli.js';
import { backendAvailable } from '../helpers/destinations.js';
import { dropPostgresSchema, testPostgresUrl } from '../helpers/postgres.js';
import { eventually } from '../helpers/sandbox.js';
import { recordSubmittedJob } from '../helpers/submitted-job.js';
import { timeLimit } from '../helpers/time-limits.js';
import { freePort } from '../helpers/free-port.js';

const ROOT = resolve(import.meta.dirname, '../..');
const DAY = 86_400_000;
/** The secret of hand-made deliveries (`webhooks.secrets`, through `${SERVE_OWN_SECRET}`). */
const OWN_SECRET = 'whsec_seedline_e2e_own';
/** Signal id of hand-made Triggers, which GET /v1/triggers never lists. */
const SYNTHETIC = 'sig_synthetic';
const stripe = new Stripe('sk_test_unused_for_signatures');
/** The profile a killed sync left in a submitted batch job. */
const BATCH_PROFILE = 'https://www.network.example/in/serve-batch-person';
/** A second one, read by `sync --resume-only` without serve. */
const POLLED_PROFILE = 'https://www.network.example/in/serve-polled-person';
/** A configured seed no resume-only read may submit. */
const UNFETCHED_PROFILE = 'https://www.network.example/in/serve-never-fetched';

interface Served {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  exited: Promise<number | null>;
}

/** Spawns `seedline serve` and resolves once it prints where it listens. */
async function startServe(config: string, env: NodeJS.ProcessEnv): Promise<Served> {
  const child = spawn(process.execPath, [...cliNodeArgs(), 'serve', '--config', config], {
    cwd: ROOT,
    env: { ...process.env, ...env, FORCE_COLOR: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((done) => child.once('close', (code) => done(code)));
  const state: Served = { child, stdout: '', stderr: '', exited };
  child.stdout?.on('data', (chunk: Buffer) => (state.stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (state.stderr += chunk.toString()));
  await eventually(async () => state.stdout.includes('listening on') || child.exitCode !== null);
  if (!state.stdout.includes('listening on')) throw new Error(`serve did not start:\n${state.stderr}`);
  return state;
}

/** A hand-made Trigger of the synthetic Signal. */
function syntheticTrigger(id: string, checkNumber = 1): Record<string, unknown> {
  return {
    trigger_id: id,
    signal_id: SYNTHETIC,
    check_number: checkNumber,
    checked_at: new Date(Date.UTC(2026, 0, 1, 0, checkNumber)).toISOString(),
    diff: { headline: { before: 'a', after: `b${checkNumber}` } },
    criteria_matched: ['headline'],
  };
}

/**
 * Like `eventually`, probing every 200 ms: each probe opens the destination, and while this
 * process has a DuckDB file open, serve cannot load into it.
 */
function untilDb<T>(probe: () => Promise<T | undefined | null | false>): Promise<T> {
  return eventually(probe, { every: 200 });
}

/** Waits until `output()` matches: the assertion that follows then reports the output if it never did. */
async function logged(output: () => string, pattern: RegExp): Promise<void> {
  await eventually(async () => pattern.test(output())).catch(() => undefined);
}

function fromJson(value: unknown): unknown {
  return typeof value === 'string' ? JSON.parse(value) : value;
}

describe('seedline serve without webhooks', () => {
  it('given a config without webhooks, when serve starts, then it exits 2 naming webhooks.secrets before listening', async () => {
    const dir = await tempWorkspace();
    const bare = await writeConfig(dir, {
      api: { base_url: 'http://127.0.0.1:9', api_key: 'svc_live_x' },
      destination: { type: 'duckdb', path: join(dir, 'w.duckdb') },
      streams: {},
    });
    const result = await runCli(['serve', '--config', bare, '--port', '0']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('webhooks.secrets');
    expect(result.stdout).not.toContain('listening on');
  });

  it('given webhooks whose only secret comes from an unset ${VAR:-}, when serve starts, then it exits 2 naming webhooks.secrets before listening', async () => {
    const dir = await tempWorkspace();
    const config = await writeConfig(dir, {
      api: { base_url: 'http://127.0.0.1:9', api_key: 'svc_live_x' },
      destination: { type: 'duckdb', path: join(dir, 'w.duckdb') },
      streams: {},
      webhooks: { secrets: ['${SEEDLINE_E2E_UNSET_SECRET:-}'] },
    });
    const result = await runCli(['serve', '--config', config, '--port', '0']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('webhooks.secrets: seedline serve needs the secrets');
    expect(result.stdout).not.toContain('listening on');
  });

  it('given a spool_dir below a file, when sync runs, then it warns in one line that the spool was not loaded and still syncs', async () => {
    const sandbox = await startSandbox({ seed: 3, rpm: 100_000 });
    try {
      const dir = await tempWorkspace();
      await writeFile(join(dir, 'blocker'), 'not a folder');
      const config = await writeConfig(dir, {
        api: { base_url: sandbox.url, api_key: 'svc_test_spool_blocked' },
        destination: { type: 'duckdb', path: join(dir, 'w.duckdb') },
        streams: { triggers: {} },
        webhooks: { secrets: ['whsec_spool_blocked'], spool_dir: 'blocker/spool' },
      });
      const result = await runCli(['sync', '--config', config]);
      expect(result.code, result.stderr).toBe(0);
      const warnings = result.stderr.split('\n').filter((l) => l.startsWith('warning: webhook spool not loaded'));
      expect(warnings).toEqual([
        expect.stringMatching(
          /^warning: webhook spool not loaded \(.*ENOTDIR.*\); its deliveries stay spooled for serve or the next sync$/,
        ),
      ]);
      expect(result.stderr).not.toContain('whsec_spool_blocked');
      expect(result.stdout).toMatch(/run run_\w+: succeeded/);
    } finally {
      await sandbox.close();
    }
  });

  it('given a spool_dir that is a file and an empty secret, when serve starts, then it warns of the secret and exits 1 naming webhooks.spool_dir before listening', async () => {
    const dir = await tempWorkspace();
    await writeFile(join(dir, 'blocker'), 'not a folder');
    const config = await writeConfig(dir, {
      api: { base_url: 'http://127.0.0.1:9', api_key: 'svc_live_x' },
      destination: { type: 'duckdb', path: join(dir, 'w.duckdb') },
      streams: {},
      webhooks: { secrets: ['${SEEDLINE_E2E_UNSET_SECRET:-}', 'whsec_x'], spool_dir: 'blocker/spool' },
    });
    const result = await runCli(['serve', '--config', config, '--port', '0']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`webhooks.spool_dir ${join(dir, 'blocker/spool')} cannot be written (ENOTDIR)`);
    expect(result.stderr).toContain('warning: webhooks.secrets[0] is empty (an unset variable?) and is left out');
    expect(result.stderr).toContain('SEEDLINE_SPOOL_UNWRITABLE');
    expect(result.stdout).not.toContain('listening on');
  });
});

describe.each(['duckdb', 'postgres'] as DestinationKind[])('seedline serve into %s', (kind) => {
  const KEY = `svc_live_serve_${kind}`;
  /** A second account whose Signal's webhook answers 404, so the service pauses it. */
  const DOOMED_KEY = `svc_live_serve_doomed_${kind}`;
  let available = false;
  let sandbox: Sandbox;
  let dest: DestinationConfig;
  let schema: string;
  let dir: string;
  let configPath: string;
  let base: string;
  let hook: string;
  let served: Served;
  let env: NodeJS.ProcessEnv;
  /** Secret of each Signal notifying serve, by Signal id. */
  const secrets = new Map<string, string>();

  async function api<T = any>(
    path: string,
    options: { key?: string; method?: string; body?: unknown } = {},
  ): Promise<T> {
    const response = await fetch(`${sandbox.url}${path}`, {
      method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
      headers: { 'x-api-key': options.key ?? KEY, 'content-type': 'application/json' },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    return (await response.json()) as T;
  }

  async function createSignal(
    key: string,
    site: string,
    webhookUrl: string,
  ): Promise<{ id: string; notify: { webhook_secret: string } }> {
    const body = {
      name: `watch ${site}`,
      target: { type: 'profile', site_url: site },
      schedule: { interval: '1d' },
      criteria: { mode: 'field_change', fields: ['headline', 'position'] },
      notify: { webhook_url: webhookUrl },
    };
    return (await api<{ data: { id: string; notify: { webhook_secret: string } } }>('/v1/signals', { key, body })).data;
  }

  async function listTriggers(): Promise<any[]> {
    const triggers: any[] = [];
    let cursor = '';
    do {
      const page = await api<{ data: any[]; meta: { nextCursor: string | null } }>(
        `/v1/triggers?limit=100${cursor ? `&cursor=${cursor}` : ''}`,
      );
      triggers.push(...page.data);
      cursor = page.meta.nextCursor ?? '';
    } while (cursor);
    return triggers;
  }

  /** Reads the destination from this process; a DuckDB file serve is writing is tried again a moment later. */
  async function query(sql: string): Promise<Record<string, unknown>[]> {
    return untilDb(async () => {
      let destination: Destination | undefined;
      try {
        destination = await createDestination(dest);
        return await destination.query(sql.replaceAll('{s}', schema));
      } catch (error) {
        if (error instanceof DestinationError && /LOCKED|UNAVAILABLE/.test(error.code)) return undefined;
        throw error;
      } finally {
        await destination?.close();
      }
    });
  }

  async function rowsOf(triggerId: string): Promise<number> {
    return Number((await query(`select count(*) as n from {s}.triggers where trigger_id = '${triggerId}'`))[0]?.n);
  }

  async function post(
    body: string,
    signature: string | undefined,
    timeoutMs = timeLimit(10_000),
  ): Promise<{ status: number; text: string }> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (signature !== undefined) headers['x-service-signature'] = signature;
    const response = await fetch(hook, { method: 'POST', headers, body, signal: AbortSignal.timeout(timeoutMs) });
    return { status: response.status, text: await response.text() };
  }

  function triggerBody(trigger: Record<string, unknown>): string {
    return JSON.stringify({ event: 'signal.triggered', trigger });
  }

  /** Posts a fresh valid Trigger and waits until it is loaded: everything accepted before it is loaded too (one drain loads the whole spool). */
  async function settled(): Promise<void> {
    const id = `trg_sentinel_${randomBytes(4).toString('hex')}`;
    const body = triggerBody(syntheticTrigger(id));
    expect((await post(body, signWebhook(OWN_SECRET, body))).status).toBe(200);
    await untilDb(async () => (await rowsOf(id)) === 1);
  }

  async function spooled(): Promise<string[]> {
    return (await readdir(join(dir, '.seedline/spool')).catch(() => [] as string[])).filter((f) => f.endsWith('.json'));
  }

  async function allDelivered(url: string): Promise<boolean> {
    const { data: records } = (await (await fetch(`${sandbox.url}/__sandbox/deliveries`)).json()) as {
      data: { url: string; status: string }[];
    };
    const ours = records.filter((r) => r.url === url);
    return ours.length > 0 && ours.every((r) => r.status === 'delivered');
  }

  async function pausedReason(signalId: string): Promise<string | null> {
    return (await api<{ data: { paused_reason: string | null } }>(`/v1/signals/${signalId}`, { key: DOOMED_KEY })).data
      .paused_reason;
  }

  /** The destination's writer lock, taken from this process (as a long sync would hold it). */
  async function holdLock(): Promise<Destination> {
    return untilDb(async () => {
      const holder = await createDestination(dest);
      try {
        await holder.lock({ holder: 'e2e test (a long sync)' });
        return holder;
      } catch (error) {
        await holder.close();
        if (error instanceof DestinationError && /LOCKED|UNAVAILABLE/.test(error.code)) return undefined;
        throw error;
      }
    });
  }

  beforeAll(async () => {
    available = await backendAvailable(kind);
    if (!available) return;
    sandbox = await startSandbox({ seed: 5, rpm: 100_000 });
    dir = await tempWorkspace();
    schema = kind === 'duckdb' ? 'seedline' : `t_serve_${randomBytes(5).toString('hex')}`;
    dest =
      kind === 'duckdb'
        ? { type: 'duckdb', path: join(dir, 'w.duckdb'), schema }
        : { type: 'postgres', url: testPostgresUrl, schema };
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    hook = `${base}/webhooks`;
    // Each Signal's one-time secret lands where `signals apply --secrets-out` writes them.
    const lines: string[] = [];
    for (const site of ['serve-ada', 'serve-grace']) {
      const signal = await createSignal(KEY, `https://www.network.example/in/${site}`, hook);
      secrets.set(signal.id, signal.notify.webhook_secret);
      lines.push(JSON.stringify({ id: signal.id, site_url: site, webhook_secret: signal.notify.webhook_secret }));
    }
    await writeFile(join(dir, 'signal-secrets.jsonl'), `${lines.join('\n')}\n`, { mode: 0o600 });
    // The account secret signs signal.paused, sent to the fallback endpoint.
    const doomedAccount = await api('/v1/account', {
      key: DOOMED_KEY,
      method: 'PATCH',
      body: { default_webhook_url: hook, fallback_webhook_url: hook },
    });
    // The account secret signs batch.completed.
    const account = await api('/v1/account', { method: 'PATCH', body: { default_webhook_url: hook } });
    configPath = await writeConfig(dir, {
      api: { base_url: sandbox.url, api_key: KEY },
      destination: kind === 'duckdb' ? { type: 'duckdb', path: 'w.duckdb', schema } : dest,
      seeds: { profiles: [BATCH_PROFILE, POLLED_PROFILE, UNFETCHED_PROFILE] },
      streams: { triggers: {}, profiles: {} },
      webhooks: {
        secrets: ['${SERVE_OWN_SECRET}', doomedAccount.data.webhook_secret, account.data.webhook_secret],
        secrets_file: 'signal-secrets.jsonl',
        port,
      },
    });
    env = { SERVE_OWN_SECRET: OWN_SECRET };
    served = await startServe(configPath, env);
  });

  afterAll(async () => {
    if (served?.child.exitCode === null) served.child.kill('SIGKILL');
    await sandbox?.close();
    if (available && kind === 'postgres') await dropPostgresSchema(schema);
  });

  it('given two Signals notifying serve, when their checks trigger, then triggers holds each Trigger the API lists once, in check_number order', async ({
    skip,
  }) => {
    if (!available) skip();
    // Enough virtual days for both drifting profiles to change and trigger.
    for (let day = 0; day < 90; day++) await sandbox.clock.advance(DAY);
    await eventually(() => allDelivered(hook));
    const answeredAt = Date.now();
    const triggers = await listTriggers();
    expect(new Set(triggers.map((t) => t.signal_id))).toEqual(new Set(secrets.keys()));
    const expected = triggers
      .map((t) => ({
        trigger_id: t.trigger_id,
        signal_id: t.signal_id,
        check_number: t.check_number,
        checked_at: t.checked_at,
        diff: t.diff,
        criteria_matched: t.criteria_matched,
      }))
      .sort((a, b) => a.signal_id.localeCompare(b.signal_id) || a.check_number - b.check_number);
    const loaded = async () =>
      (
        await query(
          `select trigger_id, signal_id, check_number, checked_at, diff, criteria_matched from {s}.triggers where signal_id <> '${SYNTHETIC}' order by signal_id, check_number`,
        )
      ).map((r) => ({
        ...r,
        check_number: Number(r.check_number),
        checked_at: new Date(r.checked_at as string).toISOString(),
        diff: fromJson(r.diff),
        criteria_matched: fromJson(r.criteria_matched),
      }));
    // Until the first drain, the table does not exist yet.
    await untilDb(async () => (await loaded().catch(() => [])).length === expected.length);
    // A figure, not an assertion: how long after the last 2xx the rows were queryable.
    console.info(
      `[serve e2e ${kind}] ${expected.length} Triggers queryable ${Date.now() - answeredAt} ms after the last delivery was answered`,
    );
    expect(await loaded()).toEqual(expected);
    expect(served.stderr).toContain(`signal.triggered: queued trigger ${expected[0]!.trigger_id}`);
    // Logged just after the load commits: the rows can be read before the line reaches this process.
    await logged(() => served.stderr, /signal\.triggered: loaded \d+ triggers? into triggers/);
    expect(served.stderr).toMatch(/signal\.triggered: loaded \d+ triggers? into triggers/);
  });

  it('given deliveries signed by the stripe helper with our secret, when posted, then 200 and each is loaded', async ({
    skip,
  }) => {
    if (!available) skip();
    const ids = ['trg_stripe_a', 'trg_stripe_b'];
    for (const id of ids) {
      const body = triggerBody(syntheticTrigger(id, 2));
      const header = stripe.webhooks.generateTestHeaderString({ payload: body, secret: OWN_SECRET });
      expect((await post(body, header)).status).toBe(200);
    }
    for (const id of ids) await untilDb(async () => (await rowsOf(id)) === 1);
  });

  it('given tampered, wrongly signed, 301 s old, over 300 s future and unsigned deliveries, when posted, then 401 each and nothing of them is loaded', async ({
    skip,
  }) => {
    if (!available) skip();
    // Signed at the start of a second: the receiver, which reads its clock in whole seconds, then
    // has most of that second to see exactly 301 s of skew, even on a loaded machine.
    const now = () => Math.floor(Date.now() / 1000);
    // A future timestamp shrinks while the request travels: 301 s would pass as 300 on a machine
    // slow enough to take a second to answer. The exact 301 s boundary is unit-tested with an
    // injected clock (client-webhook-signature.test.ts); here the margin is the transit time.
    const FUTURE_SKEW = 301 + 10;
    const bodyOf = (id: string) => triggerBody(syntheticTrigger(id, 3));
    const cases = [
      {
        id: 'trg_bad_tampered',
        header: (b: string) =>
          stripe.webhooks.generateTestHeaderString({
            payload: b.replace('"check_number":3', '"check_number":4'),
            secret: OWN_SECRET,
          }),
        reason: 'signature_mismatch',
      },
      {
        id: 'trg_bad_secret',
        header: (b: string) => stripe.webhooks.generateTestHeaderString({ payload: b, secret: 'whsec_not_ours' }),
        reason: 'signature_mismatch',
      },
      {
        id: 'trg_bad_old',
        header: (b: string) =>
          stripe.webhooks.generateTestHeaderString({ payload: b, secret: OWN_SECRET, timestamp: now() - 301 }),
        reason: 'timestamp_too_old',
      },
      {
        id: 'trg_bad_future',
        header: (b: string) =>
          stripe.webhooks.generateTestHeaderString({ payload: b, secret: OWN_SECRET, timestamp: now() + FUTURE_SKEW }),
        reason: 'timestamp_in_future',
      },
      { id: 'trg_bad_unsigned', header: () => undefined, reason: 'missing_header' },
    ];
    for (const c of cases) {
      // Only the 301 s old case needs the start of a second (see above); the others hold at any moment.
      if (c.id === 'trg_bad_old') await sleep(1000 - (Date.now() % 1000));
      const answer = await post(bodyOf(c.id), c.header(bodyOf(c.id)));
      expect(answer.status, c.id).toBe(401);
      expect(answer.text, c.id).toContain(c.reason);
    }
    await settled();
    for (const c of cases) expect(await rowsOf(c.id), c.id).toBe(0);
    expect(await spooled()).toEqual([]);
    expect(served.stderr).not.toContain('whsec_');
  });

  it('given a delivered Trigger, when the same delivery is replayed, then 200 and still one row', async ({ skip }) => {
    if (!available) skip();
    const [trigger] = await listTriggers();
    const body = triggerBody(trigger);
    for (let attempt = 0; attempt < 2; attempt++)
      expect((await post(body, signWebhook(secrets.get(trigger.signal_id)!, body))).status).toBe(200);
    await settled();
    expect(await rowsOf(trigger.trigger_id)).toBe(1);
  });

  it('given signed bodies that are not events, when posted, then 202 (so the service neither retries nor pauses) and each is kept raw in _seedline_rejected with its reason, once even when replayed byte for byte', async ({
    skip,
  }) => {
    if (!available) skip();
    const bodies = [
      '{"event":"signal.triggered","trigger":{"trigger_id":"trg_half"}}',
      '{"event":"signal.exploded"}',
      'not json at all',
    ];
    const signatures = bodies.map((body) => signWebhook(OWN_SECRET, body));
    for (const [i, body] of bodies.entries()) expect((await post(body, signatures[i]!)).status).toBe(202);
    await settled();
    // The same deliveries again, signature and all, after their first copies left the spool.
    for (const [i, body] of bodies.entries()) expect((await post(body, signatures[i]!)).status).toBe(202);
    await settled();
    const rejected = await query(
      `select "table", record, reason from {s}._seedline_rejected where stream = 'webhooks'`,
    );
    expect(rejected.map((r) => r.record).sort()).toEqual([...bodies].sort());
    expect(rejected.find((r) => r.record === bodies[0])).toMatchObject({
      table: 'triggers',
      reason: expect.stringContaining('trigger.signal_id'),
    });
    expect(rejected.find((r) => r.record === bodies[2])).toMatchObject({
      table: 'webhooks',
      reason: 'the body is not valid JSON',
    });
    expect(await rowsOf('trg_half')).toBe(0);
  });

  it('given a body over 1 MiB, a GET on the hook and a health probe, when sent, then 413, 405 and 200', async ({
    skip,
  }) => {
    if (!available) skip();
    const big = JSON.stringify({ event: 'signal.test', pad: 'x'.repeat(1_100_000) });
    expect((await post(big, signWebhook(OWN_SECRET, big))).status).toBe(413);
    expect((await fetch(hook)).status).toBe(405);
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    const probe = (await health.json()) as Record<string, unknown>;
    expect(probe).toMatchObject({ status: 'ok', spooled: expect.any(Number) });
    expect(Object.keys(probe)).toEqual(expect.arrayContaining(['oldest_spooled_age_s', 'last_drain_problem']));
  });

  it('given a test webhook, when delivered, then it is recorded in webhook_events as a test and triggers is unchanged', async ({
    skip,
  }) => {
    if (!available) skip();
    const [signalId] = [...secrets.keys()];
    const [before] = await query('select count(*) as n from {s}.triggers');
    await api(`/v1/signals/${signalId}/test-webhook`, { method: 'POST' });
    await eventually(async () => served.stderr.includes(`signal.test: test delivery for Signal ${signalId}`));
    await settled();
    const events = await query(`select event, subject_id, test from {s}.webhook_events where event = 'signal.test'`);
    expect(events).toEqual([{ event: 'signal.test', subject_id: signalId, test: true }]);
    const [after] = await query('select count(*) as n from {s}.triggers');
    expect(Number(after?.n)).toBe(Number(before?.n) + 1); // the sentinel only
  });

  it('given a Signal whose webhook answers 404, when the service pauses it, then serve warns naming the Signal and the reason and records the event', async ({
    skip,
  }) => {
    if (!available) skip();
    const doomed = await createSignal(DOOMED_KEY, 'https://www.network.example/in/serve-doomed', `${base}/nowhere`);
    for (let day = 0; day < 30 && !(await pausedReason(doomed.id)); day++) await sandbox.clock.advance(DAY);
    expect(await pausedReason(doomed.id)).toBe('webhook_gone');
    await eventually(async () =>
      served.stderr.includes(
        `warning: signal.paused: Signal ${doomed.id} was paused by the service (reason: webhook_gone)`,
      ),
    );
    await settled();
    const events = await query(`select subject_id, test from {s}.webhook_events where event = 'signal.paused'`);
    expect(events).toEqual([{ subject_id: doomed.id, test: false }]);
  });

  it('given 200 concurrent deliveries with duplicates, when posted with a 10 s client timeout, then every one is answered 2xx and each unique Trigger is loaded once', async ({
    skip,
  }) => {
    if (!available) skip();
    const unique = Array.from({ length: 120 }, (_, i) => `trg_burst_${String(i).padStart(3, '0')}`);
    const sends = [...unique, ...unique.slice(0, 80)].map((id, i) => ({
      id,
      body: triggerBody(syntheticTrigger(id, 100 + (i % 120))),
    }));
    sends.sort(() => Math.random() - 0.5);
    const results = await Promise.all(
      sends.map(async ({ id, body }) => {
        const started = performance.now();
        try {
          const { status } = await post(body, signWebhook(OWN_SECRET, body));
          return { id, status, ms: performance.now() - started, timedOut: false };
        } catch (error) {
          return { id, status: 0, ms: performance.now() - started, timedOut: (error as Error).name === 'TimeoutError' };
        }
      }),
    );
    const ms = results.map((r) => r.ms).sort((a, b) => a - b);
    console.info(
      `[serve e2e ${kind}] 200 concurrent deliveries: answer p50 ${ms[100]!.toFixed(0)} ms, max ${ms[199]!.toFixed(0)} ms`,
    );
    expect(results.filter((r) => r.timedOut)).toEqual([]);
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    await untilDb(
      async () =>
        Number((await query(`select count(*) as n from {s}.triggers where trigger_id like 'trg_burst_%'`))[0]?.n) ===
        unique.length,
    );
    const rows = await query(
      `select trigger_id, count(*) as n from {s}.triggers where trigger_id like 'trg_burst_%' group by trigger_id order by trigger_id`,
    );
    expect(rows.map((r) => [r.trigger_id, Number(r.n)])).toEqual(unique.map((id) => [id, 1]));
  });

  it('given serve running, when a sync of the triggers stream waits for the destination, then the API Triggers are still there once each', async ({
    skip,
  }) => {
    if (!available) skip();
    const result = await runCli(['sync', '--config', configPath, '--streams', 'triggers', '--wait'], { env });
    expect(result.code, result.stderr).toBe(0);
    const [counts] = await query(
      `select count(*) as n, count(distinct trigger_id) as ids from {s}.triggers where signal_id <> '${SYNTHETIC}'`,
    );
    expect(Number(counts?.n)).toBe((await listTriggers()).length);
    expect(Number(counts?.ids)).toBe(Number(counts?.n));
  });

  it('given a batch job a stopped sync recorded as submitted, when the service sends batch.completed, then serve reads its results into profiles and completes the batch', async ({
    skip,
  }) => {
    if (!available) skip();
    // Held while the job is submitted and recorded, so its batch.completed is loaded only once the record exists.
    const holder = await holdLock();
    let jobId: string;
    try {
      jobId = await recordSubmittedJob(holder, { url: sandbox.url, apiKey: KEY }, BATCH_PROFILE, hook);
    } finally {
      await holder.close();
    }
    await untilDb(
      async () =>
        (await query(`select status from {s}._seedline_batches where job_id = '${jobId}'`))[0]?.status === 'completed',
    );
    expect(await query(`select url from {s}.profiles`)).toEqual([
      { url: expect.stringContaining('serve-batch-person') },
    ]);
    expect(await query(`select status from {s}._seedline_seeds where stream = 'profiles'`)).toEqual([
      { status: 'fetched' },
    ]);
    expect(await query(`select subject_id from {s}.webhook_events where event = 'batch.completed'`)).toEqual([
      { subject_id: jobId },
    ]);
    expect(served.stderr).toContain(`batch.completed: reading the results of job ${jobId} (streams profiles)`);
    // The read commits the batch as completed, then prints its run summary: wait for the line, not just the row.
    await logged(() => served.stdout, /run run_\w+: succeeded/);
    expect(served.stdout).toMatch(/run run_\w+: succeeded/);
  });

  it('given a delivery answered while a long sync holds the destination, when serve is killed -9 before loading it and started again, then it is loaded', async ({
    skip,
  }) => {
    if (!available) skip();
    const holder = await holdLock();
    let released = false;
    try {
      const body = triggerBody(syntheticTrigger('trg_crash', 7));
      expect((await post(body, signWebhook(OWN_SECRET, body))).status).toBe(200);
      expect(await spooled()).toHaveLength(1);
      served.child.kill('SIGKILL');
      await served.exited;
      await holder.close();
      released = true;
      expect(await rowsOf('trg_crash')).toBe(0);
      served = await startServe(configPath, env);
      await untilDb(async () => (await rowsOf('trg_crash')) === 1);
      expect(served.stderr).toContain('spool: loaded 1 deliveries accepted before this start');
    } finally {
      if (!released) await holder.close();
    }
  });

  it('given deliveries left spooled when serve stops while the destination is busy, when sync runs next, then it loads them first (leaving batch.completed for serve) and serve had exited 0', async ({
    skip,
  }) => {
    if (!available) skip();
    const holder = await holdLock();
    let released = false;
    try {
      const body = triggerBody(syntheticTrigger('trg_left_for_sync', 8));
      expect((await post(body, signWebhook(OWN_SECRET, body))).status).toBe(200);
      // Left spooled by the sync for serve, whose drain starts the job's read.
      const completed = JSON.stringify({
        event: 'batch.completed',
        job: { job_id: 'job_left_for_serve', status: 'completed', total: 1 },
      });
      expect((await post(completed, signWebhook(OWN_SECRET, completed))).status).toBe(200);
      served.child.kill('SIGTERM');
      expect(await served.exited).toBe(0);
      expect(served.stderr).toContain('stopping: answering the deliveries under way, then loading the spool');
      expect(served.stderr).toContain('the next serve or sync loads them');
      await holder.close();
      released = true;
      expect(await spooled()).toHaveLength(2);
      const result = await runCli(['sync', '--config', configPath, '--streams', 'triggers'], { env });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toContain('spool: loaded 1 webhook deliveries waiting in the spool');
      expect(await rowsOf('trg_left_for_sync')).toBe(1);
      expect(await spooled()).toHaveLength(1);
      expect(await query(`select subject_id from {s}.webhook_events where subject_id = 'job_left_for_serve'`)).toEqual(
        [],
      );
    } finally {
      if (!released) await holder.close();
    }
  });

  it('given serve stopped and a job a stopped sync left unread, when sync --resume-only runs (the polling fallback), then it reads that job and submits nothing new', async ({
    skip,
  }) => {
    if (!available) skip();
    const recorder = await holdLock();
    let jobId: string;
    try {
      jobId = await recordSubmittedJob(recorder, { url: sandbox.url, apiKey: KEY }, POLLED_PROFILE);
    } finally {
      await recorder.close();
    }
    const result = await runCli(['sync', '--config', configPath, '--streams', 'profiles', '--resume-only'], { env });
    expect(result.code, result.stderr).toBe(0);
    expect((await query(`select status from {s}._seedline_batches where job_id = '${jobId}'`))[0]?.status).toBe(
      'completed',
    );
    const urls = (await query(`select url from {s}.profiles order by url`)).map((r) => String(r.url));
    expect(urls).toHaveLength(2);
    expect(urls.some((u) => u.includes('serve-polled-person'))).toBe(true);
    expect(await query(`select seed from {s}._seedline_seeds where seed = '${UNFETCHED_PROFILE}'`)).toEqual([]);
  });
});

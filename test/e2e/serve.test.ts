import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signWebhook } from '../../src/client/webhook-signature.js';
import { createDestination } from '../../src/destinations/create-destination.js';
import type { DestinationConfig } from '../../src/destinations/destination.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { runCli, tempWorkspace, writeConfig } from '../helpers/cli.js';
import { eventually } from '../helpers/sandbox.js';

const ROOT = resolve(import.meta.dirname, '../..');
const DAY = 86_400_000;
const KEY = 'svc_live_serve';
/** A second account whose Signal's webhook answers 404, so the service pauses it. */
const DOOMED_KEY = 'svc_live_serve_doomed';

interface Served {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  exited: Promise<number | null>;
}

let sandbox: Sandbox;
let dest: DestinationConfig;
let configPath: string;
let base: string;
let hook: string;
let served: Served;
/** Environment of every CLI run: the config takes one secret from it. */
let env: NodeJS.ProcessEnv;
/** Secret of each Signal notifying serve, by Signal id. */
const secrets = new Map<string, string>();

async function api<T = any>(path: string, options: { key?: string; method?: string; body?: unknown } = {}): Promise<T> {
  const response = await fetch(`${sandbox.url}${path}`, {
    method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
    headers: { 'x-api-key': options.key ?? KEY, 'content-type': 'application/json' },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  return (await response.json()) as T;
}

async function createSignal(key: string, site: string, webhookUrl: string): Promise<{ id: string; notify: { webhook_secret: string } }> {
  const body = { name: `watch ${site}`, target: { type: 'profile', site_url: site }, schedule: { interval: '1d' }, criteria: { mode: 'field_change', fields: ['headline', 'position'] }, notify: { webhook_url: webhookUrl } };
  return (await api<{ data: { id: string; notify: { webhook_secret: string } } }>('/v1/signals', { key, body })).data;
}

async function listTriggers(): Promise<any[]> {
  const triggers: any[] = [];
  let cursor = '';
  do {
    const page = await api<{ data: any[]; meta: { nextCursor: string | null } }>(`/v1/triggers?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
    triggers.push(...page.data);
    cursor = page.meta.nextCursor ?? '';
  } while (cursor);
  return triggers;
}

async function query(sql: string): Promise<Record<string, unknown>[]> {
  const destination = await createDestination(dest);
  try {
    return await destination.query(sql);
  } finally {
    await destination.close();
  }
}

async function rowsOf(triggerId: string): Promise<number> {
  return Number((await query(`select count(*) as n from seedline.triggers where trigger_id = '${triggerId}'`))[0]?.n);
}

async function post(body: string, signature: string): Promise<{ status: number; text: string }> {
  const response = await fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json', 'x-service-signature': signature }, body });
  return { status: response.status, text: await response.text() };
}

async function allDelivered(url: string): Promise<boolean> {
  const { data: records } = (await (await fetch(`${sandbox.url}/__sandbox/deliveries`)).json()) as { data: { url: string; status: string }[] };
  const ours = records.filter((r) => r.url === url);
  return ours.length > 0 && ours.every((r) => r.status === 'delivered');
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const probe = createServer().once('error', fail);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => done(port));
    });
  });
}

/** Spawns `seedline serve` and resolves once it prints where it listens. */
async function startServe(config: string, env: NodeJS.ProcessEnv): Promise<Served> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'serve', '--config', config], {
    cwd: ROOT,
    env: { ...process.env, ...env, FORCE_COLOR: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((done) => child.once('close', (code) => done(code)));
  const state: Served = { child, stdout: '', stderr: '', exited };
  child.stdout?.on('data', (chunk: Buffer) => (state.stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (state.stderr += chunk.toString()));
  await eventually(async () => state.stdout.includes('listening on') || child.exitCode !== null, 30_000);
  if (!state.stdout.includes('listening on')) throw new Error(`serve did not start:\n${state.stderr}`);
  return state;
}

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 5, rpm: 100_000 });
  const dir = await tempWorkspace();
  dest = { type: 'duckdb', path: join(dir, 'w.duckdb'), schema: 'seedline' };
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  hook = `${base}/webhooks`;
  for (const site of ['serve-ada', 'serve-grace']) {
    const signal = await createSignal(KEY, `https://www.network.example/in/${site}`, hook);
    secrets.set(signal.id, signal.notify.webhook_secret);
  }
  // The account secret signs signal.paused, sent to the fallback endpoint.
  const doomedAccount = await api('/v1/account', { key: DOOMED_KEY, method: 'PATCH', body: { default_webhook_url: hook, fallback_webhook_url: hook } });
  const [first, second] = [...secrets.values()];
  configPath = await writeConfig(dir, {
    api: { base_url: sandbox.url, api_key: KEY },
    destination: dest,
    streams: { triggers: {} },
    webhooks: { secrets: [first, '${SERVE_SECOND_SECRET}', doomedAccount.data.webhook_secret], port },
  });
  env = { SERVE_SECOND_SECRET: second };
  served = await startServe(configPath, env);
}, 60_000);

afterAll(async () => {
  if (served?.child.exitCode === null) served.child.kill('SIGKILL');
  await sandbox?.close();
});

describe('seedline serve', () => {
  it('given a config without webhooks, when serve starts, then it exits 2 naming webhooks.secrets before listening', async () => {
    const dir = await tempWorkspace();
    const bare = await writeConfig(dir, { api: { base_url: sandbox.url, api_key: KEY }, destination: { type: 'duckdb', path: join(dir, 'w.duckdb') }, streams: {} });
    const result = await runCli(['serve', '--config', bare, '--port', '0']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('webhooks.secrets');
    expect(result.stdout).not.toContain('listening on');
  });

  it('given two Signals notifying serve, when their checks trigger, then every Trigger the API lists is a row of triggers', async () => {
    // Enough virtual days for both drifting profiles to change and trigger.
    for (let day = 0; day < 90; day++) await sandbox.clock.advance(DAY);
    await eventually(() => allDelivered(hook), 30_000);
    const triggers = await listTriggers();
    expect(new Set(triggers.map((t) => t.signal_id))).toEqual(new Set(secrets.keys()));
    const rows = await query('select trigger_id, signal_id, check_number, checked_at, diff, criteria_matched from seedline.triggers order by trigger_id');
    const expected = triggers
      .map((t) => ({ trigger_id: t.trigger_id, signal_id: t.signal_id, check_number: t.check_number, checked_at: t.checked_at, diff: t.diff, criteria_matched: t.criteria_matched }))
      .sort((a, b) => a.trigger_id.localeCompare(b.trigger_id));
    const loaded = rows.map((r) => ({
      ...r,
      check_number: Number(r.check_number),
      checked_at: new Date(r.checked_at as string).toISOString(),
      diff: fromJson(r.diff),
      criteria_matched: fromJson(r.criteria_matched),
    }));
    expect(loaded).toEqual(expected);
    expect(served.stderr).toContain(`signal.triggered: loaded trigger ${expected[0]!.trigger_id}`);
  }, 120_000);

  it('given a forged signature, when posted, then 401 with a reason and no row', async () => {
    const body = JSON.stringify({ event: 'signal.triggered', trigger: { ...(await listTriggers())[0], trigger_id: 'trg_forged' } });
    const answer = await post(body, signWebhook('whsec_forged', body));
    expect(answer.status).toBe(401);
    expect(answer.text).toContain('signature_mismatch');
    expect(await rowsOf('trg_forged')).toBe(0);
    expect(served.stderr).not.toContain('whsec_');
  });

  it('given a delivered Trigger, when the same delivery is replayed, then 200 and still one row', async () => {
    const [trigger] = await listTriggers();
    const body = JSON.stringify({ event: 'signal.triggered', trigger });
    for (let attempt = 0; attempt < 2; attempt++) expect((await post(body, signWebhook(secrets.get(trigger.signal_id)!, body))).status).toBe(200);
    expect(await rowsOf(trigger.trigger_id)).toBe(1);
  });

  it('given serve running, when a sync of the triggers stream waits for the destination, then it merges the same Triggers once each', async () => {
    const result = await runCli(['sync', '--config', configPath, '--streams', 'triggers', '--wait'], { env });
    expect(result.code, result.stderr).toBe(0);
    const [counts] = await query('select count(*) as n, count(distinct trigger_id) as ids from seedline.triggers');
    expect(Number(counts?.n)).toBe((await listTriggers()).length);
    expect(Number(counts?.ids)).toBe(Number(counts?.n));
  }, 60_000);

  it('given signed bodies that are not events, when posted, then 400 and each is kept raw in _seedline_rejected with its reason', async () => {
    const secret = [...secrets.values()][0]!;
    const bodies = ['{"event":"signal.triggered","trigger":{"trigger_id":"trg_half"}}', '{"event":"signal.exploded"}', 'not json at all'];
    for (const body of bodies) expect((await post(body, signWebhook(secret, body))).status).toBe(400);
    const rejected = await query(`select "table", record, reason from seedline._seedline_rejected where stream = 'webhooks' order by rejected_at`);
    expect(rejected.map((r) => r.record)).toEqual(bodies);
    expect(rejected[0]).toMatchObject({ table: 'triggers', reason: expect.stringContaining('trigger.signal_id') });
    expect(rejected[2]).toMatchObject({ table: 'webhooks', reason: 'the body is not valid JSON' });
    expect(await rowsOf('trg_half')).toBe(0);
  });

  it('given a body over 1 MB or a GET, when sent, then 413 and 405', async () => {
    const big = JSON.stringify({ event: 'signal.test', pad: 'x'.repeat(1_100_000) });
    expect((await post(big, signWebhook([...secrets.values()][0]!, big))).status).toBe(413);
    expect((await fetch(hook)).status).toBe(405);
  });

  it('given a test webhook, when delivered, then serve says so on stderr and loads nothing', async () => {
    const [signalId] = [...secrets.keys()];
    const before = await listTriggers();
    await api(`/v1/signals/${signalId}/test-webhook`, { method: 'POST' });
    await eventually(async () => served.stderr.includes(`signal.test: test delivery for Signal ${signalId}`));
    const [counts] = await query('select count(*) as n from seedline.triggers');
    expect(Number(counts?.n)).toBe(before.length);
  });

  it('given a Signal whose webhook answers 404, when the service pauses it, then serve names the Signal and the reason', async () => {
    const doomed = await createSignal(DOOMED_KEY, 'https://www.network.example/in/serve-doomed', `${base}/nowhere`);
    for (let day = 0; day < 30 && !(await pausedReason(doomed.id)); day++) await sandbox.clock.advance(DAY);
    expect(await pausedReason(doomed.id)).toBe('webhook_gone');
    await eventually(async () => served.stderr.includes(`signal.paused: Signal ${doomed.id} was paused by the service (reason: webhook_gone)`));
  }, 60_000);

  it('given serve running, when sent SIGTERM, then it finishes and exits 0', async () => {
    served.child.kill('SIGTERM');
    expect(await served.exited).toBe(0);
    expect(served.stderr).toContain('stopping: finishing the deliveries under way');
  });
});

async function pausedReason(signalId: string): Promise<string | null> {
  return (await api<{ data: { paused_reason: string | null } }>(`/v1/signals/${signalId}`, { key: DOOMED_KEY })).data.paused_reason;
}

function fromJson(value: unknown): unknown {
  return typeof value === 'string' ? JSON.parse(value) : value;
}

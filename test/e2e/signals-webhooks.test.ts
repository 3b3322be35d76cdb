import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/index.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { listTaggedSignals } from '../../src/signals/signal-apply.js';
import { runCli, type RunningCli, spawnCli, tempWorkspace, writeConfig } from '../helpers/cli.js';
import { startRecordingProxy, type RecordingProxy } from '../helpers/recording-proxy.js';
import { eventually } from '../helpers/sandbox.js';
import { timeLimit } from '../helpers/time-limits.js';
import { freePort } from '../helpers/free-port.js';

const KEY = 'svc_live_signals_webhooks';
const TAG = 'hooks-watch';
const DAY = 86_400_000;
/** Longer than the service's whole retry schedule (1 m + 5 m + 30 m + 2 h + 6 h). */
const ALL_RETRIES_MS = 9 * 3_600_000;

/** Spawns `seedline serve` and resolves once it prints where it listens. */
async function startServe(config: string): Promise<RunningCli> {
  const served = spawnCli(['serve', '--config', config]);
  await eventually(async () => served.stdout.includes('listening on') || served.child.exitCode !== null);
  if (!served.stdout.includes('listening on')) throw new Error(`serve did not start:\n${served.stderr}`);
  return served;
}

describe("seedline signals: the account's default webhook and following test deliveries", () => {
  let sandbox: Sandbox;
  let proxy: RecordingProxy;
  let client: ApiClient;
  let served: RunningCli;
  let dir: string;
  let hook: string;
  let secretsFile: string;
  /** A loopback URL nothing listens on. */
  let unreachable: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ rpm: 100_000 });
    proxy = await startRecordingProxy(sandbox.url);
    client = new ApiClient({ baseUrl: sandbox.url, apiKey: KEY });
    dir = await tempWorkspace();
    const port = await freePort();
    hook = `http://127.0.0.1:${port}/webhooks`;
    unreachable = `http://127.0.0.1:${await freePort()}/webhooks`;
    secretsFile = join(dir, 'signal-secrets.jsonl');
    const serveConfig = await writeConfig(
      dir,
      {
        api: { base_url: sandbox.url, api_key: KEY },
        destination: { type: 'duckdb', path: join(dir, 'serve.duckdb') },
        streams: { triggers: {} },
        webhooks: { secrets_file: secretsFile, port },
      },
      'serve.yaml',
    );
    served = await startServe(serveConfig);
  });
  afterAll(async () => {
    if (served?.child.exitCode === null) served.child.kill('SIGKILL');
    await client?.close();
    await proxy?.close();
    await sandbox?.close();
  });

  /** The Signals config (no `notify`), with `webhooks` as given, on the recording proxy. */
  const config = (webhooks: Record<string, unknown>) =>
    writeConfig(
      dir,
      {
        api: { base_url: proxy.url, api_key: KEY },
        destination: { type: 'duckdb', path: join(dir, 'w.duckdb') },
        streams: {},
        webhooks: { secrets_file: secretsFile, ...webhooks },
        signals: {
          tag: TAG,
          schedule: { interval: '1d' },
          criteria: { mode: 'field_change', fields: ['headline', 'position'] },
          targets: ['hooks-ada'],
        },
      },
      'signals.yaml',
    );
  const accountPatches = (mark: number) =>
    proxy.seen
      .slice(mark)
      .filter((r) => r.method === 'PATCH' && r.path === '/v1/account')
      .map((r) => JSON.parse(r.body) as unknown);
  const deliveries = async () =>
    (
      (await (await fetch(`${sandbox.url}/__sandbox/deliveries`)).json()) as {
        data: { id: string; event: string; url: string; status: string; attempts: number }[];
      }
    ).data;
  /** A Signal (made directly, not by the config) whose webhook is `url`. */
  const signalNotifying = async (url: string, site: string) =>
    (
      await client.createSignal({
        name: `hooks ${site}`,
        target: { type: 'profile', site_url: site },
        schedule: { interval: '30d' },
        criteria: { mode: 'field_change', fields: ['headline'] },
        notify: { webhook_url: url },
      })
    ).data.id;

  it('given Signals without notify and an account without a default webhook, when planned, then it warns that their events would go nowhere', async () => {
    const plan = await runCli(['signals', 'plan', '--config', await config({})]);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toMatch(/Signals without notify deliver to the account's default webhook: \(none\)/);
    expect(plan.stdout).toMatch(
      /warning: signals\.notify is not set and the account has no default webhook: the events of these Signals would be delivered nowhere; set webhooks\.account_default\.url/,
    );
    const json = await runCli(['signals', 'plan', '--config', await config({}), '--json']);
    expect(JSON.parse(json.stdout).plan.account_webhook).toMatchObject({
      settings: [],
      patch: null,
      default_after_apply: null,
      warning: expect.stringMatching(/would be delivered nowhere/),
    });
  });

  it('given webhooks.account_default naming serve, when planned, applied and applied again, then it is set once, its secret lands only in the secrets file, and the second apply sends nothing', async () => {
    const path = await config({ account_default: { url: hook } });
    let mark = proxy.seen.length;
    const plan = await runCli(['signals', 'plan', '--config', path]);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toMatch(/account webhooks \(webhooks\.account_default\): 1 to update/);
    expect(plan.stdout).toMatch(new RegExp(`default_webhook_url\\s+\\(none\\)\\s+${hook}\\s+update`));
    expect(plan.stdout).not.toMatch(/warning:/);
    expect(accountPatches(mark)).toEqual([]);

    const apply = await runCli(['signals', 'apply', '--config', path]);
    expect(apply.code, apply.stderr).toBe(0);
    expect(accountPatches(mark)).toEqual([{ default_webhook_url: hook }]);
    expect(apply.stdout).toMatch(/account webhooks: updated \(PATCH \/v1\/account\)/);
    expect(apply.stdout).toContain(`the account's webhook secret (shown once by the service;`);
    expect(apply.stdout).toContain(`was appended to ${secretsFile} (mode 0600)`);
    expect(apply.stdout).toMatch(/applied: 1 created/);
    expect(`${apply.stdout}${apply.stderr}`).not.toMatch(/whsec_/);
    const lines = (await readFile(secretsFile, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id?: string; account_id?: string; webhook_secret: string });
    const accountLines = lines.filter((l) => l.id === undefined);
    expect(accountLines).toEqual([{ account_id: expect.stringMatching(/^acct_/), webhook_secret: expect.any(String) }]);
    expect(accountLines[0]!.webhook_secret).toMatch(/^whsec_/);
    expect((await client.getAccount()).data.default_webhook_url).toBe(hook);

    mark = proxy.seen.length;
    const again = await runCli(['signals', 'apply', '--config', path]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/account webhooks \(webhooks\.account_default\): unchanged/);
    expect(again.stdout).toMatch(/0 to create, 0 to update, 0 to prune, 1 unchanged/);
    expect(accountPatches(mark)).toEqual([]);
    expect(proxy.seen.slice(mark).filter((r) => r.method !== 'GET')).toEqual([]);
  });

  it('given a Signal declared without notify, when its check triggers, then the Trigger is delivered to the default webhook and serve queues it', async () => {
    const [signal] = await listTaggedSignals(client, TAG);
    expect(signal?.notify?.webhook_url ?? null).toBeNull();
    let triggers: { trigger_id: string }[] = [];
    for (let day = 0; day < 90 && triggers.length === 0; day++) {
      await sandbox.clock.advance(DAY);
      triggers = (await client.listTriggers({ signal_id: signal!.id })).data;
    }
    expect(triggers.length).toBeGreaterThan(0);
    await eventually(async () => {
      const triggered = (await deliveries()).filter((d) => d.event === 'signal.triggered');
      return triggered.length > 0 && triggered.every((d) => d.url === hook && d.status === 'delivered');
    });
    await eventually(async () => served.stderr.includes(`signal.triggered: queued trigger ${triggers[0]!.trigger_id}`));
    expect(served.stderr).not.toMatch(/webhook refused/);
  });

  it("given the account's secret kept by apply in serve's secrets file, when a batch.completed signed with it reaches serve, then serve accepts it", async () => {
    const { data: job } = await client.submitBatch({
      items: [{ operation: 'profiles.enrich', params: { url: 'hooks-batch-person' }, ref: 'hooks-batch-person' }],
      webhook_url: hook,
    });
    await sandbox.idle();
    await eventually(async () =>
      (await deliveries()).some((d) => d.event === 'batch.completed' && d.status !== 'retrying'),
    );
    expect((await deliveries()).filter((d) => d.event === 'batch.completed')).toEqual([
      expect.objectContaining({ url: hook, status: 'delivered', attempts: 1 }),
    ]);
    await eventually(async () => served.stderr.includes(`batch.completed: job ${job.job_id} is completed`));
  });

  it('given serve at the default webhook, when test-webhook runs, then it follows the delivery to delivered and exits 0', async () => {
    const [signal] = await listTaggedSignals(client, TAG);
    const test = await runCli(['signals', 'test-webhook', signal!.id, '--config', await config({})]);
    expect(test.code, test.stderr).toBe(0);
    expect(test.stdout).toMatch(new RegExp(`\\S+\\s+signal\\.test\\s+${hook}`));
    expect(test.stdout).toMatch(/following it for up to 60 s/);
    expect(test.stdout).toMatch(
      new RegExp(`delivered: signal\\.test wh_\\S+ reached ${hook} \\(the receiver answered 2xx\\) after 1 attempt`),
    );
    await eventually(async () => served.stderr.includes(`signal.test: test delivery for Signal ${signal!.id}`));
  });

  it('given an unreachable webhook, when test-webhook waits 1 s or not at all, then it says the delivery is not final and how to check later, exit 3 and 0', async () => {
    const id = await signalNotifying(unreachable, 'hooks-grace');
    const path = await config({});
    const waited = await runCli(['signals', 'test-webhook', id, '--config', path, '--wait', '1']);
    expect(waited.code, waited.stderr).toBe(3);
    const delivery = /not delivered yet: (wh_\S+) is still retrying after waiting 1 s/.exec(waited.stdout)?.[1];
    expect(delivery, waited.stdout).toBeDefined();
    expect(waited.stdout).toContain(`check it later with: seedline signals delivery ${delivery} --config ${path}`);

    const shown = await runCli(['signals', 'delivery', delivery!, '--config', path, '--json']);
    expect(shown.code, shown.stderr).toBe(3);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      outcome: 'pending',
      delivery: { id: delivery, status: 'retrying' },
    });

    const unfollowed = await runCli(['signals', 'test-webhook', id, '--config', path, '--wait', '0']);
    expect(unfollowed.code, unfollowed.stderr).toBe(0);
    expect(unfollowed.stdout).toMatch(/not followed \(--wait 0\): see how it went with seedline signals delivery wh_/);
  });

  it("given an unreachable webhook, when test-webhook follows it through the service's retries, then it ends failed, exit 1, naming the last error and what to check", async () => {
    const id = await signalNotifying(unreachable, 'hooks-linus');
    const path = await config({});
    // Bounded below the test's own limit, so a delivery that never ends shows as exit 3, not a hang.
    const wait = String(Math.round(timeLimit(200_000) / 1000));
    const following = spawnCli(['signals', 'test-webhook', id, '--config', path, '--wait', wait]);
    // The retries wait on the sandbox's virtual clock: move it once the first attempt has failed.
    await eventually(async () => /attempt 1 failed/.test(following.stdout) || following.child.exitCode !== null);
    await sandbox.clock.advance(ALL_RETRIES_MS);
    const code = await following.exited;
    expect(code, `${following.stdout}\n${following.stderr}`).toBe(1);
    const delivery =
      /failed: signal\.test (wh_\S+) to (\S+) failed after 6 attempts; last error: delivery failed: fetch failed \(ECONNREFUSED\)/.exec(
        following.stdout,
      );
    expect(delivery?.[2], following.stdout).toBe(unreachable);
    expect(following.stdout.match(/attempt 1 failed/g)).toHaveLength(1);
    expect(following.stdout).toContain(
      `is \`seedline serve\` (or your receiver) running and reachable from the service at ${unreachable}?`,
    );
    expect(following.stdout).toMatch(/does the receiver verify with the Signal's webhook secret\?/);
    expect((await deliveries()).find((d) => d.id === delivery![1])).toMatchObject({ status: 'failed', attempts: 6 });

    const shown = await runCli(['signals', 'delivery', delivery![1]!, '--config', path]);
    expect(shown.code).toBe(1);
    expect(shown.stdout).toMatch(/failed after 6 attempts/);
  });
});

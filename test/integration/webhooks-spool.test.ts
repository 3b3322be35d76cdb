import { chmod, mkdtemp, readdir, utimes, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { signWebhook } from '../../src/client/webhook-signature.js';
import { DestinationLockedError } from '../../src/destinations/destination-error.js';
import { TableShaper } from '../../src/normalize/table-shaper.js';
import { loadManifests } from '../../src/manifest/load-manifests.js';
import { DeliverySpool, fileNameOf } from '../../src/webhooks/delivery-spool.js';
import { SpoolDrainer, type SpoolDrainerOptions } from '../../src/webhooks/spool-drainer.js';
import { WebhookReceiver } from '../../src/webhooks/webhook-receiver.js';
import { WebhookSecrets } from '../../src/webhooks/webhook-secrets.js';
import { backendAvailable, destinationKinds, makeTestTarget, type TestTarget } from '../helpers/destinations.js';
import { eventually } from '../helpers/sandbox.js';

const SECRET = 'whsec_integration';
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function trigger(id: string, signal: string, checkNumber: number): Record<string, unknown> {
  return {
    trigger_id: id,
    signal_id: signal,
    check_number: checkNumber,
    checked_at: new Date(Date.UTC(2026, 0, checkNumber)).toISOString(),
    diff: { headline: { before: 'a', after: 'b' } },
    criteria_matched: ['headline'],
  };
}

async function tempSpool(): Promise<DeliverySpool> {
  return new DeliverySpool(join(await mkdtemp(join(tmpdir(), 'seedline-spool-')), 'spool'));
}

async function startReceiver(
  spool: DeliverySpool,
  options: Partial<ConstructorParameters<typeof WebhookReceiver>[0]> = {},
): Promise<string> {
  const lines: string[] = [];
  const receiver = new WebhookReceiver({
    secrets: [SECRET],
    sink: { accept: (d) => spool.put(d) },
    log: (line) => lines.push(line),
    ...options,
  });
  const url = await receiver.listen(0, '127.0.0.1');
  cleanups.push(() => receiver.close());
  return url;
}

async function post(url: string, body: string, signature?: string): Promise<{ status: number; text: string }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (signature) headers['x-service-signature'] = signature;
  const response = await fetch(url, { method: 'POST', headers, body });
  return { status: response.status, text: await response.text() };
}

/** Sends `request` raw and returns everything the server wrote before it closed the connection. */
function rawExchange(url: string, request: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((done, fail) => {
    const socket = connect(Number(port), hostname, () => socket.write(request));
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString()));
    socket.on('error', fail);
    socket.on('close', () => done(received));
  });
}

describe('webhook receiver and spool', () => {
  it('given a client that never finishes its headers, when the headers timeout passes, then it is answered 408 and closed, and nothing is spooled', async () => {
    const spool = await tempSpool();
    const url = await startReceiver(spool, { headersTimeoutMs: 300, requestTimeoutMs: 600 });
    const answer = await rawExchange(url, 'POST /webhooks HTTP/1.1\r\nHost: receiver\r\nX-Slow: ');
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(await spool.size()).toBe(0);
  });

  it('given a client that sends half its body, when the request timeout passes, then it is answered 408 and closed, and nothing is spooled', async () => {
    const spool = await tempSpool();
    const url = await startReceiver(spool, { headersTimeoutMs: 300, requestTimeoutMs: 600 });
    const answer = await rawExchange(
      url,
      `POST /webhooks HTTP/1.1\r\nHost: receiver\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"event":`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(await spool.size()).toBe(0);
  });

  it('given a page served by the receiver, when asked from this machine it answers; when asked over another interface, then 403', async ({
    skip,
  }) => {
    const outside = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && !a.internal && a.family === 'IPv4')?.address;
    const receiver = new WebhookReceiver({
      secrets: [SECRET],
      sink: { accept: async () => true },
      log: () => undefined,
      pages: { '/report': async () => ({ contentType: 'text/html; charset=utf-8', body: '<p>report</p>' }) },
    });
    const url = new URL(await receiver.listen(0, '0.0.0.0'));
    cleanups.push(() => receiver.close());
    const local = await fetch(`http://127.0.0.1:${url.port}/report`);
    expect([local.status, local.headers.get('content-type'), await local.text()]).toEqual([
      200,
      'text/html; charset=utf-8',
      '<p>report</p>\n',
    ]);
    if (!outside) return skip();
    const remote = await fetch(`http://${outside}:${url.port}/report`);
    expect(remote.status).toBe(403);
    expect(await remote.text()).toMatch(/served to this machine only/);
  });

  it('given the same Trigger delivered twice, when both are answered, then both are 200 and the spool holds one file', async () => {
    const spool = await tempSpool();
    const url = await startReceiver(spool);
    const body = JSON.stringify({ event: 'signal.triggered', trigger: trigger('trg_twice', 'sig_a', 1) });
    expect(await post(url, body, signWebhook(SECRET, body))).toEqual({
      status: 200,
      text: 'ok: trigger trg_twice queued\n',
    });
    expect(await post(url, body, signWebhook(SECRET, body))).toEqual({
      status: 200,
      text: 'ok: trigger trg_twice already queued\n',
    });
    expect(await spool.size()).toBe(1);
    expect((await readdir(spool.dir)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('given a signed body that is not an event, when posted, then it is spooled with its reason and answered 202, so the service neither retries nor pauses the Signal', async () => {
    const spool = await tempSpool();
    const url = await startReceiver(spool);
    const body = '{"event":"signal.exploded"}';
    const answer = await post(url, body, signWebhook(SECRET, body));
    expect(answer.status).toBe(202);
    const [entry] = await spool.list();
    expect(entry?.delivery).toMatchObject({
      raw: body,
      rejected: { table: 'webhooks', reason: expect.stringContaining('signal.exploded') },
    });
  });

  it('given one request in flight at a cap of one, when another arrives, then it is answered 503 with Retry-After at once, and the first still 200', async () => {
    const spool = await tempSpool();
    let entered!: () => void;
    const inSink = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const lines: string[] = [];
    const url = await startReceiver(spool, {
      maxInFlight: 1,
      log: (line) => lines.push(line),
      sink: {
        accept: async (delivery) => {
          entered();
          await released;
          return spool.put(delivery);
        },
      },
    });
    const first = JSON.stringify({ event: 'signal.triggered', trigger: trigger('trg_first', 'sig_a', 1) });
    const answered = post(url, first, signWebhook(SECRET, first));
    await inSink;
    const second = JSON.stringify({ event: 'signal.triggered', trigger: trigger('trg_second', 'sig_a', 2) });
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'x-service-signature': signWebhook(SECRET, second) },
      body: second,
    });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    release();
    expect((await answered).status).toBe(200);
    expect(await spool.size()).toBe(1);
    expect(lines).toContainEqual(expect.stringContaining('1 requests already in flight (webhooks.max_in_flight)'));
  });

  it('given an X-Service-Event header that differs from the signed body, when posted, then the body decides and the mismatch is logged in one line', async () => {
    const spool = await tempSpool();
    const lines: string[] = [];
    const url = await startReceiver(spool, { log: (line) => lines.push(line) });
    const body = JSON.stringify({ event: 'signal.triggered', trigger: trigger('trg_header', 'sig_a', 1) });
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'x-service-event': 'signal.test', 'x-service-signature': signWebhook(SECRET, body) },
      body,
    });
    expect(response.status).toBe(200);
    expect((await spool.list())[0]?.delivery).toMatchObject({ key: 'trigger:trg_header', event: 'signal.triggered' });
    expect(lines).toContain(
      'warning: X-Service-Event says "signal.test" but the signed body is signal.triggered: read as signal.triggered',
    );
  });

  it('given a secrets file written after serve started, when a Signal signs with its secret, then 401 before and 200 once the file holds it', async () => {
    const spool = await tempSpool();
    const file = join(spool.dir, '..', 'signal-secrets.jsonl');
    const lines: string[] = [];
    const url = await startReceiver(spool, {
      secrets: new WebhookSecrets({ fixed: [SECRET], file, log: (line) => lines.push(line) }),
    });
    const body = JSON.stringify({ event: 'signal.triggered', trigger: trigger('trg_new_signal', 'sig_new', 1) });
    expect((await post(url, body, signWebhook('whsec_new_signal', body))).status).toBe(401);
    await writeFile(
      file,
      `${JSON.stringify({ id: 'sig_new', site_url: 'x', webhook_secret: 'whsec_new_signal' })}\nnot json\n`,
    );
    await chmod(file, 0o644);
    expect((await post(url, body, signWebhook('whsec_new_signal', body))).status).toBe(200);
    expect(lines.join('\n')).toContain('line 2 is not');
    expect(lines.join('\n')).toContain('readable by others (mode 644)');
    expect(lines.join('\n')).not.toContain('whsec_new_signal');
  });
});

describe('delivery spool on disk', () => {
  it('given a spool folder not created yet, when counted, then 0; given a path through a file, then the error surfaces instead of a silent 0', async () => {
    expect(await (await tempSpool()).size()).toBe(0);
    const dir = await mkdtemp(join(tmpdir(), 'seedline-spool-'));
    await writeFile(join(dir, 'blocker'), 'a file');
    const blocked = new DeliverySpool(join(dir, 'blocker', 'spool'));
    await expect(blocked.size()).rejects.toMatchObject({ code: 'ENOTDIR' });
    await expect(blocked.stats()).rejects.toMatchObject({ code: 'ENOTDIR' });
  });

  it('given the same delivery put three times at once, when all finish, then exactly one put queued it and one file holds it', async () => {
    const spool = await tempSpool();
    const delivery = {
      key: 'trigger:trg_race',
      event: 'signal.triggered',
      receivedAt: new Date().toISOString(),
      raw: '{}',
    };
    const queued = await Promise.all([spool.put(delivery), spool.put(delivery), spool.put(delivery)]);
    expect(queued.filter(Boolean)).toHaveLength(1);
    expect(await readdir(spool.dir)).toEqual([fileNameOf('trigger:trg_race')]);
  });

  it('given a temporary file a crash left an hour ago and one being written now, when the spool is checked, then only the stale one is deleted', async () => {
    const spool = await tempSpool();
    await spool.check();
    const stale = join(spool.dir, '.abc.json.1.tmp');
    const fresh = join(spool.dir, '.abc.json.2.tmp');
    await writeFile(stale, '{"half":');
    await writeFile(fresh, '{"half":');
    const hourAgo = new Date(Date.now() - 3_600_000);
    await utimes(stale, hourAgo, hourAgo);
    await spool.check();
    expect(await readdir(spool.dir)).toEqual(['.abc.json.2.tmp']);
  });

  it('given two deliveries accepted a minute apart, when the spool is asked for its stats, then it counts both and the oldest is the earlier acceptance', async () => {
    const spool = await tempSpool();
    expect(await spool.stats()).toEqual({ count: 0, oldestAt: null });
    const delivery = (key: string, receivedAt: string) => ({ key, event: 'signal.test', receivedAt, raw: '{}' });
    await spool.put(delivery('a', '2026-01-01T00:01:00.000Z'));
    await spool.put(delivery('b', '2026-01-01T00:00:00.000Z'));
    expect(await spool.stats()).toEqual({ count: 2, oldestAt: new Date('2026-01-01T00:00:00.000Z') });
    expect((await spool.list()).map((e) => e.delivery.key)).toEqual(['b', 'a']);
  });
});

describe('webhook secrets per Signal', () => {
  it("given a secrets file with two Signals, when a Trigger names one Signal but is signed with the other's secret, then 401; signed with its own, 200", async () => {
    const spool = await tempSpool();
    const file = join(spool.dir, '..', 'signal-secrets.jsonl');
    const line = (id: string) => JSON.stringify({ id, site_url: id, webhook_secret: `whsec_${id}` });
    await writeFile(file, `${line('sig_a')}\n${line('sig_b')}\n`, { mode: 0o600 });
    const url = await startReceiver(spool, {
      secrets: new WebhookSecrets({ fixed: [SECRET], file, log: () => undefined }),
    });
    const body = JSON.stringify({ event: 'signal.triggered', trigger: trigger('trg_claims_b', 'sig_b', 1) });
    expect(await post(url, body, signWebhook('whsec_sig_a', body))).toMatchObject({
      status: 401,
      text: expect.stringContaining('signature_mismatch'),
    });
    expect((await post(url, body, signWebhook('whsec_sig_b', body))).status).toBe(200);
    const batch = JSON.stringify({ event: 'batch.completed', job: { job_id: 'job_x', status: 'completed', total: 1 } });
    expect((await post(url, batch, signWebhook('whsec_sig_a', batch))).status).toBe(401);
    expect((await post(url, batch, signWebhook(SECRET, batch))).status).toBe(200);
  });

  it('given only a secrets file, when a Trigger names a Signal it does not hold, then 401 naming why no secret could match', async () => {
    const spool = await tempSpool();
    const file = join(spool.dir, '..', 'signal-secrets.jsonl');
    await writeFile(file, `${JSON.stringify({ id: 'sig_a', webhook_secret: 'whsec_sig_a' })}\n`, { mode: 0o600 });
    const url = await startReceiver(spool, { secrets: new WebhookSecrets({ file, log: () => undefined }) });
    const body = JSON.stringify({ event: 'signal.triggered', trigger: trigger('trg_unknown', 'sig_unknown', 1) });
    expect(await post(url, body, signWebhook('whsec_sig_a', body))).toMatchObject({
      status: 401,
      text: expect.stringContaining('not in webhooks.secrets_file'),
    });
    expect(await spool.size()).toBe(0);
  });
});

describe.each(destinationKinds)('spool drainer into %s', (kind) => {
  async function target(): Promise<TestTarget | undefined> {
    if (!(await backendAvailable(kind))) return undefined;
    const made = makeTestTarget(kind);
    cleanups.push(() => made.dispose());
    return made;
  }

  async function drainerFor(
    made: TestTarget,
    spool: DeliverySpool,
    lines: string[],
    chunkFiles?: number,
    extra: Partial<SpoolDrainerOptions> = {},
  ): Promise<SpoolDrainer> {
    const manifest = (await loadManifests()).get('triggers')!;
    const shaper = TableShaper.of(manifest.table, {
      options: {},
      run: { id: 'serve_test', started_at: new Date().toISOString() },
    });
    const open = async () => {
      const destination = await made.open();
      try {
        await destination.lock({ holder: 'drainer test' });
        await destination.ensureSystemTables();
      } catch (error) {
        await destination.close();
        throw error;
      }
      return { destination, close: () => destination.close() };
    };
    return new SpoolDrainer({
      spool,
      open,
      shaper,
      runId: 'serve_test',
      log: (line) => lines.push(line),
      retryMs: 50,
      ...(chunkFiles ? { chunkFiles } : {}),
      ...extra,
    });
  }

  it('given Triggers out of order, a test, a pause and a batch event spooled, when drained, then triggers holds the Triggers once in check_number order and webhook_events the rest', async ({
    skip,
  }) => {
    const made = await target();
    if (!made) return skip();
    const spool = await tempSpool();
    const url = await startReceiver(spool);
    const events = [
      { event: 'signal.triggered', trigger: trigger('trg_3', 'sig_a', 3) },
      { event: 'signal.triggered', trigger: trigger('trg_1', 'sig_a', 1) },
      { event: 'signal.triggered', trigger: trigger('trg_2', 'sig_a', 2) },
      { event: 'signal.triggered', trigger: trigger('trg_1', 'sig_a', 1) },
      { event: 'signal.test', test: true, signal_id: 'sig_a', diff: { headline: { before: 'x', after: 'y' } } },
      { event: 'signal.paused', signal: { id: 'sig_b', status: 'paused', paused_reason: 'insufficient_credits' } },
      { event: 'batch.completed', job: { job_id: 'job_1', status: 'completed', total: 2 } },
    ];
    for (const event of events) {
      const body = JSON.stringify(event);
      expect((await post(url, body, signWebhook(SECRET, body))).status).toBe(200);
    }
    const lines: string[] = [];
    const drainer = await drainerFor(made, spool, lines);
    expect(await drainer.drainOnce()).toEqual({ triggers: 3, events: 3, rejected: 0, files: 6 });
    expect(await spool.size()).toBe(0);
    expect(await drainer.drainOnce()).toEqual({ triggers: 0, events: 0, rejected: 0, files: 0 });
    const reader = await made.open();
    const rows = await reader.query(
      `select trigger_id, check_number from ${made.kind === 'duckdb' ? 'seedline' : made.where}.triggers order by _loaded_at, check_number`,
    );
    expect(rows.map((r) => [r.trigger_id, Number(r.check_number)])).toEqual([
      ['trg_1', 1],
      ['trg_2', 2],
      ['trg_3', 3],
    ]);
    const recorded = await reader.query(
      `select event, subject_id, test from ${made.kind === 'duckdb' ? 'seedline' : made.where}.webhook_events order by event`,
    );
    expect(recorded).toEqual([
      { event: 'batch.completed', subject_id: 'job_1', test: false },
      { event: 'signal.paused', subject_id: 'sig_b', test: false },
      { event: 'signal.test', subject_id: 'sig_a', test: true },
    ]);
    expect(lines[0]).toContain('loaded 3 triggers into triggers: trg_1 (Signal sig_a, check 1), trg_2');
  });

  it("given a Trigger and a batch.completed spooled, when a sync drains them (leaveBatchCompleted), then the Trigger loads and batch.completed stays spooled until serve's drain hands its job to onBatchCompleted", async ({
    skip,
  }) => {
    const made = await target();
    if (!made) return skip();
    const spool = await tempSpool();
    const url = await startReceiver(spool);
    for (const event of [
      { event: 'signal.triggered', trigger: trigger('trg_sync', 'sig_a', 1) },
      { event: 'batch.completed', job: { job_id: 'job_for_serve', status: 'completed', total: 1 } },
    ]) {
      const body = JSON.stringify(event);
      expect((await post(url, body, signWebhook(SECRET, body))).status).toBe(200);
    }
    const lines: string[] = [];
    const sync = await drainerFor(made, spool, lines, undefined, { leaveBatchCompleted: true });
    expect(await sync.drainOnce()).toEqual({ triggers: 1, events: 0, rejected: 0, files: 1 });
    expect((await spool.list()).map((e) => e.delivery.key)).toEqual(['job:job_for_serve']);

    const completed: string[] = [];
    const serve = await drainerFor(made, spool, lines, undefined, {
      onBatchCompleted: async (jobIds) => void completed.push(...jobIds),
    });
    expect(await serve.drainOnce()).toEqual({ triggers: 0, events: 1, rejected: 0, files: 1 });
    expect(completed).toEqual(['job_for_serve']);
    expect(await spool.size()).toBe(0);
  });

  it('given five spooled Triggers and chunks of two files, when drained, then three load units load them all, oldest first, and the spool is empty', async ({
    skip,
  }) => {
    const made = await target();
    if (!made) return skip();
    const spool = await tempSpool();
    const url = await startReceiver(spool);
    for (let n = 1; n <= 5; n++) {
      const body = JSON.stringify({ event: 'signal.triggered', trigger: trigger(`trg_chunk_${n}`, 'sig_a', n) });
      expect((await post(url, body, signWebhook(SECRET, body))).status).toBe(200);
    }
    const lines: string[] = [];
    const drainer = await drainerFor(made, spool, lines, 2);
    expect(await drainer.drainOnce()).toEqual({ triggers: 5, events: 0, rejected: 0, files: 5 });
    expect(await spool.size()).toBe(0);
    const loads = lines.filter((l) => l.startsWith('signal.triggered: loaded'));
    expect(loads).toHaveLength(3);
    expect(loads[0]).toContain('loaded 2 triggers into triggers: trg_chunk_1 (Signal sig_a, check 1), trg_chunk_2');
    expect(loads[2]).toContain('loaded 1 trigger into triggers: trg_chunk_5');
  });

  it('given a spool file that is not a delivery beside a good one, when drained, then the good one loads and the bad one is set aside as .bad and reported', async ({
    skip,
  }) => {
    const made = await target();
    if (!made) return skip();
    const spool = await tempSpool();
    const url = await startReceiver(spool);
    const body = JSON.stringify({ event: 'signal.triggered', trigger: trigger('trg_beside_bad', 'sig_a', 1) });
    expect((await post(url, body, signWebhook(SECRET, body))).status).toBe(200);
    await writeFile(join(spool.dir, 'garbage.json'), '{"half":');
    const lines: string[] = [];
    const drainer = await drainerFor(made, spool, lines);
    expect(await drainer.drainOnce()).toMatchObject({ triggers: 1, files: 1 });
    expect((await readdir(spool.dir)).sort()).toEqual(['garbage.json.bad']);
    expect(lines).toContainEqual(
      expect.stringMatching(/^spool: garbage\.json is unreadable \(.*\); set aside as garbage\.json\.bad$/),
    );
  });

  it('given another writer holding the destination, when the drainer is kicked, then the deliveries stay spooled until the writer lets go, then load', async ({
    skip,
  }) => {
    const made = await target();
    if (!made) return skip();
    const spool = await tempSpool();
    const url = await startReceiver(spool);
    const body = JSON.stringify({ event: 'signal.triggered', trigger: trigger('trg_waits', 'sig_a', 1) });
    expect((await post(url, body, signWebhook(SECRET, body))).status).toBe(200);
    const holder = await made.open();
    await holder.lock({ holder: 'a long sync' });
    const lines: string[] = [];
    const drainer = await drainerFor(made, spool, lines);
    await expect(drainer.drainOnce()).rejects.toBeInstanceOf(DestinationLockedError);
    drainer.kick();
    await eventually(async () => lines.some((l) => l.includes('the destination is busy')));
    expect(await spool.size()).toBe(1);
    expect(drainer.problem).toContain('the destination is busy (a long sync');
    await holder.close();
    await eventually(async () => (await spool.size()) === 0);
    await drainer.stop();
    expect(drainer.problem).toBeNull();
    expect(lines.some((l) => l.includes('loaded 1 trigger into triggers: trg_waits'))).toBe(true);
  });
});

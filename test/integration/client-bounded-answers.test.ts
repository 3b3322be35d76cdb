import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openSession } from '../../src/cli/open-session.js';
import { ApiClient } from '../../src/client/api-client.js';
import type { ApiClientOptions, ClientEvent } from '../../src/client/api-client.js';
import { AnswerOverdueError, AnswerTooLargeError, CallAbortedError } from '../../src/client/index.js';
import { RateLimiter } from '../../src/client/rate-limiter.js';
import { tempWorkspace, writeConfig } from '../helpers/cli.js';
import { accountRecord, ClientTestServer, fail, ok } from '../helpers/client-test-server.js';
import type { Responder } from '../helpers/client-test-server.js';

const API_KEY = 'svc_live_B0undedAnswersKeyNeverShown';
const CAP = 256 * 1024;
const HUGE = 256 * 1024 * 1024;
const batchBody = { items: [{ operation: 'profiles.enrich' as const, params: { url: 'jane' }, ref: 'a' }] };

let server: ClientTestServer;
const clients: ApiClient[] = [];

function client(options: Partial<ApiClientOptions> = {}): ApiClient {
  const instance = new ApiClient({
    baseUrl: server.baseUrl,
    apiKey: API_KEY,
    maxAnswerBytes: CAP,
    retry: { baseDelayMs: 10, random: () => 0.5 },
    ...options,
  });
  clients.push(instance);
  return instance;
}

/** What the server saw of one answer it wrote: the bytes handed to the socket, and whether it got to the end. */
interface Written {
  bytes: number;
  finished: boolean;
}

/** A promise and the function that settles it. */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Settles with what was written once the connection closes (the client cut it, or the answer ended). */
function closedOf(res: ServerResponse, written: { bytes: number }): Promise<Written> {
  return new Promise((resolve) =>
    res.on('close', () => resolve({ bytes: written.bytes, finished: res.writableFinished })),
  );
}

function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * An answer of `total` bytes written as fast as the client reads it (with a Content-Length when
 * `declare`): `closed` tells how far it got when the connection closed.
 */
function bigAnswer(total: number, declare = false): { responder: Responder; closed: Promise<Written> } {
  const seen = deferred<Written>();
  const responder: Responder = (_req, res) => {
    const written = { bytes: 0 };
    void closedOf(res, written).then(seen.resolve);
    res.writeHead(200, { 'content-type': 'application/json', ...(declare ? { 'content-length': String(total) } : {}) });
    void pump(res, total, written);
  };
  return { responder, closed: seen.promise };
}

async function pump(res: ServerResponse, total: number, written: { bytes: number }): Promise<void> {
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  while (written.bytes < total && !res.destroyed) {
    written.bytes += chunk.byteLength;
    if (!res.write(chunk)) await drainedOrClosed(res);
  }
  if (!res.destroyed) res.end();
}

/** Headers and one byte, then nothing more: a drip that never ends. `closed` settles when the client lets go. */
function drip(): { responder: Responder; closed: Promise<Written> } {
  const seen = deferred<Written>();
  const responder: Responder = (_req, res) => {
    const written = { bytes: 1 };
    void closedOf(res, written).then(seen.resolve);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{');
  };
  return { responder, closed: seen.promise };
}

/** Never answers; `arrived` settles when the request is in, `closed` when the client lets go. */
function hang(): { responder: Responder; arrived: Promise<void>; closed: Promise<Written> } {
  const arrived = deferred<void>();
  const seen = deferred<Written>();
  const responder: Responder = (_req, res) => {
    void closedOf(res, { bytes: 0 }).then(seen.resolve);
    arrived.resolve();
  };
  return { responder, arrived: arrived.promise, closed: seen.promise };
}

beforeAll(async () => {
  server = await ClientTestServer.start();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  server.reset();
});
afterAll(async () => {
  await server.close();
});

describe('ApiClient: an answer larger than maxAnswerBytes', () => {
  it('given a billed search whose answer streams past the cap, when called, then the connection is cut before the server wrote it all, the call is sent once and fails with SEEDLINE_ANSWER_TOO_LARGE', async () => {
    const big = bigAnswer(HUGE);
    server.on('/v1/search/people', big.responder);
    const error = await client()
      .searchPeople({ filters: { titles: ['CTO'] } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AnswerTooLargeError);
    expect((error as AnswerTooLargeError).code).toBe('SEEDLINE_ANSWER_TOO_LARGE');
    expect((error as AnswerTooLargeError).receivedBytes).toBeGreaterThan(CAP);
    expect((error as AnswerTooLargeError).receivedBytes).toBeLessThan(HUGE);
    expect((error as Error).message).toContain('api.max_answer_bytes (256 KiB)');
    expect((error as Error).message).not.toContain(API_KEY);
    const written = await big.closed;
    expect(written.finished).toBe(false);
    expect(written.bytes).toBeLessThan(HUGE);
    expect(server.requestsTo('/v1/search/people')).toHaveLength(1);
  });

  it('given a Content-Length over the cap, when called, then no body is read and the error names the announced size', async () => {
    const big = bigAnswer(HUGE, true);
    server.on('/v1/profiles/enrich', big.responder);
    const error = await client()
      .enrichProfile({ url: 'jane' })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'SEEDLINE_ANSWER_TOO_LARGE', receivedBytes: HUGE, maxBytes: CAP, status: 200 });
    expect((error as Error).message).toContain(`announces ${HUGE} bytes`);
    expect((await big.closed).finished).toBe(false);
    expect(server.requestsTo('/v1/profiles/enrich')).toHaveLength(1);
  });

  it('given a free GET answered over the cap every time, when read, then it is retried like a 504 and fails with SEEDLINE_ANSWER_TOO_LARGE after the last attempt', async () => {
    server.otherwise(bigAnswer(HUGE).responder);
    const events: ClientEvent[] = [];
    const error = await client({ retry: { maxAttempts: 3, baseDelayMs: 10 }, onEvent: (e) => events.push(e) })
      .getBatchResults('job_1')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AnswerTooLargeError);
    expect(server.requestsTo('/v1/batch/job_1/results')).toHaveLength(3);
    expect(events.filter((e) => e.type === 'retry').map((e) => (e.type === 'retry' ? e.code : ''))).toEqual([
      'SEEDLINE_ANSWER_TOO_LARGE',
      'SEEDLINE_ANSWER_TOO_LARGE',
    ]);
  });

  it('given an answer exactly at the cap, when read, then it is accepted', async () => {
    const text = JSON.stringify({ data: accountRecord(), meta: { requestId: 'req_cap' } });
    server.on('/v1/account', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(text.padEnd(CAP, ' '));
    });
    const { data } = await client().getAccount();
    expect(data.account_id).toBe('acc_123');
  });
});

/**
 * The call deadline of these tests. What must come before it (the first byte of a drip, a whole
 * loopback answer on a retry) takes milliseconds; 1 s leaves room for a loaded machine, where
 * 300 ms did not always.
 */
const DEADLINE_MS = 1_000;

describe('ApiClient: an answer later than callDeadlineMs', () => {
  it('given a free GET whose answer drips one byte and stops, when read with a 1 s deadline, then each attempt is cut and the call fails with SEEDLINE_ANSWER_OVERDUE', async () => {
    const first = drip();
    server.on('/v1/account', first.responder, drip().responder);
    const error = await client({ callDeadlineMs: DEADLINE_MS, retry: { maxAttempts: 2, baseDelayMs: 10 } })
      .getAccount()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AnswerOverdueError);
    expect(error).toMatchObject({ code: 'SEEDLINE_ANSWER_OVERDUE', deadlineMs: DEADLINE_MS, receivedBytes: 1 });
    expect((error as Error).message).toContain('api.call_deadline (1s)');
    expect((await first.closed).finished).toBe(false);
    expect(server.requestsTo('/v1/account')).toHaveLength(2);
  });

  it('given a billed enrich whose headers never come, when called with a 1 s deadline, then it is sent once and fails with SEEDLINE_ANSWER_OVERDUE before any answer', async () => {
    const silent = hang();
    server.on('/v1/profiles/enrich', silent.responder);
    const error = await client({ callDeadlineMs: DEADLINE_MS })
      .enrichProfile({ url: 'jane' })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'SEEDLINE_ANSWER_OVERDUE', receivedBytes: undefined, maybeProcessed: true });
    expect((error as Error).message).toContain('no answer had started');
    await silent.closed;
    expect(server.requestsTo('/v1/profiles/enrich')).toHaveLength(1);
  });

  it('given a batch submission whose first answer drips, when submitted, then it is retried with the same Idempotency-Key and succeeds', async () => {
    server.on('/v1/batch', drip().responder, ok({ job_id: 'job_9', status: 'queued', total: 1 }, {}, 202));
    const { data } = await client({ callDeadlineMs: DEADLINE_MS }).submitBatch(batchBody);
    expect(data.job_id).toBe('job_9');
    const keys = server.requestsTo('/v1/batch').map((r) => r.headers['idempotency-key']);
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
  });
});

describe('ApiClient: the stop signal', () => {
  it('given a call whose answer never comes, when the signal aborts, then it ends with SEEDLINE_CALL_ABORTED at once and the server sees the connection close', async () => {
    const silent = hang();
    server.on('/v1/search/people', silent.responder);
    const stop = new AbortController();
    const call = client({ signal: stop.signal }).searchPeople({ filters: { titles: ['CTO'] } });
    await silent.arrived;
    stop.abort();
    const error = await call.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CallAbortedError);
    expect(error).toMatchObject({ code: 'SEEDLINE_CALL_ABORTED', maybeProcessed: true, retryable: false });
    await silent.closed;
    expect(server.requestsTo('/v1/search/people')).toHaveLength(1);
  });

  it('given a call waiting a minute before its retry, when the signal aborts, then it ends with SEEDLINE_CALL_ABORTED without a second request', async () => {
    server.on('/v1/account', fail(504, 'upstream_timeout', 'slow', { 'retry-after': '60' }));
    const stop = new AbortController();
    const retrying = deferred<void>();
    const call = client({ signal: stop.signal, onEvent: (e) => e.type === 'retry' && retrying.resolve() }).getAccount();
    await retrying.promise;
    stop.abort();
    await expect(call).rejects.toMatchObject({ code: 'SEEDLINE_CALL_ABORTED', maybeProcessed: false });
    expect(server.requestsTo('/v1/account')).toHaveLength(1);
  });

  it('given calls queued behind a paused rate limit, when the signal aborts, then they end with SEEDLINE_CALL_ABORTED, leave the queue and send nothing', async () => {
    const limiter = new RateLimiter();
    limiter.pauseFor(600_000);
    try {
      const stop = new AbortController();
      const api = client({ signal: stop.signal, limiter });
      const calls = [api.getAccount(), api.submitBatch(batchBody)];
      stop.abort();
      for (const call of calls)
        await expect(call).rejects.toMatchObject({ code: 'SEEDLINE_CALL_ABORTED', maybeProcessed: false });
      expect(limiter.waiting).toBe(0);
      expect(server.requests).toHaveLength(0);
    } finally {
      limiter.close();
    }
  });

  it('given a signal already aborted, when a call is made, then nothing is sent', async () => {
    const stop = new AbortController();
    stop.abort();
    await expect(client({ signal: stop.signal }).enrichProfile({ url: 'jane' })).rejects.toBeInstanceOf(
      CallAbortedError,
    );
    expect(server.requests).toHaveLength(0);
  });

  it('given 40 calls in flight on one signal, when it aborts, then every call ends with SEEDLINE_CALL_ABORTED and Node warns of no listener leak', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const all = deferred<void>();
      let arrived = 0;
      server.otherwise(() => ++arrived === 40 && all.resolve());
      const stop = new AbortController();
      const api = client({ signal: stop.signal });
      const calls = Array.from({ length: 40 }, (_, i) => api.getBatch(`job_${i}`).catch((e: unknown) => e));
      await all.promise;
      stop.abort();
      for (const error of await Promise.all(calls)) expect(error).toMatchObject({ code: 'SEEDLINE_CALL_ABORTED' });
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});

describe('openSession: the api limits and the stop signal reach the client', () => {
  async function sessionConfig(api: Record<string, unknown>): Promise<string> {
    const dir = await tempWorkspace();
    return writeConfig(dir, {
      api: { base_url: server.baseUrl, api_key: API_KEY, ...api },
      destination: { type: 'duckdb', path: join(dir, 'w.duckdb') },
      streams: { account: {} },
    });
  }

  it('given api.call_deadline 300ms and api.max_answer_bytes 1024, when connecting, then a dripping account answer and an over-size one are each cut and retried', async () => {
    const padded = JSON.stringify({ data: accountRecord(), meta: {} }).padEnd(4096, ' ');
    server.on(
      '/v1/account',
      drip().responder,
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(padded);
      },
      ok(accountRecord()),
    );
    const session = await openSession(await sessionConfig({ call_deadline: '300ms', max_answer_bytes: 1024 }));
    try {
      const api = await session.connect();
      expect(api.account?.account_id).toBe('acc_123');
      expect(server.requestsTo('/v1/account')).toHaveLength(3);
    } finally {
      await session.close();
    }
  });

  it('given the session signal, when it aborts while the account read hangs, then connect fails with SEEDLINE_CALL_ABORTED', async () => {
    const silent = hang();
    server.on('/v1/account', silent.responder);
    const stop = new AbortController();
    const session = await openSession(await sessionConfig({}), { signal: stop.signal });
    try {
      const connecting = session.connect();
      await silent.arrived;
      stop.abort();
      await expect(connecting).rejects.toMatchObject({ code: 'SEEDLINE_CALL_ABORTED' });
    } finally {
      await session.close();
    }
  });
});

import { request } from 'undici';
import { AnswerOverdueError, AnswerTooLargeError, CallAbortedError, NetworkError } from './errors.js';
import type { SeedlineClientError } from './errors.js';
import type { RawResponse } from './response-parser.js';

/** Default of {@link AnswerLimits.maxAnswerBytes}: 64 MiB. */
export const DEFAULT_MAX_ANSWER_BYTES = 64 * 1024 * 1024;

/** Default of {@link AnswerLimits.deadlineMs}: 120 000 ms. */
export const DEFAULT_CALL_DEADLINE_MS = 120_000;

/** The bounds of one attempt. */
export interface AnswerLimits {
  /** Most bytes one answer's body may have; a longer one is cut off as it streams in. Default {@link DEFAULT_MAX_ANSWER_BYTES} (64 MiB). */
  maxAnswerBytes: number;
  /** Time from sending the request to the answer's last byte, headers and body together. Default {@link DEFAULT_CALL_DEADLINE_MS} (120 s). */
  deadlineMs: number;
  /** Aborts the attempt at once when it aborts. Default: none. */
  signal?: AbortSignal | undefined;
}

/** undici's request options, less the signal (the attempt makes its own). */
export type BoundedRequestInit = Omit<NonNullable<Parameters<typeof request>[1]>, 'signal'>;

/** Who asks, for errors. */
export interface AttemptContext {
  /** The operation, e.g. `getBatchResults`. */
  operation: string;
  /** The service's origin, for network errors (never the key). */
  origin: string;
  /** The bounds. */
  limits: AnswerLimits;
}

/**
 * One HTTP attempt whose answer is bounded: its body is counted as it streams in and cut off as
 * soon as it passes `maxAnswerBytes` ({@link AnswerTooLargeError}); the whole attempt, headers
 * and body, must end within `deadlineMs` ({@link AnswerOverdueError}); `signal` aborts it at once
 * ({@link CallAbortedError}). Other failures before the answer are {@link NetworkError}s; a body
 * that breaks off is returned with `bodyError` set, for the parser to judge.
 *
 * @example
 * ```ts
 * const raw = await boundedRequest(`${base}/v1/account`, { method: 'GET' }, { operation: 'getAccount', origin: base, limits: { maxAnswerBytes: 1 << 20, deadlineMs: 5_000 } });
 * ```
 */
export async function boundedRequest(
  url: string,
  init: BoundedRequestInit,
  context: AttemptContext,
): Promise<RawResponse> {
  if (context.limits.signal?.aborted)
    throw new CallAbortedError({ operation: context.operation, maybeProcessed: false });
  const guard = new AttemptGuard(context);
  try {
    const answer = await send(url, init, guard, context.origin);
    return await readBounded(answer, guard);
  } finally {
    guard.dispose();
  }
}

type Answer = Awaited<ReturnType<typeof request>>;

async function send(url: string, init: BoundedRequestInit, guard: AttemptGuard, origin: string): Promise<Answer> {
  try {
    return await request(url, { ...init, signal: guard.signal });
  } catch (error) {
    throw guard.cut ?? new NetworkError({ origin, causeCode: errorCode(error), cause: error });
  }
}

async function readBounded(answer: Answer, guard: AttemptGuard): Promise<RawResponse> {
  guard.headersArrived(answer.statusCode, Number(header(answer.headers, 'content-length')));
  const chunks: Buffer[] = [];
  let bodyError: unknown;
  let ended = false;
  try {
    if (!guard.cut) ended = await collect(answer.body, chunks, guard);
  } catch (error) {
    bodyError = error ?? new Error('body read failed');
  }
  // A body read to its end is kept even if the deadline passed in the meantime: it may be paid for.
  if (!ended && guard.cut) {
    // Leaving the rest unread closes the connection, so the server stops sending.
    answer.body.destroy();
    throw guard.cut;
  }
  const raw: RawResponse = { status: answer.statusCode, headers: answer.headers, body: Buffer.concat(chunks) };
  if (bodyError !== undefined) raw.bodyError = bodyError;
  return raw;
}

/** Reads `body` into `chunks` while the guard accepts; true when the body ended. */
async function collect(body: Answer['body'], chunks: Buffer[], guard: AttemptGuard): Promise<boolean> {
  for await (const chunk of body) {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    if (!guard.accept(bytes.byteLength)) return false;
    chunks.push(bytes);
  }
  return true;
}

/** Watches one attempt: the deadline timer, the stop signal, the byte count; the first to trip cuts the attempt. */
class AttemptGuard {
  /** Why the attempt was cut, once it was. */
  cut: SeedlineClientError | undefined;
  readonly #controller = new AbortController();
  readonly #context: AttemptContext;
  readonly #timer: ReturnType<typeof setTimeout>;
  readonly #onStop = () =>
    this.#cutWith(new CallAbortedError({ operation: this.#context.operation, maybeProcessed: true }));
  #status = 0;
  /** Body bytes received; undefined until the headers arrive. */
  #received: number | undefined;

  constructor(context: AttemptContext) {
    this.#context = context;
    this.#timer = setTimeout(() => this.#cutWith(this.#overdue()), context.limits.deadlineMs);
    context.limits.signal?.addEventListener('abort', this.#onStop, { once: true });
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Notes the headers; a Content-Length over the cap cuts the attempt before any body is read. */
  headersArrived(status: number, contentLength: number): void {
    this.#status = status;
    this.#received = 0;
    if (contentLength > this.#context.limits.maxAnswerBytes) this.#cutWith(this.#tooLarge(contentLength, true));
  }

  /** Counts `bytes` more; false (and the attempt cut) once the answer passes the cap. */
  accept(bytes: number): boolean {
    if (this.cut) return false;
    const received = (this.#received ?? 0) + bytes;
    this.#received = received;
    if (received <= this.#context.limits.maxAnswerBytes) return true;
    this.#cutWith(this.#tooLarge(received, false));
    return false;
  }

  dispose(): void {
    clearTimeout(this.#timer);
    this.#context.limits.signal?.removeEventListener('abort', this.#onStop);
  }

  #cutWith(error: SeedlineClientError): void {
    if (this.cut) return;
    this.cut = error;
    this.#controller.abort(error);
  }

  #overdue(): AnswerOverdueError {
    return new AnswerOverdueError({
      operation: this.#context.operation,
      deadlineMs: this.#context.limits.deadlineMs,
      receivedBytes: this.#received,
    });
  }

  #tooLarge(receivedBytes: number, declared: boolean): AnswerTooLargeError {
    const { operation, limits } = this.#context;
    return new AnswerTooLargeError({
      operation,
      status: this.#status,
      maxBytes: limits.maxAnswerBytes,
      receivedBytes,
      declared,
    });
  }
}

function header(headers: Answer['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The first `code` found on an error or its causes; `UNKNOWN` when none. */
function errorCode(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return 'UNKNOWN';
}

import type { IncomingHttpHeaders } from 'node:http';
import type { z } from 'zod';
import { describeIssues } from '../../schemas/index.js';
import type { SandboxAccount } from './accounts.js';
import { invalidRequest } from './errors.js';
import type { SandboxState } from './state.js';

/** Everything a route handler sees of one authenticated request. */
export interface RequestContext {
  state: SandboxState;
  account: SandboxAccount;
  requestId: string;
  method: string;
  path: string;
  /** Path parameters (`:id`). */
  params: Record<string, string>;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body; undefined when the request had none. */
  body: unknown;
}

/** A success answer: `{ data, meta }` with `meta.requestId` added by the server. */
export interface Reply {
  /** HTTP status. Default 200. */
  status?: number;
  data: unknown;
  meta?: Record<string, unknown>;
}

/** A route handler. */
export type Handler = (context: RequestContext) => Reply | Promise<Reply>;

/** Parses a body with a strict request schema; 400 `invalid_request` names the offending fields. */
export function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const result = schema.safeParse(body ?? {});
  if (!result.success) throw invalidRequest(describeIssues(result.error));
  return result.data;
}

/** An integer query parameter within [min, max], or the default; 400 otherwise. */
export function intQuery(query: URLSearchParams, name: string, min: number, max: number, fallback: number): number {
  const raw = query.get(name);
  if (raw === null || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max)
    throw invalidRequest(`${name} must be an integer from ${min} to ${max}`);
  return value;
}

/** The `Idempotency-Key` header, if any. */
export function idempotencyKey(context: RequestContext): string | undefined {
  const value = context.headers['idempotency-key'];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/** Opaque list cursor of a position. */
export function encodeCursor(position: number): string {
  return Buffer.from(`p${position}`).toString('base64url');
}

/** Position of a cursor made by {@link encodeCursor}; 0 when absent; 400 when malformed. */
export function decodeCursor(cursor: string | null): number {
  if (cursor === null || cursor === '') return 0;
  const match = /^p(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match) throw invalidRequest('cursor is malformed');
  return Number(match[1]);
}

import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { describeIssues } from '../../../schemas/index.js';
import { SandboxError } from '../errors.js';
import { parseJson, readBody, send, sendError } from '../server.js';
import type { SandboxState } from '../state.js';

const ClockBody = z.strictObject({
  advance_ms: z.number().int().min(0).optional(),
  set: z.string().datetime({ offset: true }).optional(),
});
const Rate = z.number().min(0).max(1).optional();
const FaultsBody = z.strictObject({ '429': Rate, '500': Rate, '504': Rate, upstream_error: Rate });

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

function parse<T>(schema: z.ZodType<T>, raw: string): T {
  const result = schema.safeParse(parseJson(raw) ?? {});
  if (!result.success) throw new SandboxError('invalid_request', describeIssues(result.error));
  return result.data;
}

/** Routes under /__sandbox/ (not part of the service; loopback only): clock, ledger, faults, deliveries. */
export async function handleAdmin(
  state: SandboxState,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  _query: string,
  requestId: string,
): Promise<void> {
  try {
    if (!LOOPBACK.has(req.socket.remoteAddress ?? ''))
      throw new SandboxError('not_found', 'admin routes answer only on loopback');
    const raw = await readBody(req);
    const route = `${req.method} ${path}`;
    let data: unknown;
    switch (route) {
      case 'GET /__sandbox/clock':
        data = { now: state.clock.now().toISOString() };
        break;
      case 'POST /__sandbox/clock': {
        const body = parse(ClockBody, raw);
        if (body.set !== undefined) await state.clock.set(new Date(body.set));
        if (body.advance_ms !== undefined) await state.clock.advance(body.advance_ms);
        data = { now: state.clock.now().toISOString() };
        break;
      }
      case 'GET /__sandbox/ledger':
        data = { entries: state.ledger.entries, total_billed: state.ledger.totalBilled() };
        break;
      case 'GET /__sandbox/faults':
        data = state.faults.get();
        break;
      case 'POST /__sandbox/faults':
        state.faults.set(parse(FaultsBody, raw));
        data = state.faults.get();
        break;
      case 'GET /__sandbox/deliveries':
        data = state.webhooks.all().map((record) => ({ ...state.webhooks.view(record), account_id: record.accountId }));
        break;
      default:
        throw new SandboxError('not_found', `no such admin route: ${route}`);
    }
    send(res, 200, { data, meta: { requestId } }, { 'x-request-id': requestId });
  } catch (error) {
    sendError(
      res,
      error instanceof SandboxError ? error : new SandboxError('internal_error', String(error)),
      requestId,
    );
  }
}

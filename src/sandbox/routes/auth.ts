import type { IncomingMessage, ServerResponse } from 'node:http';
import { TokenExchangeBody } from '../../../schemas/index.js';
import { signJwt } from '../jwt.js';
import { readBody, send } from '../server.js';
import type { SandboxState } from '../state.js';

/** Access tokens live 24 hours of virtual time. */
const TOKEN_LIFETIME_S = 24 * 3600;

/** POST /api/api-auth/authenticate: failures are `{ error: <string> }`, not the envelope (spec, Authentication 3). */
export async function handleTokenExchange(
  state: SandboxState,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
): Promise<void> {
  const headers = { 'x-request-id': requestId };
  let body: unknown;
  try {
    const raw = await readBody(req);
    body = raw.trim() === '' ? {} : JSON.parse(raw);
  } catch {
    send(res, 400, { error: 'the body is not valid JSON' }, headers);
    return;
  }
  const parsed = TokenExchangeBody.safeParse(body);
  const account = parsed.success ? state.accounts.forKey(parsed.data.apiKey) : null;
  if (!account) {
    send(res, 401, { error: 'invalid or missing API key' }, headers);
    return;
  }
  const iat = Math.floor(state.clock.nowMs() / 1000);
  send(
    res,
    200,
    { accessToken: signJwt({ sub: account.id, iat, exp: iat + TOKEN_LIFETIME_S }, state.jwtSecret) },
    headers,
  );
}

import { createHmac, timingSafeEqual } from 'node:crypto';

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');

/** Claims of a sandbox access token. */
export interface TokenClaims {
  /** Account id. */
  sub: string;
  /** Issued at, unix seconds (virtual time). */
  iat: number;
  /** Expiry, unix seconds (virtual time). */
  exp: number;
}

function signature(secret: Buffer, data: string): string {
  return createHmac('sha256', secret).update(data).digest('base64url');
}

/** Signs an HS256 JWT. */
export function signJwt(claims: TokenClaims, secret: Buffer): string {
  const body = `${HEADER}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  return `${body}.${signature(secret, body)}`;
}

/** Verifies an HS256 JWT's signature and expiry against `nowSeconds`; null when invalid or expired. */
export function verifyJwt(token: string, secret: Buffer, nowSeconds: number): TokenClaims | null {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== HEADER) return null;
  const expected = Buffer.from(signature(secret, `${parts[0]}.${parts[1]}`));
  const given = Buffer.from(parts[2] as string);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return null;
  try {
    const claims = JSON.parse(Buffer.from(parts[1] as string, 'base64url').toString('utf8')) as TokenClaims;
    return typeof claims.sub === 'string' && typeof claims.exp === 'number' && claims.exp > nowSeconds ? claims : null;
  } catch {
    return null;
  }
}

import { describe, expect, it } from 'vitest';
import { jwtExpiryMs, TokenProvider, tokenExpiresAt } from '../../src/client/token-provider.js';

function jwt(claims: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'HS256', typ: 'JWT' })}.${part(claims)}.sig`;
}

describe('TokenProvider', () => {
  it('given a JWT, when its expiry is read, then the exp claim in milliseconds is returned', () => {
    expect(jwtExpiryMs(jwt({ exp: 1_900_000_000 }))).toBe(1_900_000_000_000);
    expect(jwtExpiryMs('not-a-jwt')).toBeUndefined();
  });

  it('given a cached token, when asked again before exp minus the margin, then no new exchange happens', async () => {
    let now = 1_000_000_000_000;
    let exchanges = 0;
    const provider = new TokenProvider(
      async () => {
        exchanges++;
        return jwt({ exp: Math.floor(now / 1000) + 3_600, n: exchanges });
      },
      { now: () => now, safetyMarginMs: 60_000 },
    );
    const first = await provider.get();
    now += 3_600_000 - 60_001;
    expect(await provider.get()).toBe(first);
    expect(exchanges).toBe(1);
    now += 2;
    expect(await provider.get()).not.toBe(first);
    expect(exchanges).toBe(2);
  });

  it('given concurrent callers, when no token is cached, then they share one exchange', async () => {
    let exchanges = 0;
    const provider = new TokenProvider(async () => {
      exchanges++;
      return jwt({ exp: 4_000_000_000 });
    });
    const tokens = await Promise.all([provider.get(), provider.get(), provider.get()]);
    expect(new Set(tokens).size).toBe(1);
    expect(exchanges).toBe(1);
  });

  it('given iat and exp from a server clock far behind ours, when received, then the lifetime exp − iat counts from receipt', () => {
    const receivedAt = Date.parse('2026-11-22T00:00:00Z');
    const serverNow = Date.parse('2026-11-01T00:00:00Z') / 1000;
    expect(tokenExpiresAt(jwt({ iat: serverNow, exp: serverNow + 86_400 }), receivedAt)).toBe(receivedAt + 86_400_000);
    expect(tokenExpiresAt(jwt({ exp: receivedAt / 1000 + 3_600 }), receivedAt)).toBe(receivedAt + 3_600_000);
    expect(tokenExpiresAt(jwt({ exp: serverNow }), receivedAt)).toBe(receivedAt + 86_400_000);
  });

  it('given a token that is not a readable JWT, when cached, then it is assumed valid for 24 h', async () => {
    const provider = new TokenProvider(async () => 'opaque', { now: () => 0 });
    await provider.get();
    expect(provider.expiresAt).toBe(24 * 60 * 60 * 1000);
  });
});

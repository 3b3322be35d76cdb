import { describe, expect, it } from 'vitest';
import { AccountStore } from '../../src/sandbox/accounts.js';
import { Billing } from '../../src/sandbox/billing.js';
import { BillingLedger } from '../../src/sandbox/billing-ledger.js';
import { FaultInjector } from '../../src/sandbox/faults.js';
import { signJwt, verifyJwt } from '../../src/sandbox/jwt.js';
import { RateLimiter } from '../../src/sandbox/rate-limit.js';
import { VirtualClock } from '../../src/sandbox/virtual-clock.js';
import { signPayload } from '../../src/sandbox/webhook-dispatcher.js';
import { createHmac } from 'node:crypto';

describe('JWT', () => {
  const secret = Buffer.from('s'.repeat(32));
  it('given a signed token, when verified before expiry, then its claims come back; after expiry or tampering, null', () => {
    const token = signJwt({ sub: 'acct_1', iat: 100, exp: 200 }, secret);
    expect(verifyJwt(token, secret, 150)?.sub).toBe('acct_1');
    expect(verifyJwt(token, secret, 200)).toBeNull();
    expect(verifyJwt(`${token}x`, secret, 150)).toBeNull();
    expect(verifyJwt(token, Buffer.from('t'.repeat(32)), 150)).toBeNull();
  });

  it('given a token, when its signature is recomputed with node:crypto, then it is standard HS256', () => {
    const token = signJwt({ sub: 'a', iat: 1, exp: 2 }, secret);
    const [header, payload, signature] = token.split('.');
    expect(JSON.parse(Buffer.from(header as string, 'base64url').toString())).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(createHmac('sha256', secret).update(`${header}.${payload}`).digest('base64url')).toBe(signature);
  });
});

describe('billing', () => {
  const setup = () => {
    const ledger = new BillingLedger();
    const billing = new Billing(ledger, new VirtualClock(new Date('2026-11-01T00:00:00Z')));
    const accounts = new AccountStore(10);
    return { ledger, billing, accounts };
  };

  it('given a live key, when charged, then the balance drops and the ledger counts it as billed', () => {
    const { ledger, billing, accounts } = setup();
    const live = accounts.forKey('svc_live_a')!;
    billing.charge(live, 3, { operation: 'profiles.enrich', target: 'u', requestId: 'r' });
    expect(live.balance).toBe(7);
    expect(ledger.totalBilled()).toBe(3);
    expect(ledger.countFor('profiles.enrich', 'u')).toBe(1);
    expect(billing.canAfford(live, 8)).toBe(false);
  });

  it('given a test key, when charged, then the balance is unchanged and the entry is not billed', () => {
    const { ledger, billing, accounts } = setup();
    const test = accounts.forKey('svc_test_a')!;
    billing.charge(test, 5, { operation: 'x', target: 'u', requestId: 'r' });
    expect(test.balance).toBe(10);
    expect(ledger.entries[0]).toMatchObject({ billed: false, credits: 5 });
    expect(billing.meta(test, 5)).toEqual({ creditsUsed: 5, creditsRemaining: 10, billed: false });
    expect(billing.canAfford(test, 1_000)).toBe(true);
  });

  it('given keys, when looked up, then only svc_test_/svc_live_ keys have accounts and ids never contain the key', () => {
    const { accounts } = setup();
    expect(accounts.forKey('sk_live_1')).toBeNull();
    expect(accounts.forKey('svc_test_')).toBeNull();
    expect(accounts.forKey('svc_test_secret')?.id).not.toContain('secret');
  });
});

describe('rate limiter', () => {
  it('given the limit is reached, when another request comes within 60 s, then it is refused until the window slides', () => {
    const limiter = new RateLimiter(3);
    const t0 = 1_000_000;
    expect([0, 1, 2].map((i) => limiter.hit('k', t0 + i * 1000).allowed)).toEqual([true, true, true]);
    const refused = limiter.hit('k', t0 + 10_000);
    expect(refused).toMatchObject({ allowed: false, remaining: 0 });
    expect(refused.retryAfter).toBe(50);
    expect(limiter.hit('other', t0 + 10_000).allowed).toBe(true);
    expect(limiter.hit('k', t0 + 60_000).allowed).toBe(true);
  });
});

describe('virtual clock', () => {
  it('given scheduled tasks, when advanced, then due tasks run in time order at their own instant, including ones they schedule', async () => {
    const clock = new VirtualClock(new Date(0));
    const seen: Array<[string, number]> = [];
    clock.schedule(200, () => void seen.push(['b', clock.nowMs()]));
    clock.schedule(100, () => {
      seen.push(['a', clock.nowMs()]);
      clock.schedule(150, () => void seen.push(['c', clock.nowMs()]));
    });
    clock.schedule(500, () => void seen.push(['late', clock.nowMs()]));
    await clock.advance(300);
    expect(seen).toEqual([
      ['a', 100],
      ['c', 150],
      ['b', 200],
    ]);
    expect(clock.nowMs()).toBe(300);
  });

  it('given a cancelled task, when advanced past it, then it does not run', async () => {
    const clock = new VirtualClock(new Date(0));
    let ran = false;
    clock.schedule(10, () => void (ran = true)).cancel();
    await clock.advance(20);
    expect(ran).toBe(false);
  });
});

describe('fault injection', () => {
  it('given the same seed, when drawing, then the same faults come in the same order', () => {
    const rates = { '429': 0.1, '500': 0.1, '504': 0.1, upstream_error: 0.1 };
    const a = new FaultInjector(7, rates);
    const b = new FaultInjector(7, rates);
    const seqA = Array.from({ length: 200 }, () => a.draw('request')?.status ?? 200);
    const seqB = Array.from({ length: 200 }, () => b.draw('request')?.status ?? 200);
    expect(seqA).toEqual(seqB);
    expect(new Set(seqA)).toEqual(new Set([200, 429, 500, 502, 504]));
  });

  it('given item scope, when drawing, then no 429 is produced', () => {
    const injector = new FaultInjector(1, { '429': 1 });
    expect(Array.from({ length: 50 }, () => injector.draw('item'))).toEqual(Array(50).fill(null));
  });
});

describe('webhook signature', () => {
  it('given a body and secret, when signed, then v1 is the hex HMAC-SHA256 of "{t}.{body}"', () => {
    const header = signPayload('whsec_x', '{"a":1}', 1700000000);
    expect(header).toBe(
      `t=1700000000,v1=${createHmac('sha256', 'whsec_x').update('1700000000.{"a":1}').digest('hex')}`,
    );
  });
});

import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import {
  checkSignatureHeader,
  computeSignature,
  signWebhook,
  verifyWebhook,
} from '../../src/client/webhook-signature.js';

const stripe = new Stripe('sk_test_unused_for_signatures');
const stripeSignature = stripe.webhooks.signature;
if (!stripeSignature) throw new Error('stripe.webhooks.signature is missing');
const SECRET = 'test_secret';
const T = 1_700_000_000;
const body = JSON.stringify({ event: 'batch.completed', job: { job_id: 'job_1', status: 'completed', total: 2 } });

describe('signature vectors', () => {
  it('given secret test_secret and the empty payload, when the HMAC is computed, then it is the issue vector', () => {
    // The issue's vector is HMAC-SHA256("test_secret", "") itself: the empty signed payload,
    // not "{t}." for any timestamp (checked against t = 0 and the empty-t form "." as well).
    expect(computeSignature(SECRET, '')).toBe('f7f9bd47fb987337b5796fdc1fdb9ba221d0d5396814bfcaf9521f43fd8927fd');
    expect(computeSignature(SECRET, '0.')).not.toBe('f7f9bd47fb987337b5796fdc1fdb9ba221d0d5396814bfcaf9521f43fd8927fd');
  });

  it('given a fixed timestamp, when signing, then v1 is the HMAC of "{t}.{raw_body}" in the t=…,v1=… format', () => {
    const header = signWebhook(SECRET, '', T);
    expect(header).toBe(`t=${T},v1=${computeSignature(SECRET, `${T}.`)}`);
    expect(signWebhook(SECRET, body, T)).toBe(`t=${T},v1=${computeSignature(SECRET, `${T}.${body}`)}`);
  });

  it('given a Buffer body, when signing, then the signature equals the string body signature', () => {
    expect(signWebhook(SECRET, Buffer.from(body), T)).toBe(signWebhook(SECRET, body, T));
  });
});

describe('verifyWebhook', () => {
  it('given a header we signed, when verified at the same second, then it is accepted with its timestamp', () => {
    expect(verifyWebhook({ header: signWebhook(SECRET, body, T), rawBody: body, secrets: SECRET, now: T })).toEqual({
      ok: true,
      timestamp: T,
    });
  });

  it('given a rotation, when any of several v1 values matches any of several secrets, then it is accepted', () => {
    const oldSig = computeSignature('old_secret', `${T}.${body}`);
    const header = `t=${T},v1=${'0'.repeat(64)},v1=${oldSig}`;
    expect(verifyWebhook({ header, rawBody: body, secrets: ['new_secret', 'old_secret'], now: T }).ok).toBe(true);
    expect(verifyWebhook({ header, rawBody: body, secrets: ['new_secret'], now: T })).toMatchObject({
      ok: false,
      reason: 'signature_mismatch',
    });
  });

  it('given a body changed by one byte, when verified, then it is refused', () => {
    const header = signWebhook(SECRET, body, T);
    expect(verifyWebhook({ header, rawBody: `${body} `, secrets: SECRET, now: T })).toMatchObject({
      ok: false,
      reason: 'signature_mismatch',
    });
  });

  it('given timestamps at and beyond the tolerance, when verified, then only those within 300 s either way pass', () => {
    const header = signWebhook(SECRET, body, T);
    expect(verifyWebhook({ header, rawBody: body, secrets: SECRET, now: T + 300 }).ok).toBe(true);
    expect(verifyWebhook({ header, rawBody: body, secrets: SECRET, now: T + 301 })).toMatchObject({
      ok: false,
      reason: 'timestamp_too_old',
    });
    expect(verifyWebhook({ header, rawBody: body, secrets: SECRET, now: T - 300 }).ok).toBe(true);
    expect(verifyWebhook({ header, rawBody: body, secrets: SECRET, now: T - 301 })).toMatchObject({
      ok: false,
      reason: 'timestamp_in_future',
    });
    expect(
      verifyWebhook({ header, rawBody: body, secrets: SECRET, now: new Date((T + 10) * 1000), toleranceSeconds: 5 }),
    ).toMatchObject({
      ok: false,
      reason: 'timestamp_too_old',
    });
  });

  it('given a stale timestamp and a signature no secret made, when verified, then it is refused for its age, before any HMAC is computed', () => {
    const header = `t=${T},v1=${'0'.repeat(64)}`;
    expect(verifyWebhook({ header, rawBody: body, secrets: ['a', 'b', 'c'], now: T + 301 })).toMatchObject({
      ok: false,
      reason: 'timestamp_too_old',
    });
    expect(checkSignatureHeader({ header, now: T - 301 })).toMatchObject({ ok: false, reason: 'timestamp_in_future' });
    expect(checkSignatureHeader({ header, now: T })).toMatchObject({
      ok: true,
      timestamp: T,
      signatures: [Buffer.alloc(32)],
    });
  });

  it.each([
    ['a missing header', undefined, 'missing_header'],
    ['no timestamp', `v1=${'a'.repeat(64)}`, 'malformed_header'],
    ['a non-numeric timestamp', `t=abc,v1=${'a'.repeat(64)}`, 'malformed_header'],
    ['no v1', `t=${T},v0=${'a'.repeat(64)}`, 'no_signatures'],
    ['a short v1', `t=${T},v1=abcd`, 'no_signatures'],
  ])('given %s, when verified, then it is refused without throwing', (_name, header, reason) => {
    expect(verifyWebhook({ header, rawBody: body, secrets: SECRET, now: T })).toMatchObject({ ok: false, reason });
  });

  it('given a forged short v1, when verified, then the message says the signature is malformed, not missing', () => {
    const result = verifyWebhook({ header: `t=${T},v1=deadbeef`, rawBody: body, secrets: SECRET, now: T });
    expect(result).toMatchObject({ ok: false, reason: 'no_signatures' });
    expect((result as { message: string }).message).toBe(
      'The signature header has a v1 signature that is not an HMAC-SHA256 (64 hexadecimal characters).',
    );
  });

  it('given no secret, when verified, then it is refused and the message holds no secret material', () => {
    const result = verifyWebhook({ header: signWebhook(SECRET, body, T), rawBody: body, secrets: [], now: T });
    expect(result).toMatchObject({ ok: false, reason: 'no_secret' });
    const mismatch = verifyWebhook({
      header: signWebhook(SECRET, body, T),
      rawBody: body,
      secrets: 'whsec_other_value',
      now: T,
    });
    expect(mismatch.ok).toBe(false);
    if (!mismatch.ok) expect(mismatch.message).not.toContain('whsec_other_value');
  });
});

describe('cross-check with the stripe package', () => {
  it('given a header made by stripe.webhooks.generateTestHeaderString, when verified by ours, then it is accepted', () => {
    const header = stripe.webhooks.generateTestHeaderString({ payload: body, secret: SECRET, timestamp: T });
    expect(verifyWebhook({ header, rawBody: body, secrets: SECRET, now: T + 1 })).toEqual({ ok: true, timestamp: T });
  });

  it('given a header made by ours, when verified by stripe.webhooks.signature.verifyHeader, then it is accepted', () => {
    const header = signWebhook(SECRET, body, T);
    expect(stripeSignature.verifyHeader(body, header, SECRET, 300, undefined, T * 1000)).toBe(true);
  });

  it('given a header made by ours with a wrong secret, when verified by stripe, then stripe refuses it too', () => {
    const header = signWebhook('another_secret', body, T);
    expect(() => stripeSignature.verifyHeader(body, header, SECRET, 300, undefined, T * 1000)).toThrow(
      /No signatures found/,
    );
    expect(verifyWebhook({ header, rawBody: body, secrets: SECRET, now: T }).ok).toBe(false);
  });
});

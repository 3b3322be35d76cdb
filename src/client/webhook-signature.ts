import { createHmac, timingSafeEqual } from 'node:crypto';

// This file imports node:crypto only, so any receiver can use it without pulling in the client.

/** Default tolerance of {@link verifyWebhook}, in seconds (the reference verifier's). */
export const DEFAULT_WEBHOOK_TOLERANCE_SECONDS = 300;

/** Hex HMAC-SHA256 of `signedPayload` with `secret`. The `v1` value is this over `{t}.{raw_body}`. */
export function computeSignature(secret: string, signedPayload: string | Uint8Array): string {
  return createHmac('sha256', secret).update(signedPayload).digest('hex');
}

/**
 * Signs a webhook body: returns the `X-Service-Signature` header value `t=<unix>,v1=<hex>`, where
 * `v1` is HMAC-SHA256 over `{t}.{raw_body}`.
 *
 * @param timestampSeconds Unix seconds. Default: now.
 * @example
 * ```ts
 * const header = signWebhook('whsec_abc', JSON.stringify(event));
 * ```
 */
export function signWebhook(
  secret: string,
  rawBody: string | Uint8Array,
  timestampSeconds: number = Math.floor(Date.now() / 1000),
): string {
  const t = Math.floor(timestampSeconds);
  return `t=${t},v1=${hmacOver(secret, t, rawBody)}`;
}

/** Why a signature was refused. */
export type WebhookVerifyFailureReason =
  | 'missing_header'
  | 'malformed_header'
  | 'no_signatures'
  | 'no_secret'
  | 'signature_mismatch'
  | 'timestamp_too_old'
  | 'timestamp_in_future';

/** Outcome of {@link verifyWebhook}. */
export type WebhookVerifyResult =
  | { ok: true; timestamp: number }
  | { ok: false; reason: WebhookVerifyFailureReason; message: string; timestamp?: number };

/** Options of {@link verifyWebhook}. */
export interface VerifyWebhookOptions {
  /** The `X-Service-Signature` header as received. */
  header: string | readonly string[] | undefined | null;
  /** The raw body, before any JSON parsing. */
  rawBody: string | Uint8Array;
  /** The secret, or several during a rotation; any may match. */
  secrets: string | readonly string[];
  /** Accepted distance between the header's timestamp and now, both ways. Default 300 s. */
  toleranceSeconds?: number;
  /** Now, as unix seconds or a Date. Default: the clock. */
  now?: number | Date;
}

/** A signature header read and its timestamp checked, before any HMAC. */
export type SignatureHeaderResult =
  | { ok: true; timestamp: number; signatures: Buffer[] }
  | { ok: false; reason: WebhookVerifyFailureReason; message: string; timestamp?: number };

/**
 * The cheap half of {@link verifyWebhook}: reads `t=<unix>,v1=<hex>[,v1=<hex>…]` and checks the
 * timestamp against the tolerance, computing no HMAC, so a flood of stale, future or malformed
 * requests costs no hashing. Never throws.
 *
 * @example
 * ```ts
 * const header = checkSignatureHeader({ header: req.headers['x-service-signature'] });
 * if (!header.ok) return reply.code(401).send(header.reason);
 * ```
 */
export function checkSignatureHeader(
  options: Pick<VerifyWebhookOptions, 'header' | 'toleranceSeconds' | 'now'>,
): SignatureHeaderResult {
  const header = Array.isArray(options.header) ? options.header[0] : (options.header as string | undefined | null);
  if (!header) return fail('missing_header', 'The signature header is missing.');
  let timestamp: number | undefined;
  const signatures: Buffer[] = [];
  let malformedV1 = false;
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't') {
      if (!/^\d{1,15}$/.test(value)) return fail('malformed_header', 'The signature header has a malformed timestamp.');
      timestamp = Number(value);
    } else if (key === 'v1') {
      if (/^[0-9a-fA-F]{64}$/.test(value)) signatures.push(Buffer.from(value, 'hex'));
      else malformedV1 = true;
    }
  }
  if (timestamp === undefined) return fail('malformed_header', 'The signature header has no timestamp (t=).');
  if (signatures.length === 0)
    return fail(
      'no_signatures',
      malformedV1
        ? 'The signature header has a v1 signature that is not an HMAC-SHA256 (64 hexadecimal characters).'
        : 'The signature header has no v1 signature.',
      timestamp,
    );
  const tolerance = options.toleranceSeconds ?? DEFAULT_WEBHOOK_TOLERANCE_SECONDS;
  const now =
    options.now instanceof Date
      ? Math.floor(options.now.getTime() / 1000)
      : (options.now ?? Math.floor(Date.now() / 1000));
  if (now - timestamp > tolerance)
    return fail('timestamp_too_old', `The signature timestamp is older than ${tolerance} s.`, timestamp);
  if (timestamp - now > tolerance)
    return fail('timestamp_in_future', `The signature timestamp is more than ${tolerance} s in the future.`, timestamp);
  return { ok: true, timestamp, signatures };
}

/**
 * Verifies `t=<unix>,v1=<hex>[,v1=<hex>…]`: the timestamp must lie within the tolerance, in the
 * past or the future (checked first, before any HMAC); then any `v1` may match any secret
 * (compared in constant time). Never throws for bad input; failure messages contain no secret.
 *
 * @example
 * ```ts
 * const result = verifyWebhook({ header: req.headers['x-service-signature'], rawBody, secrets: [current, previous] });
 * if (!result.ok) return reply.code(400).send(result.reason);
 * ```
 */
export function verifyWebhook(options: VerifyWebhookOptions): WebhookVerifyResult {
  const header = checkSignatureHeader(options);
  if (!header.ok) return header;
  const { timestamp, signatures } = header;
  const secrets = (typeof options.secrets === 'string' ? [options.secrets] : [...options.secrets]).filter(
    (s) => s.length > 0,
  );
  if (secrets.length === 0) return fail('no_secret', 'No webhook secret is configured for verification.', timestamp);
  let matched = false;
  for (const secret of secrets) {
    const expected = Buffer.from(hmacOver(secret, timestamp, options.rawBody), 'hex');
    // Compare against every candidate without stopping early, so timing does not reveal which matched.
    for (const candidate of signatures) matched = timingSafeEqual(expected, candidate) || matched;
  }
  if (!matched)
    return fail('signature_mismatch', 'No signature matches the body with the configured secret(s).', timestamp);
  return { ok: true, timestamp };
}

function hmacOver(secret: string, timestamp: number, rawBody: string | Uint8Array): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex');
}

function fail(
  reason: WebhookVerifyFailureReason,
  message: string,
  timestamp?: number,
): { ok: false; reason: WebhookVerifyFailureReason; message: string; timestamp?: number } {
  return timestamp === undefined ? { ok: false, reason, message } : { ok: false, reason, message, timestamp };
}

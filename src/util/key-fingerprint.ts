import { createHash } from 'node:crypto';

/**
 * A short fingerprint of an API key (`key_` and 12 hex digits of its sha256): what tables, logs and
 * metrics name a key by, since the key itself never appears anywhere.
 */
export function keyFingerprint(apiKey: string): string {
  return `key_${createHash('sha256').update(apiKey).digest('hex').slice(0, 12)}`;
}

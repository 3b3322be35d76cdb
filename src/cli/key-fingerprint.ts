import { sha256 } from '../util/stable-json.js';

/**
 * The name an API key goes by in tables, logs and metrics labels: `key_` and the first 12 hex
 * digits of its SHA-256 (the key itself never leaves the config). The same as `seedline worker`
 * records in `_seedline_workers`.
 *
 * @example
 * ```ts
 * keyFingerprint(config.api.api_key); // 'key_3f9a0c12be47'
 * ```
 */
export function keyFingerprint(apiKey: string): string {
  return `key_${sha256(apiKey).slice(0, 12)}`;
}

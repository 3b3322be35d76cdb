import { SeedlineConfig } from '../config/config-schema.js';
import { UsageError } from './run-command.js';

// The config's own rule for `api.base_url` (https, or plain http to loopback only), so a URL from
// the command line passes exactly when the same URL in a config file would.
const ConfigBaseUrl = SeedlineConfig.shape.api.shape.base_url;

/**
 * Refuses a service URL from the command line that the config would refuse: anything but https,
 * except plain http to localhost. Call it before a client is built, so the API key never leaves.
 * The URL itself is not echoed (it may carry credentials).
 *
 * @param url the URL as given.
 * @param source where it came from, named in the message (`--base-url` or `SEEDLINE_BASE_URL`).
 * @throws UsageError naming `source` and what to give instead.
 *
 * @example
 * ```ts
 * checkBaseUrl('http://127.0.0.1:8787', '--base-url'); // passes
 * checkBaseUrl('http://api.example.com', '--base-url'); // throws UsageError
 * ```
 */
export function checkBaseUrl(url: string, source: string): void {
  // `sandbox` is a config-only value (the embedded emulator), not a URL.
  if (url !== 'sandbox' && ConfigBaseUrl.safeParse(url).success) return;
  if (protocolOf(url) === 'http:') {
    throw new UsageError(
      `${source}: plain http is allowed only to localhost (127.0.0.1, ::1): the API key would travel in clear text. Use the https URL of the service.`,
    );
  }
  throw new UsageError(
    `${source}: expected an absolute https URL such as https://api.example.com (plain http only to localhost).`,
  );
}

function protocolOf(url: string): string | undefined {
  try {
    return new URL(url).protocol;
  } catch {
    return undefined;
  }
}

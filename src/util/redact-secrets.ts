/** Shapes of an API key, a JWT and a webhook secret: redacted wherever they appear. */
const GENERIC_SECRET_PATTERNS: readonly RegExp[] = [
  /svc_(?:test|live)_[A-Za-z0-9_-]+/g,
  /eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g,
  /whsec_[A-Za-z0-9_-]+/g,
];

/**
 * Replaces every occurrence of the given secrets, and anything shaped like an API key, a JWT or a
 * webhook secret, with `[redacted]`. Secrets shorter than 4 characters are ignored (they would
 * redact ordinary words).
 */
export function redactSecrets(text: string, secrets: readonly (string | undefined)[] = []): string {
  let out = text;
  for (const secret of secrets) {
    if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]');
  }
  for (const pattern of GENERIC_SECRET_PATTERNS) out = out.replace(pattern, '[redacted]');
  return out;
}

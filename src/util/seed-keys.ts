/** What a seed names, for key normalisation. */
export type SeedKind = 'profile' | 'company' | 'post' | 'raw';

const PATH_MARKERS: Record<Exclude<SeedKind, 'raw' | 'post'>, string> = { profile: 'in', company: 'company' };

/**
 * A stable key for a seed, so that `https://x/in/Jane-Doe/?trk=1`, `jane-doe` and
 * `https://www.x/in/jane-doe` share one ledger row. The user's seed is kept beside it.
 */
export function seedKey(kind: SeedKind, seed: string): string {
  const trimmed = seed.trim();
  if (kind === 'raw') return trimmed;
  const url = tryUrl(trimmed);
  if (!url)
    return safeDecode(trimmed.replace(/[?#].*$/, ''))
      .replace(/\/+$/, '')
      .toLowerCase();
  const path = safeDecode(url.pathname).replace(/\/+$/, '');
  if (kind === 'post') return `${url.hostname.replace(/^www\./, '').toLowerCase()}${path}`;
  const parts = path.split('/').filter(Boolean);
  const marker = parts.indexOf(PATH_MARKERS[kind]);
  const slug = marker >= 0 ? parts[marker + 1] : parts.at(-1);
  return (slug ?? path).toLowerCase();
}

/** Reads a seed as a URL the way the service does: with or without a scheme (`www.x/in/a`, `in/a`). */
function tryUrl(text: string): URL | undefined {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text)
    ? text
    : text.includes('/')
      ? `https://${hostFor(text)}`
      : undefined;
  if (!withScheme) return undefined;
  try {
    return new URL(withScheme);
  } catch {
    return undefined;
  }
}

/** `in/jane` has no host: give it a placeholder one so the path parses the same way. */
function hostFor(text: string): string {
  const trimmed = text.replace(/^\/+/, '');
  return /^[^/]+\.[^/]+\//.test(trimmed) ? trimmed : `seed.invalid/${trimmed}`;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

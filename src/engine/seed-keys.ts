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
  if (!url) return safeDecode(trimmed).replace(/\/+$/, '').toLowerCase();
  const path = safeDecode(url.pathname).replace(/\/+$/, '');
  if (kind === 'post') return `${url.hostname.replace(/^www\./, '').toLowerCase()}${path}`;
  const parts = path.split('/').filter(Boolean);
  const marker = parts.indexOf(PATH_MARKERS[kind]);
  const slug = marker >= 0 ? parts[marker + 1] : parts.at(-1);
  return (slug ?? path).toLowerCase();
}

function tryUrl(text: string): URL | undefined {
  if (!/^https?:\/\//i.test(text)) return undefined;
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

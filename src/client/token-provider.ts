/** Lifetime assumed for a token whose `exp` claim cannot be read: the spec's 24 hours. */
export const DEFAULT_TOKEN_LIFETIME_MS = 24 * 60 * 60 * 1000;

/** Options of {@link TokenProvider}. */
export interface TokenProviderOptions {
  /** Re-exchange this long before the token's `exp`. Default 5 min. */
  safetyMarginMs?: number;
  /** Clock in milliseconds. Default `Date.now`. */
  now?: () => number;
  /** Called after each exchange with the expiry read from the token. Default: none. */
  onExchanged?: (expiresAtMs: number) => void;
}

/**
 * Caches the access token of POST /api/api-auth/authenticate: exchanges lazily on first use,
 * again shortly before the JWT `exp` claim, and on demand after a 401 ({@link invalidate}).
 * Concurrent callers share one exchange.
 */
export class TokenProvider {
  readonly #exchange: () => Promise<string>;
  readonly #marginMs: number;
  readonly #now: () => number;
  readonly #onExchanged: ((expiresAtMs: number) => void) | undefined;
  #token: string | undefined;
  #expiresAt = 0;
  #inFlight: Promise<string> | undefined;

  constructor(exchange: () => Promise<string>, options: TokenProviderOptions = {}) {
    this.#exchange = exchange;
    this.#marginMs = options.safetyMarginMs ?? 5 * 60 * 1000;
    this.#now = options.now ?? Date.now;
    this.#onExchanged = options.onExchanged;
  }

  /** Expiry of the cached token in epoch milliseconds; undefined before the first exchange. */
  get expiresAt(): number | undefined {
    return this.#token === undefined ? undefined : this.#expiresAt;
  }

  /** A token valid for at least the safety margin, exchanging a new one when needed. */
  async get(): Promise<string> {
    if (this.#token !== undefined && this.#now() < this.#expiresAt - this.#marginMs) return this.#token;
    this.#inFlight ??= this.#refresh().finally(() => {
      this.#inFlight = undefined;
    });
    return this.#inFlight;
  }

  /** Stores a token obtained elsewhere (e.g. a public `exchangeToken()` call). */
  set(token: string): void {
    this.#token = token;
    this.#expiresAt = tokenExpiresAt(token, this.#now());
    this.#onExchanged?.(this.#expiresAt);
  }

  /** Forgets the cached token (after a 401), so the next {@link get} exchanges again. */
  invalidate(token?: string): void {
    if (token === undefined || token === this.#token) {
      this.#token = undefined;
      this.#expiresAt = 0;
    }
  }

  async #refresh(): Promise<string> {
    const token = await this.#exchange();
    this.set(token);
    return token;
  }
}

/** The `exp` claim of a JWT in epoch milliseconds; undefined when the token is not a readable JWT. */
export function jwtExpiryMs(token: string): number | undefined {
  const exp = readClaims(token)?.exp;
  return typeof exp === 'number' ? exp * 1000 : undefined;
}

/**
 * When a token just received at `receivedAtMs` expires on the local clock. With `iat` and `exp`
 * the lifetime `exp − iat` is counted from receipt, so a skewed (or emulated) server clock does
 * not make a fresh token look expired; with `exp` alone, `exp` if it lies ahead; otherwise the
 * documented 24 hours.
 */
export function tokenExpiresAt(token: string, receivedAtMs: number): number {
  const claims = readClaims(token);
  const exp = claims?.exp;
  const iat = claims?.iat;
  if (typeof exp === 'number' && typeof iat === 'number' && exp > iat) return receivedAtMs + (exp - iat) * 1000;
  if (typeof exp === 'number' && exp * 1000 > receivedAtMs) return exp * 1000;
  return receivedAtMs + DEFAULT_TOKEN_LIFETIME_MS;
}

function readClaims(token: string): { exp?: unknown; iat?: unknown } | undefined {
  const payload = token.split('.')[1];
  if (!payload) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown;
    return claims && typeof claims === 'object' ? (claims as { exp?: unknown; iat?: unknown }) : undefined;
  } catch {
    // Not a JWT we can read: the caller falls back to the documented 24 h lifetime.
    return undefined;
  }
}

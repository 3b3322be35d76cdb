/**
 * Errors of the API client. Every class carries a stable `code` (`SEEDLINE_…`) and a message that
 * says what to do next. No message ever contains an API key, an access token or a webhook secret:
 * service-provided text and body snippets pass through {@link redactSecrets} first.
 *
 * @example
 * ```ts
 * try {
 *   await client.enrichProfile({ url: 'jane-doe' });
 * } catch (error) {
 *   if (error instanceof UnprocessableTargetError) markSkipped(error.requestId);
 *   else throw error;
 * }
 * ```
 */
export abstract class SeedlineClientError extends Error {
  /** Stable machine-readable code, e.g. `SEEDLINE_RATE_LIMITED`. */
  abstract readonly code: string;
  /** Whether the retry loop may try the same request again. */
  abstract readonly retryable: boolean;

  protected constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

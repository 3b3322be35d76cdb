import { InvalidApiKeyError } from '../client/errors.js';

/**
 * The service refused the API key (401), with where this command took the key from: the client
 * cannot know whether it came from a flag, the environment or a config file.
 */
export class ApiKeyRefusedError extends Error {
  /** Stable code, the same as the client's `InvalidApiKeyError`. */
  readonly code = 'SEEDLINE_INVALID_API_KEY';

  /**
   * @param refused the client's error (its message is already free of secrets).
   * @param keySource where the key came from, e.g. `api.api_key in seedline.yaml` or `--api-key`.
   */
  constructor(refused: InvalidApiKeyError, keySource: string) {
    super(`${refused.message} The key came from ${keySource}.`, { cause: refused });
    this.name = 'ApiKeyRefusedError';
  }
}

/**
 * `error` with where the key came from when it is a refused key; any other error unchanged.
 *
 * @example
 * ```ts
 * try { await ApiClient.connect(options); } catch (error) { throw withKeySource(error, '--api-key'); }
 * ```
 */
export function withKeySource(error: unknown, keySource: string): unknown {
  return error instanceof InvalidApiKeyError ? new ApiKeyRefusedError(error, keySource) : error;
}

import { InvalidArgumentError, Option } from 'commander';

/**
 * Commander parser of `--port`: an integer from 0 to 65535 (0 picks a free port). A value out of
 * range is refused as a usage error instead of reaching `listen`.
 *
 * @example
 * ```ts
 * command.option('--port <port>', 'port to listen on', parsePort, 8787);
 * ```
 */
export function parsePort(value: string): number {
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isInteger(parsed) || parsed < 0 || parsed > 65535)
    throw new InvalidArgumentError('expected a port from 0 to 65535 (0 picks a free one)');
  return parsed;
}

/** Where `--metrics` listens. */
export interface MetricsAddress {
  /** Interface. Default: `127.0.0.1`. */
  host: string;
  /** Port; 0 picks a free one. */
  port: number;
}

/**
 * Commander parser of `--metrics <[host:]port>`: a port from 0 to 65535, after an optional host
 * (`[::1]:9464` for an IPv6 address); the host defaults to 127.0.0.1, so nothing is exposed beyond
 * this machine unless asked.
 */
export function parseMetricsAddress(value: string): MetricsAddress {
  const match = /^(?:(\[[^\]]+\]|[^:]+):)?(\d{1,5})$/.exec(value.trim());
  const port = Number(match?.[2]);
  if (!match || port > 65535)
    throw new InvalidArgumentError('expected [host:]port, e.g. 9464 or 0.0.0.0:9464 (port 0 picks a free one)');
  return { host: match[1]?.replace(/^\[|\]$/g, '') ?? '127.0.0.1', port };
}

/** A server could not listen on the address it was given (port taken, not allowed, or no such interface). */
export class ListenError extends Error {
  /** Stable code for scripts. */
  readonly code = 'SEEDLINE_LISTEN_FAILED';
}

/**
 * The error of a failed `listen(port, host)` as a {@link ListenError} saying what to do, when its
 * cause is a known one (EADDRINUSE, EACCES, EADDRNOTAVAIL, ENOTFOUND); any other error unchanged.
 *
 * @example
 * ```ts
 * const url = await server.listen(port, host).catch((error) => { throw explainListenError(error, host, port); });
 * ```
 */
export function explainListenError(error: unknown, host: string, port: number): unknown {
  const cause = (error as { code?: unknown } | null)?.code;
  const advice: Record<string, string> = {
    EADDRINUSE: `${host}:${port} is already in use: stop what listens there, or pick another port with --port (0 picks a free one)`,
    EACCES: `not allowed to listen on ${host}:${port} (ports below 1024 need privileges): pick another port with --port`,
    EADDRNOTAVAIL: `${host} is not an address of this machine: pick one with --host (default 127.0.0.1)`,
    ENOTFOUND: `${host} is not a known host name: pick an address of this machine with --host (default 127.0.0.1)`,
  };
  const message = typeof cause === 'string' ? advice[cause] : undefined;
  return message === undefined ? error : new ListenError(`Cannot listen: ${message}.`, { cause: error });
}

/** The `--metrics <[host:]port>` option of `worker`, `schedule` and `serve` (see docs/metrics.md). */
export function metricsOption(): Option {
  return new Option(
    '--metrics <[host:]port>',
    'serve Prometheus metrics at http://host:port/metrics (host default 127.0.0.1; port 0 picks a free one)',
  ).argParser(parseMetricsAddress);
}

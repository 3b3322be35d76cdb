import { setMaxListeners } from 'node:events';
import type { SearchVariant } from './client-options.js';

/** Query parameters as they go on the URL. */
export type Query = Record<string, string | number | undefined>;

/** The path suffix of a search variant (`/sales-nav`), none for the default. */
export function variantSuffix(variant: SearchVariant): string {
  return variant === 'default' ? '' : `/${variant}`;
}

/** One path segment, escaped. */
export function seg(id: string): string {
  return encodeURIComponent(id);
}

/** Query parameters of a generic GET: scalars as text; absent and null values left out. */
export function queryOf(args: Record<string, unknown> | undefined): Query {
  const query: Query = {};
  for (const [key, value] of Object.entries(args ?? {})) {
    if (value === undefined || value === null) continue;
    query[key] = typeof value === 'number' ? value : typeof value === 'string' ? value : JSON.stringify(value);
  }
  return query;
}

/** `?a=1&b=x` of the parameters present; empty when none are. */
export function queryString(query: Query | undefined): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** The longest delay `setTimeout` keeps; a longer one fires at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** `value` when above 0 and at most `max`; a RangeError naming the option otherwise. */
export function positive(value: number, name: string, max = Number.MAX_SAFE_INTEGER): number {
  if (!(value > 0 && value <= max)) throw new RangeError(`${name} must be above 0 and at most ${max}, got ${value}`);
  return value;
}

/** The client's own copy of a stop signal, and how to stop following it. */
export interface StopRelay {
  /** Aborted with the caller's reason; undefined without a caller's signal. */
  signal: AbortSignal | undefined;
  dispose(): void;
}

/**
 * Follows `signal` through one listener, however many calls wait on the copy: Node warns of a leak
 * past 10 listeners on one signal, and a run has more calls than that in flight and queued.
 */
export function relayStop(signal: AbortSignal | undefined): StopRelay {
  if (!signal) return { signal: undefined, dispose: () => undefined };
  const relay = new AbortController();
  setMaxListeners(0, relay.signal);
  const forward = () => relay.abort(signal.reason);
  if (signal.aborted) forward();
  else signal.addEventListener('abort', forward, { once: true });
  return { signal: relay.signal, dispose: () => signal.removeEventListener('abort', forward) };
}

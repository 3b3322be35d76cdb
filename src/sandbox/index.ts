import type { AddressInfo } from 'node:net';
import { BatchEngine } from './batch-engine.js';
import type { BillingLedger } from './billing-ledger.js';
import { resolveOptions } from './options.js';
import type { FaultRates, SandboxOptions } from './options.js';
import { buildOpenApiDocument } from './openapi.js';
import { Router } from './router.js';
import { registerAccountRoutes } from './routes/account.js';
import { registerBatchRoutes } from './routes/batch.js';
import { registerDeliveryRoutes } from './routes/deliveries.js';
import { registerScrapeRoutes } from './routes/scrape.js';
import { registerSignalRoutes } from './routes/signals.js';
import { registerTriggerRoutes } from './routes/triggers.js';
import { createSandboxServer } from './server.js';
import { SignalStore } from './signals.js';
import { createBaseState } from './state.js';
import type { SandboxState } from './state.js';
import type { VirtualClock } from './virtual-clock.js';
import { WebhookDispatcher } from './webhook-dispatcher.js';

export type { FaultRates, SandboxOptions } from './options.js';
export type { LedgerEntry } from './billing-ledger.js';
export type { BillingLedger } from './billing-ledger.js';
export type { VirtualClock } from './virtual-clock.js';
export { signPayload } from './webhook-dispatcher.js';

/** Keys a session can use at once: fixtures without spend, and billing against the starting balance. */
export const SANDBOX_TEST_KEY = 'svc_test_sandbox';
/** A billed sandbox key (`svc_live_*`). */
export const SANDBOX_LIVE_KEY = 'svc_live_sandbox';

/** A running sandbox. */
export interface Sandbox {
  /** Base URL, e.g. `http://127.0.0.1:54321` (no trailing slash). */
  url: string;
  /** Virtual clock: `now()`, `advance(ms)` (runs due Signal checks and webhook retries), `set(date)`. */
  clock: VirtualClock;
  /** Every charge made (or, for test keys, that would have been made). */
  ledger: BillingLedger;
  /** Replaces the fault injection rates. */
  setFaults(faults: FaultRates): void;
  /** Revokes an API key: every later request with it is answered 401 `invalid_api_key`. */
  revokeKey(key: string): void;
  /** 429 answers sent so far (over the request rate or the concurrent batch jobs, or injected). */
  readonly rateLimitedAnswers: number;
  /** Resolves once every batch job has completed and no webhook attempt is in flight. */
  idle(): Promise<void>;
  /** Stops the server and all background work. */
  close(): Promise<void>;
}

/** Builds the state and routes of a sandbox without listening (the server is created by {@link startSandbox}). */
export function createSandboxState(options: SandboxOptions = {}): { state: SandboxState; router: Router } {
  const base = createBaseState(resolveOptions(options));
  const state = base as SandboxState;
  state.webhooks = new WebhookDispatcher(state);
  state.batches = new BatchEngine(state);
  state.signals = new SignalStore(state);
  const router = new Router();
  registerAccountRoutes(router);
  registerScrapeRoutes(router);
  registerBatchRoutes(router);
  registerSignalRoutes(router);
  registerTriggerRoutes(router);
  registerDeliveryRoutes(router);
  return { state, router };
}

/**
 * Starts the local emulator of the service on a real socket.
 *
 * @example
 * const sandbox = await startSandbox({ seed: 7 });
 * const res = await fetch(`${sandbox.url}/v1/profiles/enrich`, {
 *   method: 'POST',
 *   headers: { 'x-api-key': 'svc_test_demo', 'content-type': 'application/json' },
 *   body: JSON.stringify({ url: 'https://www.network.example/in/jane-doe' }),
 * });
 * await sandbox.close();
 */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const { state, router } = createSandboxState(options);
  let openapi: string | undefined;
  const server = createSandboxServer(state, router, () => (openapi ??= JSON.stringify(buildOpenApiDocument())));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(state.options.port, state.options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    clock: state.clock,
    ledger: state.ledger,
    setFaults: (faults) => state.faults.set(faults),
    revokeKey: (key) => state.accounts.revoke(key),
    get rateLimitedAnswers() {
      return state.rateLimitedAnswers;
    },
    idle: async () => {
      await state.batches.idle();
      await state.webhooks.idle();
    },
    close: async () => {
      state.closed = true;
      state.clock.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

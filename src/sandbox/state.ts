import { randomBytes } from 'node:crypto';
import { AccountStore } from './accounts.js';
import type { BatchEngine } from './batch-engine.js';
import { Billing } from './billing.js';
import { BillingLedger } from './billing-ledger.js';
import { FaultInjector } from './faults.js';
import { mulberry32 } from './fixtures/random.js';
import { IdGenerator } from './ids.js';
import type { ResolvedOptions } from './options.js';
import { RateLimiter } from './rate-limit.js';
import type { SignalStore } from './signals.js';
import { VirtualClock } from './virtual-clock.js';
import type { WebhookDispatcher } from './webhook-dispatcher.js';

/** The whole emulated service: every store, shared by all routes. */
export interface SandboxState {
  options: ResolvedOptions;
  clock: VirtualClock;
  ledger: BillingLedger;
  billing: Billing;
  accounts: AccountStore;
  faults: FaultInjector;
  limiter: RateLimiter;
  ids: IdGenerator;
  /** HS256 secret of access tokens, per instance. */
  jwtSecret: Buffer;
  /** Attempts already made of `flaky-*` calls (key + body hash). */
  flakySeen: Set<string>;
  /** 429 answers sent (a request over the rate, a batch job over the concurrent limit, an injected fault). */
  rateLimitedAnswers: number;
  /** Seeded draw in [0, 1) for latency. */
  latencyRandom: () => number;
  batches: BatchEngine;
  signals: SignalStore;
  webhooks: WebhookDispatcher;
  /** Set on close: background work stops. */
  closed: boolean;
}

/** The stores that do not depend on other stores' classes; the engines are attached by the caller. */
export function createBaseState(options: ResolvedOptions): Omit<SandboxState, 'batches' | 'signals' | 'webhooks'> {
  const clock = new VirtualClock(options.startTime);
  const ledger = new BillingLedger();
  return {
    options,
    clock,
    ledger,
    billing: new Billing(ledger, clock),
    accounts: new AccountStore(options.balance),
    faults: new FaultInjector(options.seed, options.faults),
    limiter: new RateLimiter(options.rpm),
    ids: new IdGenerator(),
    jwtSecret: randomBytes(32),
    flakySeen: new Set(),
    rateLimitedAnswers: 0,
    latencyRandom: mulberry32(options.seed ^ 0x1a7e),
    closed: false,
  };
}

import { unprocessable, SandboxError } from './errors.js';
import type { FaultScope } from './faults.js';
import type { TargetRef } from './fixtures/canonical.js';
import type { Operation, OperationResult } from './operations.js';
import type { SandboxState } from './state.js';

/** A scrape that succeeded, with the latency it was given. */
export interface ScrapeOutcome {
  result: OperationResult;
  latencyMs: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Simulated latency in real ms: a seeded draw in the configured range, scaled by `timeScale` and `factor`. */
export function drawLatency(state: SandboxState, factor: number): number {
  const [min, max] = state.options.latencyMs;
  if (max <= 0) return 0;
  return Math.round((min + state.latencyRandom() * (max - min)) * state.options.timeScale * factor);
}

/**
 * Runs one scrape as the live service would: injected faults, the forced outcomes of
 * docs/service-assumptions.md#slugs-that-force-an-outcome
 * (`flaky-*` fails its first attempt, `slow-*` takes 3× latency, `private-*`/`deleted-*` are 422), latency, data.
 * `attemptKey` identifies "the same call" for `flaky-*` (key + body hash).
 */
export async function performScrape(
  state: SandboxState,
  operation: Operation,
  body: unknown,
  target: TargetRef | null,
  scope: FaultScope,
  attemptKey: string,
): Promise<ScrapeOutcome> {
  const fault = state.faults.draw(scope);
  if (fault) throw fault;
  const slug = target?.slug ?? '';
  if (slug.startsWith('flaky-') && !state.flakySeen.has(attemptKey)) {
    state.flakySeen.add(attemptKey);
    throw new SandboxError('upstream_timeout', 'the live scrape did not finish in time');
  }
  const latencyMs = drawLatency(state, operation.latencyFactor(body) * (slug.startsWith('slow-') ? 3 : 1));
  if (latencyMs > 0) await sleep(latencyMs);
  if (slug.startsWith('private-')) throw unprocessable(`target is private: ${target?.url}`);
  if (slug.startsWith('deleted-')) throw unprocessable(`target was deleted: ${target?.url}`);
  const result = operation.run(
    body,
    { seed: state.options.seed, nowMs: state.clock.nowMs(), reposts: state.options.reposts },
    target,
  );
  return { result, latencyMs };
}

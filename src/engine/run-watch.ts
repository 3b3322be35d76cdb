// What a run watches while its streams run: whether the destination went away, and each stream's requests and seconds.
import { DestinationLostError } from './engine-errors.js';
import type { ServiceClient } from './service-calls.js';
import type { StreamOutcome } from './stream-context.js';

/** Counts a stream's requests (the client's, as streams run one at a time) and seconds into its outcome at `end`. */
export function streamMeasure(client: ServiceClient, outcome: StreamOutcome): { end(): void } {
  const requestsBefore = client.limiter?.stats?.requests;
  const startedMs = Date.now();
  return {
    end() {
      const requestsNow = client.limiter?.stats?.requests;
      if (requestsBefore !== undefined && requestsNow !== undefined) outcome.requests = requestsNow - requestsBefore;
      outcome.seconds = Math.round((Date.now() - startedMs) / 100) / 10;
    },
  };
}

/** Whether the run's destination went away, and how it was first seen (see `isDestinationLost`). */
export class LostDestination {
  error: DestinationLostError | undefined;

  note(error: unknown): void {
    this.error ??= error instanceof DestinationLostError ? error : new DestinationLostError(error);
  }
}

import { log } from '../util/log.js';

/** A cooperative stop request, and how to stop listening for it. */
export interface StopRequest {
  /** Aborted by the first SIGTERM or SIGINT. */
  signal: AbortSignal;
  /** Removes the signal handlers (the default handlers apply again). */
  dispose(): void;
}

/**
 * Turns the first SIGTERM or SIGINT into an aborted signal, so the run under way can commit what
 * has arrived and stop: passed to `openSession`, it also aborts the service calls in flight at
 * once (`SEEDLINE_CALL_ABORTED`), so a hung answer does not hold the run. A second one ends the
 * process at once (the next run resumes either way).
 * @param onStop told which signal came, once. Default: a line on stderr.
 */
export function stopOnSignals(
  onStop: (signal: NodeJS.Signals) => void = (s) =>
    log.info(`${s}: stopping: calls in flight are abandoned, what has arrived commits (send it again to quit now)`),
): StopRequest {
  const controller = new AbortController();
  const handler = (signal: NodeJS.Signals) => {
    if (controller.signal.aborted) process.exit(signal === 'SIGINT' ? 130 : 143);
    onStop(signal);
    controller.abort();
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off('SIGTERM', handler);
      process.off('SIGINT', handler);
    },
  };
}

/** What `seedline status` says of a worker. */
export type WorkerState = 'running' | 'stopped' | 'lost';

/** A worker whose heartbeat is this many of its leases old is lost (it renews every third of one). */
export const LOST_AFTER_LEASES = 3;

/** The lease assumed for a worker not yet through its first heartbeat: `seedline worker --lease`'s default. */
export const DEFAULT_LEASE_MS = 30_000;

/**
 * A worker's state: `stopped` once it recorded its stop; `lost` when its last heartbeat is older
 * than {@link LOST_AFTER_LEASES} leases (killed, paused, cut off: its items went to others once its
 * lease ran out); else `running`. Its lease is what its last heartbeat renewed it for (lease end
 * less heartbeat), {@link DEFAULT_LEASE_MS} before its first one. `now` is the database's clock,
 * the one heartbeats are stamped with.
 *
 * @example
 * ```ts
 * workerState({ stoppedAt: null, heartbeatAt, leaseUntil }, now); // 'running'
 * ```
 */
export function workerState(
  worker: { stoppedAt: Date | null; heartbeatAt: Date; leaseUntil: Date },
  now: Date,
): WorkerState {
  if (worker.stoppedAt !== null) return 'stopped';
  const renewed = worker.leaseUntil.getTime() - worker.heartbeatAt.getTime();
  const leaseMs = renewed > 0 ? renewed : DEFAULT_LEASE_MS;
  return now.getTime() - worker.heartbeatAt.getTime() > LOST_AFTER_LEASES * leaseMs ? 'lost' : 'running';
}

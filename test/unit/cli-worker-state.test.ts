import { describe, expect, it } from 'vitest';
import { DEFAULT_LEASE_MS, LOST_AFTER_LEASES, workerState } from '../../src/cli/worker-state.js';

const at = (ms: number) => new Date(Date.UTC(2026, 10, 28) + ms);
const LEASE = 2_000;
/** A worker whose last heartbeat, at 0, renewed its lease for `lease` ms. */
const beat = (lease = LEASE, stoppedAt: Date | null = null) => ({
  heartbeatAt: at(0),
  leaseUntil: at(lease),
  stoppedAt,
});

describe('workerState', () => {
  it('given a worker that recorded its stop, when its state is read, then it is stopped however old its heartbeat', () => {
    expect(workerState(beat(LEASE, at(10)), at(10))).toBe('stopped');
    expect(workerState(beat(LEASE, at(10)), at(10 * LOST_AFTER_LEASES * LEASE))).toBe('stopped');
  });

  it('given a heartbeat up to three of its leases old, when its state is read, then the worker is running', () => {
    expect(workerState(beat(), at(0))).toBe('running');
    expect(workerState(beat(), at(LEASE + 1))).toBe('running');
    expect(workerState(beat(), at(LOST_AFTER_LEASES * LEASE))).toBe('running');
  });

  it('given a heartbeat more than three of its leases old, when its state is read, then the worker is lost', () => {
    expect(workerState(beat(), at(LOST_AFTER_LEASES * LEASE + 1))).toBe('lost');
  });

  it('given a worker before its first heartbeat (lease end at its start), when its state is read, then the default lease is assumed', () => {
    expect(workerState(beat(0), at(LOST_AFTER_LEASES * DEFAULT_LEASE_MS))).toBe('running');
    expect(workerState(beat(0), at(LOST_AFTER_LEASES * DEFAULT_LEASE_MS + 1))).toBe('lost');
  });

  it('given a heartbeat stamped a moment after the clock was read, when its state is read, then the worker is running', () => {
    expect(workerState(beat(), at(-5))).toBe('running');
  });
});

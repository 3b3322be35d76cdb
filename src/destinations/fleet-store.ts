/**
 * What workers share through a Postgres destination (`seedline worker`): rounds of work split
 * into items with leases, the workers' heartbeats, each round's credit limit and the grants taken
 * from it, and the limits of each API key (its sliding window of requests, its batch job slots).
 * Interfaces only: `postgres/postgres-fleet-store.ts` is the one backend (DuckDB has one writer
 * per file, so it has no fleet). See docs/workers.md.
 *
 * @example
 * ```ts
 * const fleet = destination.fleetStore?.();
 * await fleet.ensureTables();
 * const round = await fleet.openRound(spec, { minGapMs: 60_000 });
 * const item = await fleet.claim(round.roundId, 'w-1', 30_000);
 * ```
 */
export interface FleetStore {
  /** Creates the fleet tables when missing. Idempotent, safe while other workers run. */
  ensureTables(): Promise<void>;
  /** Records a worker as started (or started again under the same id). */
  registerWorker(worker: { workerId: string; host: string; pid: number; keyId: string }): Promise<void>;
  /** Renews the worker's heartbeat and the leases of everything it holds (items, job slots) for `leaseMs`. */
  heartbeat(workerId: string, leaseMs: number): Promise<void>;
  /** Whether the worker still holds the item (false once another took it after its lease ran out: it must stop). */
  holds(roundId: string, item: string, workerId: string): Promise<boolean>;
  /** Records the worker as stopped and frees what it holds (its leased items become due again). */
  stopWorker(workerId: string): Promise<void>;
  /** Workers seen, newest heartbeat first (stopped ones too, for a while). */
  listWorkers(): Promise<WorkerRow[]>;
  /**
   * Read-only (`seedline status`): the workers as `listWorkers` gives them, each with the end of
   * its lease, and the database's clock; null when the fleet tables do not exist (none is created).
   */
  inspectWorkers(): Promise<WorkersSeen | null>;

  /**
   * The round still open, or a new one made from `spec` when none is open and the last began at
   * least `minGapMs` ago; null when none is open and it is too soon. Two workers asking at once
   * get the same round.
   */
  openRound(spec: RoundSpec, options: { minGapMs: number }): Promise<RoundRow | null>;
  /** The round still open, if any. */
  openRoundNow(): Promise<RoundRow | null>;
  /**
   * Leases the next item a worker may take in the round for `leaseMs`: due, or leased by a worker
   * whose lease ran out (then `takenOver` says what that worker held), in the lowest phase with
   * work left. `waiting`: items remain but none can be taken now (held by others, or an earlier
   * phase not done); `idle`: nothing is left, the round is finished.
   */
  claim(roundId: string, workerId: string, leaseMs: number): Promise<WorkItem | 'waiting' | 'idle'>;
  /**
   * Grants up to `credits` to a leased item, within what the round and the key `keyId` have left;
   * resolves to the grant, recorded on the item with the run that spends it and its key.
   */
  grant(
    roundId: string,
    item: string,
    workerId: string,
    credits: number,
    run: { runId: string; keyId: string },
  ): Promise<number>;
  /** The round's keys with what each has left, and whether it was refused. */
  roundKeys(roundId: string): Promise<RoundKeyRow[]>;
  /** Records a key as refused for the rest of the round (a 401, or out of credits): it takes no more items. */
  refuseKey(roundId: string, keyId: string, reason: string): Promise<void>;
  /**
   * Ends an item the worker still holds: its grant goes back to the round and what it spent is
   * counted. False when the worker no longer held it (nothing is changed).
   */
  finish(roundId: string, item: string, workerId: string, end: ItemEnd): Promise<boolean>;

  /**
   * Takes a request start in the sliding window of `keyId`: 0 when taken, else the milliseconds
   * until the oldest start in the window leaves it (try again then). Starts are stamped with the
   * database's clock, so workers on several hosts share one clock.
   */
  takeRequest(keyId: string, limit: number, windowMs: number): Promise<number>;
  /** Takes one of the key's `slots` batch job slots for the worker (leased as its items are); null when all are held. */
  takeJobSlot(keyId: string, workerId: string, slots: number, leaseMs: number): Promise<number | null>;
  /** Frees a job slot the worker holds. */
  releaseJobSlot(keyId: string, slot: number, workerId: string): Promise<void>;
}

/** A round to open: its items and the credits it may spend. */
export interface RoundSpec {
  /** A new id (`round_…`). */
  roundId: string;
  /** The most the round's items may spend together (per run, per month, balance floor: the least of them). */
  creditLimit: number;
  /** The round's items, every stream's shards. */
  items: readonly WorkItemSpec[];
  /** The keys work is spread across, each with what it may spend in the round. */
  keys: readonly RoundKeySpec[];
}

/** A key of a round, as it opens. */
export interface RoundKeySpec {
  /** A fingerprint of the key (never the key). */
  keyId: string;
  /** Credits the round may spend on it (its own budget, its balance above its floor). */
  creditLimit: number;
  /** Its share of the work. */
  weight: number;
}

/** A key of a round, as `_seedline_fleet_keys` holds it. */
export interface RoundKeyRow extends RoundKeySpec {
  reserved: number;
  spent: number;
  /** Why it takes no more items (refused, out of credits); null while it does. */
  refusal: string | null;
}

/** One item of work: a shard of a stream (the partitions whose key hashes to `shard` of `shards`). */
export interface WorkItemSpec {
  /** Its id within the round, `<stream>#<shard>/<shards>`. */
  item: string;
  stream: string;
  /** Streams run in phases: an item is taken only once every item of earlier phases is done. */
  phase: number;
  shard: number;
  shards: number;
}

/** An item leased to a worker. */
export interface WorkItem extends WorkItemSpec {
  roundId: string;
  /** Times it was leased, this one included. */
  attempts: number;
  /** The run of the worker that held it before its lease ran out, if one was started. */
  takenOverRun: string | null;
  /** The key an earlier attempt called with (its jobs are that key's); null when none did. */
  keyId: string | null;
}

/** How an item ended. */
export interface ItemEnd {
  /** `due`: its run stopped on request before its work was done; another worker takes it. */
  status: 'done' | 'failed' | 'due';
  /** The run that worked on it. */
  runId: string | null;
  /** Credits its run was billed or may have been (at risk), less those of earlier runs' jobs it read. */
  spent: number;
  error: string | null;
}

/** A round of work, as `_seedline_fleet_rounds` holds it. */
export interface RoundRow {
  roundId: string;
  startedAt: Date;
  finishedAt: Date | null;
  creditLimit: number;
  /** Credits granted to items under way. */
  reserved: number;
  /** Credits items spent (billed or at risk), and grants of items whose worker died (counted as spent). */
  spent: number;
}

/** A worker, as `_seedline_workers` holds it. */
export interface WorkerRow {
  workerId: string;
  host: string;
  pid: number;
  /** A fingerprint of the API key it calls with (never the key). */
  keyId: string;
  startedAt: Date;
  heartbeatAt: Date;
  stoppedAt: Date | null;
  /** Items it holds now. */
  leases: number;
  /** Credits granted to the items it holds. */
  creditsInFlight: number;
}

/** Workers as `seedline status` shows them, read without creating anything. */
export interface WorkersSeen {
  /** The database's clock when they were read (heartbeats are stamped with it, so no host's clock is compared). */
  now: Date;
  /** As `listWorkers` gives them, newest heartbeat first. */
  workers: (WorkerRow & {
    /** When its lease runs out without another heartbeat (its start, before its first heartbeat). */
    leaseUntil: Date;
  })[];
  /** The keys of the last 5 rounds, newest round first: what each could spend and spent, and why it was refused. */
  keys: {
    roundId: string;
    startedAt: Date;
    keyId: string;
    creditLimit: number;
    spent: number;
    refusal: string | null;
  }[];
}

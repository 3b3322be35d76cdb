import type pg from 'pg';
import type {
  FleetStore,
  ItemEnd,
  RoundKeyRow,
  RoundRow,
  RoundSpec,
  WorkerRow,
  WorkersSeen,
  WorkItem,
} from '../fleet-store.js';
import { quoteIdentifier } from '../identifiers.js';

/**
 * The fleet's tables in a Postgres schema (see `FleetStore`). Items are leased with
 * `FOR UPDATE SKIP LOCKED`, so workers never wait on each other's claims; a round's credits, a
 * key's request window and its job slots change under a row lock or a transaction-scoped advisory
 * lock, so two workers never both take the last credit, request or slot. Every lease and start is
 * stamped with the database's clock (`clock_timestamp()`): hosts need not agree on the time.
 */
export class PostgresFleetStore implements FleetStore {
  private readonly t: Record<'workers' | 'rounds' | 'keys' | 'work' | 'window' | 'slots', string>;
  private takes = 0;

  constructor(
    private readonly pool: pg.Pool,
    private readonly schema: string,
  ) {
    const s = quoteIdentifier(schema, 'schema');
    this.t = {
      workers: `${s}._seedline_workers`,
      rounds: `${s}._seedline_fleet_rounds`,
      keys: `${s}._seedline_fleet_keys`,
      work: `${s}._seedline_fleet_work`,
      window: `${s}._seedline_rate_window`,
      slots: `${s}._seedline_job_slots`,
    };
  }

  async ensureTables(): Promise<void> {
    const { t } = this;
    await this.transaction(async (c) => {
      // Two workers creating the same table at once would collide on the catalog: one at a time.
      await c.query('select pg_advisory_xact_lock(hashtextextended($1, 0))', [`seedline-ddl:${this.schema}`]);
      await c.query(`create schema if not exists ${quoteIdentifier(this.schema, 'schema')}`);
      await c.query(`create table if not exists ${t.workers} (
        worker_id text primary key, host text not null, pid integer not null, key_id text not null,
        started_at timestamptz not null, heartbeat_at timestamptz not null, lease_until timestamptz not null,
        stopped_at timestamptz)`);
      await c.query(`create table if not exists ${t.rounds} (
        round_id text primary key, started_at timestamptz not null, finished_at timestamptz,
        credit_limit bigint not null, reserved bigint not null default 0, spent bigint not null default 0)`);
      await c.query(`create table if not exists ${t.keys} (
        round_id text not null, key_id text not null, credit_limit bigint not null, weight double precision not null,
        reserved bigint not null default 0, spent bigint not null default 0, refusal text,
        primary key (round_id, key_id))`);
      await c.query(`create table if not exists ${t.work} (
        round_id text not null, item text not null, stream text not null, phase integer not null,
        shard integer not null, shards integer not null, status text not null, worker_id text,
        lease_until timestamptz, attempts integer not null default 0, run_id text,
        granted bigint not null default 0, spent bigint not null default 0, error text, key_id text,
        updated_at timestamptz not null, primary key (round_id, item))`);
      await c.query(`create table if not exists ${t.window} (key_id text not null, started_at timestamptz not null)`);
      await c.query(`create index if not exists _seedline_rate_window_key on ${t.window} (key_id, started_at)`);
      await c.query(`create table if not exists ${t.slots} (
        key_id text not null, slot integer not null, worker_id text, lease_until timestamptz,
        primary key (key_id, slot))`);
    });
  }

  async registerWorker(worker: { workerId: string; host: string; pid: number; keyId: string }): Promise<void> {
    await this.pool.query(
      `insert into ${this.t.workers} (worker_id, host, pid, key_id, started_at, heartbeat_at, lease_until)
       values ($1, $2, $3, $4, clock_timestamp(), clock_timestamp(), clock_timestamp())
       on conflict (worker_id) do update set host = excluded.host, pid = excluded.pid, key_id = excluded.key_id,
         started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, stopped_at = null`,
      [worker.workerId, worker.host, worker.pid, worker.keyId],
    );
  }

  async heartbeat(workerId: string, leaseMs: number): Promise<void> {
    const until = `clock_timestamp() + $2 * interval '1 millisecond'`;
    await this.transaction(async (c) => {
      await c.query(
        `update ${this.t.workers} set heartbeat_at = clock_timestamp(), lease_until = ${until} where worker_id = $1`,
        [workerId, leaseMs],
      );
      await c.query(`update ${this.t.work} set lease_until = ${until} where worker_id = $1 and status = 'leased'`, [
        workerId,
        leaseMs,
      ]);
      await c.query(`update ${this.t.slots} set lease_until = ${until} where worker_id = $1`, [workerId, leaseMs]);
    });
  }

  async holds(roundId: string, item: string, workerId: string): Promise<boolean> {
    const result = await this.pool.query(
      `select 1 from ${this.t.work} where round_id = $1 and item = $2 and worker_id = $3 and status = 'leased'`,
      [roundId, item, workerId],
    );
    return (result.rowCount ?? 0) > 0;
  }

  async stopWorker(workerId: string): Promise<void> {
    await this.transaction(async (c) => {
      await c.query(`update ${this.t.workers} set stopped_at = clock_timestamp() where worker_id = $1`, [workerId]);
      await c.query(`update ${this.t.slots} set worker_id = null, lease_until = null where worker_id = $1`, [workerId]);
    });
  }

  async listWorkers(): Promise<WorkerRow[]> {
    const result = await this.pool.query(
      `select w.worker_id, w.host, w.pid, w.key_id, w.started_at, w.heartbeat_at, w.stopped_at,
              count(i.item)::int as leases, coalesce(sum(i.granted), 0)::bigint as in_flight
         from ${this.t.workers} w
         left join ${this.t.work} i on i.worker_id = w.worker_id and i.status = 'leased'
        group by w.worker_id order by w.heartbeat_at desc limit 200`,
    );
    return result.rows.map((r) => ({
      workerId: String(r.worker_id),
      host: String(r.host),
      pid: Number(r.pid),
      keyId: String(r.key_id),
      startedAt: asDate(r.started_at),
      heartbeatAt: asDate(r.heartbeat_at),
      stoppedAt: r.stopped_at === null ? null : asDate(r.stopped_at),
      leases: Number(r.leases),
      creditsInFlight: Number(r.in_flight),
    }));
  }

  async inspectWorkers(): Promise<WorkersSeen | null> {
    const present = await this.pool.query(
      `select to_regclass($1) is not null and to_regclass($2) is not null as present, clock_timestamp() as now`,
      [this.t.workers, this.t.work],
    );
    const { present: found, now } = present.rows[0] as { present: boolean; now: unknown };
    if (!found) return null;
    const [workers, leases, keys] = await Promise.all([
      this.listWorkers(),
      this.pool.query(`select worker_id, lease_until from ${this.t.workers}`),
      this.recentKeyBooks(),
    ]);
    const leaseOf = new Map(leases.rows.map((r) => [String(r.worker_id), asDate(r.lease_until)]));
    return {
      now: asDate(now),
      workers: workers.map((w) => ({ ...w, leaseUntil: leaseOf.get(w.workerId) ?? w.heartbeatAt })),
      keys,
    };
  }

  /** The keys of the last rounds with what each spent (none before the keys' table existed). */
  private async recentKeyBooks(): Promise<WorkersSeen['keys']> {
    const present = await this.pool.query(`select to_regclass($1) is not null and to_regclass($2) is not null as ok`, [
      this.t.keys,
      this.t.rounds,
    ]);
    if (!(present.rows[0] as { ok: boolean }).ok) return [];
    const result = await this.pool.query(
      `select r.round_id, r.started_at, k.key_id, k.credit_limit, k.spent, k.refusal
         from ${this.t.keys} k join ${this.t.rounds} r on r.round_id = k.round_id
        where r.round_id in (select round_id from ${this.t.rounds} order by started_at desc limit 5)
        order by r.started_at desc, k.key_id`,
    );
    return result.rows.map((r) => ({
      roundId: String(r.round_id),
      startedAt: asDate(r.started_at),
      keyId: String(r.key_id),
      creditLimit: Number(r.credit_limit),
      spent: Number(r.spent),
      refusal: (r.refusal as string | null) ?? null,
    }));
  }

  async openRound(spec: RoundSpec, options: { minGapMs: number }): Promise<RoundRow | null> {
    return this.transaction(async (c) => {
      // One opener at a time, so two workers never open two rounds.
      await c.query('select pg_advisory_xact_lock(hashtextextended($1, 0))', [`seedline-round:${this.schema}`]);
      const open = await this.openRoundOn(c);
      if (open) return open;
      const last = await c.query(
        `select 1 from ${this.t.rounds} where started_at > clock_timestamp() - $1 * interval '1 millisecond' limit 1`,
        [options.minGapMs],
      );
      if ((last.rowCount ?? 0) > 0) return null;
      await c.query(
        `insert into ${this.t.rounds} (round_id, started_at, credit_limit) values ($1, clock_timestamp(), $2)`,
        [spec.roundId, spec.creditLimit],
      );
      for (const key of spec.keys)
        await c.query(`insert into ${this.t.keys} (round_id, key_id, credit_limit, weight) values ($1, $2, $3, $4)`, [
          spec.roundId,
          key.keyId,
          key.creditLimit,
          key.weight,
        ]);
      for (let i = 0; i < spec.items.length; i += 500) {
        const part = spec.items.slice(i, i + 500);
        await c.query(
          `insert into ${this.t.work} (round_id, item, stream, phase, shard, shards, status, updated_at)
           select $1, * , 'due', clock_timestamp() from unnest($2::text[], $3::text[], $4::int[], $5::int[], $6::int[])`,
          [
            spec.roundId,
            part.map((p) => p.item),
            part.map((p) => p.stream),
            part.map((p) => p.phase),
            part.map((p) => p.shard),
            part.map((p) => p.shards),
          ],
        );
      }
      return this.openRoundOn(c);
    });
  }

  async openRoundNow(): Promise<RoundRow | null> {
    const client = await this.pool.connect();
    try {
      return await this.openRoundOn(client);
    } finally {
      client.release();
    }
  }

  async claim(roundId: string, workerId: string, leaseMs: number): Promise<WorkItem | 'waiting' | 'idle'> {
    const { work, rounds } = this.t;
    return this.transaction(async (c) => {
      const picked = await c.query(
        `with phase as (select min(phase) as p from ${work} where round_id = $1 and status in ('due', 'leased')),
              pick as (
                select w.round_id, w.item, w.run_id as old_run, w.granted as old_granted, w.key_id as old_key
                  from ${work} w, phase
                 where w.round_id = $1 and w.phase = phase.p
                   and (w.status = 'due' or (w.status = 'leased' and w.lease_until < clock_timestamp()))
                 order by w.attempts, w.shard, w.item limit 1 for update of w skip locked)
         update ${work} w set status = 'leased', worker_id = $2, attempts = w.attempts + 1, run_id = null, granted = 0,
                lease_until = clock_timestamp() + $3 * interval '1 millisecond', updated_at = clock_timestamp()
           from pick where w.round_id = pick.round_id and w.item = pick.item
         returning w.*, pick.old_run, pick.old_granted, pick.old_key`,
        [roundId, workerId, leaseMs],
      );
      const row = picked.rows[0];
      if (row) {
        // The worker whose lease ran out may have spent all it was granted: counted as spent.
        const lost = Number(row.old_granted);
        if (lost > 0) await this.moveGrant(c, roundId, row.old_key as string | null, lost, lost);
        return {
          roundId,
          item: String(row.item),
          stream: String(row.stream),
          phase: Number(row.phase),
          shard: Number(row.shard),
          shards: Number(row.shards),
          attempts: Number(row.attempts),
          takenOverRun: (row.old_run as string | null) ?? null,
          keyId: (row.key_id as string | null) ?? null,
        };
      }
      const left = await c.query(`select 1 from ${work} where round_id = $1 and status in ('due', 'leased') limit 1`, [
        roundId,
      ]);
      if ((left.rowCount ?? 0) > 0) return 'waiting';
      await c.query(
        `update ${rounds} set finished_at = clock_timestamp() where round_id = $1 and finished_at is null`,
        [roundId],
      );
      return 'idle';
    });
  }

  async grant(
    roundId: string,
    item: string,
    workerId: string,
    credits: number,
    run: { runId: string; keyId: string },
  ): Promise<number> {
    return this.transaction(async (c) => {
      // Round first, then key: every granter locks in that order, so two never wait on each other.
      const round = await c.query(
        `select credit_limit - reserved - spent as left from ${this.t.rounds} where round_id = $1 for update`,
        [roundId],
      );
      const key = await c.query(
        `select credit_limit - reserved - spent as left, refusal from ${this.t.keys} where round_id = $1 and key_id = $2 for update`,
        [roundId, run.keyId],
      );
      if (!round.rows[0] || !key.rows[0]) return 0;
      const left = Math.min(Number(round.rows[0].left), key.rows[0].refusal === null ? Number(key.rows[0].left) : 0);
      const granted = Math.max(0, Math.min(credits, left));
      const held = await c.query(
        `update ${this.t.work} set granted = granted + $4, run_id = $5, key_id = $6
          where round_id = $1 and item = $2 and worker_id = $3 and status = 'leased'`,
        [roundId, item, workerId, granted, run.runId, run.keyId],
      );
      if ((held.rowCount ?? 0) === 0) return 0;
      await this.moveGrant(c, roundId, run.keyId, -granted, 0);
      return granted;
    });
  }

  async roundKeys(roundId: string): Promise<RoundKeyRow[]> {
    const result = await this.pool.query(`select * from ${this.t.keys} where round_id = $1 order by key_id`, [roundId]);
    return result.rows.map((r) => ({
      keyId: String(r.key_id),
      creditLimit: Number(r.credit_limit),
      weight: Number(r.weight),
      reserved: Number(r.reserved),
      spent: Number(r.spent),
      refusal: (r.refusal as string | null) ?? null,
    }));
  }

  async refuseKey(roundId: string, keyId: string, reason: string): Promise<void> {
    await this.pool.query(
      `update ${this.t.keys} set refusal = coalesce(refusal, $3) where round_id = $1 and key_id = $2`,
      [roundId, keyId, reason],
    );
  }

  async finish(roundId: string, item: string, workerId: string, end: ItemEnd): Promise<boolean> {
    return this.transaction(async (c) => {
      const held = await c.query(
        `select granted, key_id from ${this.t.work} where round_id = $1 and item = $2 and worker_id = $3 and status = 'leased' for update`,
        [roundId, item, workerId],
      );
      const row = held.rows[0];
      if (!row) return false;
      await c.query(
        `update ${this.t.work} set status = $4, worker_id = case when $4 = 'due' then null else worker_id end,
                lease_until = null, granted = 0, spent = spent + $5, run_id = $6, error = $7, updated_at = clock_timestamp()
          where round_id = $1 and item = $2 and worker_id = $3`,
        [roundId, item, workerId, end.status, end.spent, end.runId, end.error],
      );
      await this.moveGrant(c, roundId, (row.key_id as string | null) ?? null, Number(row.granted), end.spent);
      return true;
    });
  }

  /** Gives `released` credits of grants back to the round and its key, and counts `spent` on both. */
  private async moveGrant(c: pg.PoolClient, roundId: string, keyId: string | null, released: number, spent: number) {
    await c.query(`update ${this.t.rounds} set reserved = reserved - $2, spent = spent + $3 where round_id = $1`, [
      roundId,
      released,
      spent,
    ]);
    if (keyId !== null)
      await c.query(
        `update ${this.t.keys} set reserved = reserved - $3, spent = spent + $4 where round_id = $1 and key_id = $2`,
        [roundId, keyId, released, spent],
      );
  }

  async takeRequest(keyId: string, limit: number, windowMs: number): Promise<number> {
    const prune = ++this.takes % 200 === 0;
    return this.transaction(async (c) => {
      await c.query('select pg_advisory_xact_lock(hashtextextended($1, 0))', [`seedline-rate:${this.schema}:${keyId}`]);
      const seen = await c.query(
        `select count(*)::int as n,
                ceil(extract(epoch from min(started_at) + $2 * interval '1 millisecond' - clock_timestamp()) * 1000)::int as wait
           from ${this.t.window} where key_id = $1 and started_at > clock_timestamp() - $2 * interval '1 millisecond'`,
        [keyId, windowMs],
      );
      const { n, wait } = seen.rows[0] as { n: number; wait: number | null };
      if (n >= limit) return Math.max(1, wait ?? 1);
      await c.query(`insert into ${this.t.window} (key_id, started_at) values ($1, clock_timestamp())`, [keyId]);
      if (prune)
        await c.query(
          `delete from ${this.t.window} where key_id = $1 and started_at < clock_timestamp() - $2 * interval '1 millisecond'`,
          [keyId, windowMs],
        );
      return 0;
    });
  }

  async takeJobSlot(keyId: string, workerId: string, slots: number, leaseMs: number): Promise<number | null> {
    return this.transaction(async (c) => {
      await c.query(
        `insert into ${this.t.slots} (key_id, slot) select $1, s from generate_series(0, $2 - 1) s on conflict do nothing`,
        [keyId, slots],
      );
      const taken = await c.query(
        `update ${this.t.slots} s set worker_id = $2, lease_until = clock_timestamp() + $4 * interval '1 millisecond'
           from (select key_id, slot from ${this.t.slots}
                  where key_id = $1 and slot < $3 and (worker_id is null or lease_until < clock_timestamp())
                  order by slot limit 1 for update skip locked) free
          where s.key_id = free.key_id and s.slot = free.slot returning s.slot`,
        [keyId, workerId, slots, leaseMs],
      );
      const row = taken.rows[0];
      return row ? Number(row.slot) : null;
    });
  }

  async releaseJobSlot(keyId: string, slot: number, workerId: string): Promise<void> {
    await this.pool.query(
      `update ${this.t.slots} set worker_id = null, lease_until = null where key_id = $1 and slot = $2 and worker_id = $3`,
      [keyId, slot, workerId],
    );
  }

  private async openRoundOn(c: pg.PoolClient): Promise<RoundRow | null> {
    const result = await c.query(
      `select * from ${this.t.rounds} where finished_at is null order by started_at desc limit 1`,
    );
    const r = result.rows[0];
    if (!r) return null;
    return {
      roundId: String(r.round_id),
      startedAt: asDate(r.started_at),
      finishedAt: r.finished_at === null ? null : asDate(r.finished_at),
      creditLimit: Number(r.credit_limit),
      reserved: Number(r.reserved),
      spent: Number(r.spent),
    };
  }

  private async transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    // The pool drops its listener on checkout: without one, a connection the server ends (a worker
    // paused past its lease: idle_in_transaction_session_timeout) would be an uncaught exception.
    let failure: Error | undefined;
    const onError = (error: Error) => (failure ??= error);
    client.on('error', onError);
    try {
      await client.query('begin');
      const result = await fn(client);
      await client.query('commit');
      return result;
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.removeListener('error', onError);
      client.release(failure);
    }
  }
}

/** A timestamp as the pool parses it (an ISO string) or a Date, as a Date. */
function asDate(value: unknown): Date {
  return value instanceof Date ? value : new Date(String(value));
}

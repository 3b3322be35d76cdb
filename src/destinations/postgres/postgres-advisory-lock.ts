import pg from 'pg';
import { postgresConnection } from './postgres-connection.js';
import {
  DestinationLockLostError,
  DestinationLockedError,
  LockWaitAbortedError,
  describeCause,
} from '../destination-error.js';
import { sleep } from '../../util/sleep.js';

/**
 * The single-writer lock of a Postgres schema: a session-level advisory lock on a key derived
 * from the schema name, held on a connection of its own for as long as the writer lives. The
 * holder's description travels as that connection's `application_name`, so a second writer can
 * name it from `pg_stat_activity`. If that connection drops, the lock is gone with it: the loss is
 * remembered (`lostBecause`) and never silently healed, since another writer may have written since.
 */
export class PostgresAdvisoryLock {
  private client: pg.Client | null = null;
  private lost: string | null = null;

  constructor(
    private readonly connectionString: string,
    private readonly schema: string,
  ) {}

  /** Why the lock taken by `acquire` was lost (its connection dropped); null while it is held or was never taken. */
  get lostBecause(): string | null {
    return this.lost;
  }

  /**
   * Takes the lock (`shared`: alongside other shared holders, as workers do); throws `DestinationLockedError` naming the holder, or polls when `wait`.
   * Once held, checks that its connection is still alive; throws `DestinationLockLostError` once it was lost.
   */
  async acquire(holder: string, wait: boolean, signal?: AbortSignal, shared = false): Promise<void> {
    if (this.client) await this.ping(this.client);
    if (this.lost !== null) throw new DestinationLockLostError(this.target(), this.lost);
    if (this.client) return;
    // Keepalive turns a silently dead peer (network gone, server host down) into an error instead of a lock believed held forever;
    // without a delay the OS default applies (Linux: probes start after 2 idle hours).
    const client = new pg.Client({
      ...postgresConnection(this.connectionString),
      application_name: applicationName(holder),
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
    // Without listeners a dropped connection is an uncaught exception; while the lock is not yet held, the failed query reports it.
    client.on('error', (error) => this.dropped(client, describeCause(error)));
    client.on('end', () => this.dropped(client, 'the connection was closed'));
    await client.connect();
    try {
      for (;;) {
        const result = await client.query<{ locked: boolean }>(
          `select pg_try_advisory_lock${shared ? '_shared' : ''}(hashtextextended($1, 0)) as locked`,
          [this.key()],
        );
        if (result.rows[0]?.locked) {
          this.client = client;
          return;
        }
        if (!wait) throw new DestinationLockedError(this.target(), await this.holder(client));
        await sleep(250, signal);
        if (signal?.aborted) throw new LockWaitAbortedError(this.target());
      }
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
  }

  /** Releases the lock (closing its connection releases it too). */
  async release(): Promise<void> {
    const client = this.client;
    this.client = null;
    if (!client) return;
    // Closing the connection releases a lock of either mode.
    await client.query('select pg_advisory_unlock_all()').catch(() => undefined);
    await client.end().catch(() => undefined);
  }

  /** A round trip on the lock's connection: a drop not yet reported by an event shows here. */
  private async ping(client: pg.Client): Promise<void> {
    await client.query('select 1').catch((error: unknown) => this.dropped(client, describeCause(error)));
  }

  /** Remembers the first reason the held lock's connection gave for dropping, and closes what is left of it. */
  private dropped(client: pg.Client, reason: string): void {
    if (client !== this.client) return;
    this.client = null;
    this.lost = reason;
    client.end().catch(() => undefined);
  }

  private target(): string {
    return `Postgres schema ${this.schema}`;
  }

  private key(): string {
    return `seedline:${this.schema}`;
  }

  private async holder(client: pg.Client): Promise<string> {
    const result = await client.query<{
      application_name: string | null;
      pid: number;
      client_addr: string | null;
      backend_start: Date | null;
    }>(
      `select a.application_name, a.pid, a.client_addr::text as client_addr, a.backend_start
         from pg_locks l join pg_stat_activity a on a.pid = l.pid
        where l.locktype = 'advisory' and l.granted and l.objsubid = 1
          and ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended($1, 0)
        limit 1`,
      [this.key()],
    );
    const row = result.rows[0];
    if (!row) return 'another session (it has just released the lock: try again)';
    const name = row.application_name?.replace(/^seedline lock: /, '') || 'an unnamed session';
    return `${name} (backend pid ${row.pid}${row.client_addr ? ` from ${row.client_addr}` : ''}${row.backend_start ? `, since ${row.backend_start.toISOString()}` : ''})`;
  }
}

function applicationName(holder: string): string {
  // application_name is limited to 63 bytes of printable ASCII.
  // eslint-disable-next-line no-control-regex
  const printable = `seedline lock: ${holder}`.replace(/[^\x20-\x7e]/g, '?');
  return printable.slice(0, 63);
}

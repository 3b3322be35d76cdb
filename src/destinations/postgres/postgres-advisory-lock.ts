import pg from 'pg';
import { postgresConnection } from './postgres-connection.js';
import { DestinationLockedError, LockWaitAbortedError } from '../destination-error.js';
import { sleep } from '../../util/sleep.js';

/**
 * The single-writer lock of a Postgres schema: a session-level advisory lock on a key derived
 * from the schema name, held on a connection of its own for as long as the writer lives. The
 * holder's description travels as that connection's `application_name`, so a second writer can
 * name it from `pg_stat_activity`.
 */
export class PostgresAdvisoryLock {
  private client: pg.Client | null = null;

  constructor(
    private readonly connectionString: string,
    private readonly schema: string,
  ) {}

  /** Takes the lock; throws `DestinationLockedError` naming the holder, or polls when `wait`. */
  async acquire(holder: string, wait: boolean, signal?: AbortSignal): Promise<void> {
    if (this.client) return;
    const client = new pg.Client({ ...postgresConnection(this.connectionString), application_name: applicationName(holder) });
    await client.connect();
    try {
      for (;;) {
        const result = await client.query<{ locked: boolean }>('select pg_try_advisory_lock(hashtextextended($1, 0)) as locked', [this.key()]);
        if (result.rows[0]?.locked) {
          this.client = client;
          return;
        }
        if (!wait) throw new DestinationLockedError(`Postgres schema ${this.schema}`, await this.holder(client));
        await sleep(250, signal);
        if (signal?.aborted) throw new LockWaitAbortedError(`Postgres schema ${this.schema}`);
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
    await client.query('select pg_advisory_unlock(hashtextextended($1, 0))', [this.key()]).catch(() => undefined);
    await client.end().catch(() => undefined);
  }

  private key(): string {
    return `seedline:${this.schema}`;
  }

  private async holder(client: pg.Client): Promise<string> {
    const result = await client.query<{ application_name: string | null; pid: number; client_addr: string | null; backend_start: Date | null }>(
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

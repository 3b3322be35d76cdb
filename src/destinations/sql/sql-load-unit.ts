import type {
  AnswerRow,
  BatchRow,
  LoadUnit,
  PreparedWrite,
  RejectedRow,
  RepairRow,
  RunRow,
  SeedRow,
  StateRow,
  WriteOptions,
  WriteOutcome,
} from '../destination.js';
import { DestinationError, DestinationWriteError, UnitClosedError } from '../destination-error.js';
import type { SqlSession } from './sql-session.js';
import type { SqlSystemStore } from './sql-system-store.js';
import type { SystemTable } from './system-tables.js';
import { answerToDb, batchToDb, rejectedToDb, repairToDb, seedToDb, stateToDb, systemTables } from './system-tables.js';

/** What writes a unit's rows: the destination's write of records (or a prepared write) inside a unit's transaction. */
export interface UnitWrites {
  writeInUnit(
    session: SqlSession,
    runId: string,
    table: string,
    input: readonly Record<string, unknown>[] | PreparedWrite,
    stream?: string,
  ): Promise<WriteOutcome>;
}

/**
 * A unit: one transaction on one session. System-table upserts (state, seeds, batches, answers)
 * are held and sent as one upsert a table before COMMIT, or before a delete from system tables:
 * a unit that commits several pages (see `LoadWriter`) then pays for one, not one a page.
 */
export class SqlLoadUnit implements LoadUnit {
  private state: 'open' | 'committed' | 'rolled back' | 'failed' = 'open';
  /** Upserted rows not sent yet, by table, with what the first call was saving (for its error). */
  private readonly upserts = new Map<SystemTable, { what: string; rows: Record<string, unknown>[] }>();
  /** Journaled answers to delete, by stream, sent after the upserts: one delete a unit, not one a page. */
  private readonly answerDrops = new Map<string, string[]>();

  constructor(
    private readonly destination: UnitWrites,
    private readonly store: SqlSystemStore,
    private readonly session: SqlSession,
    private readonly runId: string,
    private readonly assertWriterLock: () => void,
  ) {}

  write(
    table: string,
    records: readonly Record<string, unknown>[] | PreparedWrite,
    options: WriteOptions = {},
  ): Promise<WriteOutcome> {
    const count = Array.isArray(records) ? records.length : (records as PreparedWrite).size;
    return this.guard(`Writing ${count} records to ${table}`, () =>
      this.destination.writeInUnit(this.session, this.runId, table, records, options.stream),
    );
  }

  reject(rows: readonly RejectedRow[]): Promise<void> {
    if (rows.length === 0) return this.guard('Saving rejected records', async () => undefined);
    const now = new Date();
    return this.guard('Saving rejected records', () =>
      this.store.insertRejected(
        this.session,
        rows.map((row) => rejectedToDb(row, now)),
      ),
    );
  }

  dropRejected(rows: readonly RejectedRow[]): Promise<void> {
    return this.guard('Removing retried records from _seedline_rejected', async () => {
      for (const row of rows) await this.session.run(this.store.deleteRejected(row));
    });
  }

  saveRepairs(rows: readonly RepairRow[]): Promise<void> {
    const now = new Date();
    return this.guard('Saving repair counts', () =>
      this.store.insertSystemRows(
        this.session,
        systemTables.repairs,
        rows.map((row) => repairToDb(row, now)),
      ),
    );
  }

  saveState(rows: readonly StateRow[]): Promise<void> {
    const now = new Date();
    return this.upsert(
      'Saving stream state',
      systemTables.state,
      rows.map((row) => stateToDb(row, now)),
    );
  }

  saveSeeds(rows: readonly SeedRow[]): Promise<void> {
    const now = new Date();
    return this.upsert(
      'Saving the seed ledger',
      systemTables.seeds,
      rows.map((row) => seedToDb(row, now)),
    );
  }

  updateRun(run: RunRow): Promise<void> {
    return this.guard("Saving the run's books", async () => {
      await this.session.run(this.store.updateRunStatement(run));
    });
  }

  saveBatches(rows: readonly BatchRow[]): Promise<void> {
    const now = new Date();
    return this.upsert(
      'Saving the batch ledger',
      systemTables.batches,
      rows.map((row) => batchToDb(row, now)),
    );
  }

  async saveAnswers(rows: readonly AnswerRow[]): Promise<void> {
    // An answer dropped earlier in the unit goes before one saved after it (the same key saved again stays).
    if (this.answerDrops.size > 0) await this.guard('Removing loaded answers', () => this.sendAnswerDrops());
    return this.upsert('Saving answers of billed calls', systemTables.answers, rows.map(answerToDb));
  }

  dropState(stream: string, partitions: readonly string[]): Promise<void> {
    return this.guard('Removing stream state', async () => {
      await this.sendUpserts();
      for (let i = 0; i < partitions.length; i += 500)
        await this.session.run(this.store.dropStateStatement(stream, partitions.slice(i, i + 500)));
    });
  }

  dropAnswers(stream: string, callKeys: readonly string[]): Promise<void> {
    return this.guard('Removing loaded answers', async () => {
      const held = this.answerDrops.get(stream);
      if (held) held.push(...callKeys);
      else if (callKeys.length > 0) this.answerDrops.set(stream, [...callKeys]);
    });
  }

  flush(): Promise<void> {
    return this.guard('Saving system rows', async () => {
      await this.sendUpserts();
      await this.sendAnswerDrops();
    });
  }

  /** Sends the held deletes of journaled answers, 500 keys a statement. */
  private async sendAnswerDrops(): Promise<void> {
    for (const [stream, keys] of this.answerDrops) {
      this.answerDrops.delete(stream);
      for (let i = 0; i < keys.length; i += 500)
        await this.session.run(this.store.dropAnswersStatement(stream, keys.slice(i, i + 500)));
    }
  }

  async commit(): Promise<void> {
    await this.flush();
    try {
      this.assertWriterLock();
      await this.session.run({ sql: 'COMMIT', parameters: [] });
      this.state = 'committed';
      await this.session.release();
    } catch (error) {
      this.state = 'failed';
      await this.session.run({ sql: 'ROLLBACK', parameters: [] }).catch(() => undefined);
      await this.session.release(true);
      if (error instanceof DestinationError) throw error;
      throw new DestinationWriteError('Committing the load unit', error);
    }
  }

  async rollback(): Promise<void> {
    if (this.state === 'committed' || this.state === 'rolled back') return;
    const wasFailed = this.state === 'failed';
    this.state = 'rolled back';
    let broken = false;
    try {
      await this.session.run({ sql: 'ROLLBACK', parameters: [] });
    } catch (error) {
      // A failed statement may already have ended the transaction; the connection is discarded either way.
      broken = true;
      if (!wasFailed) throw new DestinationWriteError('Rolling back the load unit', error);
    } finally {
      await this.session.release(broken);
    }
  }

  private upsert(what: string, table: SystemTable, rows: Record<string, unknown>[]): Promise<void> {
    return this.guard(what, async () => {
      const held = this.upserts.get(table);
      if (held) held.rows.push(...rows);
      else if (rows.length > 0) this.upserts.set(table, { what, rows: [...rows] });
    });
  }

  /** Sends the held upserts, one a table. */
  private async sendUpserts(): Promise<void> {
    for (const [table, { what, rows }] of this.upserts) {
      this.upserts.delete(table);
      try {
        await this.store.upsertRows(this.session, table, rows);
      } catch (error) {
        if (error instanceof DestinationError) throw error;
        throw new DestinationWriteError(what, error);
      }
    }
  }

  private async guard<T>(what: string, fn: () => Promise<T>): Promise<T> {
    if (this.state !== 'open') throw new UnitClosedError(this.state);
    try {
      return await fn();
    } catch (error) {
      this.state = 'failed';
      if (error instanceof DestinationError) throw error;
      throw new DestinationWriteError(what, error);
    }
  }
}

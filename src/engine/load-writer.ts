import type { Destination, LoadUnit, PreparedWrite, TableDefinition } from '../destinations/destination.js';
import type { Mutex } from '../util/mutex.js';
import type { ShapedRecords } from './table-shaper.js';

/** Counts of one load. */
export interface LoadCounts {
  records: number;
  rows: number;
  rejected: number;
}

/**
 * Writes shaped records through load units, creating each table once per run before its first
 * write, and always inside the caller's unit so rows commit with the state that describes them.
 */
export class LoadWriter {
  private readonly ensured = new Set<string>();
  /** Units of this writer shaped ahead and waiting for the lock (at most one: each holds its shaped rows). */
  private shapedWaiting = 0;

  constructor(
    private readonly destination: Destination,
    private readonly runId: string,
    private readonly stream: string,
    private readonly writeLock: Mutex,
  ) {}

  /**
   * Runs `fill` inside one load unit, after creating the groups' tables: writes the groups, lets
   * `fill` add ledger and state rows, commits; any failure rolls everything back and rethrows.
   * Units run one at a time per destination.
   */
  async inUnit(groups: readonly ShapedRecords[], fill: (unit: LoadUnit) => Promise<void>): Promise<LoadCounts> {
    const byTable = mergeByTable(groups);
    // Shaping rows needs no connection: once the tables exist it is done before waiting for the lock, while another unit
    // commits. One unit at a time, so concurrent pages do not all hold shaped copies of their rows while they wait.
    const early = this.shapedWaiting === 0 && byTable.every((g) => this.ensured.has(g.table.name)) ? this.prepare(byTable) : null;
    if (early) this.shapedWaiting++;
    return this.writeLock.run(async () => {
      if (early) this.shapedWaiting--;
      await this.ensure(byTable.map((g) => g.table));
      const writes = early ?? this.prepare(byTable);
      const unit = await this.destination.beginUnit(this.runId);
      try {
        const counts = await this.write(unit, writes);
        await fill(unit);
        await unit.commit();
        return counts;
      } catch (error) {
        await unit.rollback().catch(() => undefined);
        throw error;
      }
    });
  }

  private async ensure(tables: readonly TableDefinition[]): Promise<void> {
    for (const table of tables) {
      if (this.ensured.has(table.name)) continue;
      await this.destination.ensureTable(table);
      this.ensured.add(table.name);
    }
  }

  /** Each group with the write its rows are shaped into (none when it has no rows). */
  private prepare(groups: readonly ShapedRecords[]): PreparedGroup[] {
    return groups.map((group) => ({ group, write: group.rows.length > 0 ? this.destination.prepareWrite(group.table.name, group.rows, this.runId) : null }));
  }

  private async write(unit: LoadUnit, writes: readonly PreparedGroup[]): Promise<LoadCounts> {
    const totals = { records: 0, rows: 0, rejected: 0 };
    for (const { group, write } of writes) {
      if (write) {
        const outcome = await unit.write(group.table.name, write);
        totals.records += outcome.records;
        totals.rows += outcome.rows;
        totals.rejected += outcome.rejected;
      }
      if (group.rejected.length > 0) {
        await unit.reject(
          group.rejected.map((r) => ({ runId: this.runId, stream: this.stream, table: r.table, record: JSON.stringify(r.record) ?? 'null', reason: r.reason })),
        );
        totals.rejected += group.rejected.length;
      }
    }
    return totals;
  }
}

/** A table's records and the write they are shaped into. */
interface PreparedGroup {
  group: ShapedRecords;
  write: PreparedWrite | null;
}

/** One group per table: a bulk write costs about the same for one row as for thousands. */
function mergeByTable(groups: readonly ShapedRecords[]): ShapedRecords[] {
  const byTable = new Map<string, ShapedRecords>();
  for (const group of groups) {
    const merged = byTable.get(group.table.name);
    if (!merged) byTable.set(group.table.name, { table: group.table, rows: [...group.rows], rejected: [...group.rejected] });
    else {
      merged.rows.push(...group.rows);
      merged.rejected.push(...group.rejected);
    }
  }
  return [...byTable.values()];
}

import type { Destination, LoadUnit, TableDefinition } from '../destinations/destination.js';
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
    return this.writeLock.run(async () => {
      await this.ensure(byTable.map((g) => g.table));
      const unit = await this.destination.beginUnit(this.runId);
      try {
        const counts = await this.write(unit, byTable);
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

  private async write(unit: LoadUnit, groups: readonly ShapedRecords[]): Promise<LoadCounts> {
    const totals = { records: 0, rows: 0, rejected: 0 };
    for (const group of groups) {
      if (group.rows.length > 0) {
        const outcome = await unit.write(group.table.name, group.rows);
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

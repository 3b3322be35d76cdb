import type { Destination, LoadUnit, TableDefinition } from '../destinations/destination.js';
import type { ShapedRecords } from './table-shaper.js';

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
  ) {}

  /** Creates or evolves the tables, once per run each. Call before `beginUnit` (DDL is not part of a unit). */
  async ensure(tables: readonly TableDefinition[]): Promise<void> {
    for (const table of tables) {
      if (this.ensured.has(table.name)) continue;
      await this.destination.ensureTable(table);
      this.ensured.add(table.name);
    }
  }

  /** Writes rows and rejected records of each group into the unit; returns the counts. */
  async write(unit: LoadUnit, groups: readonly ShapedRecords[]): Promise<{ records: number; rows: number; rejected: number }> {
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

import type { ParentSource, Partition } from '../../manifest/components/partitions.js';
import type { PlannedRows, StreamContext, StreamPlan } from '../stream-context.js';

/**
 * Where a plan counts rows whose table it cannot name before the run (a batch stream whose table
 * name reads the seed): any table may receive them.
 */
export const ANY_TABLE = '*';

/**
 * Rows the planned streams may load into `table`. A child table (`profiles__positions`) holds
 * the items of a list in each parent record, as many as the service sent: no bound; nor has a
 * table that rows of {@link ANY_TABLE} may reach.
 */
export function plannedRows(upstream: readonly StreamPlan[], table: string): PlannedRows {
  const rows = { worst: 0, expected: 0 };
  for (const plan of upstream) {
    for (const [loaded, planned] of Object.entries(plan.rows ?? {})) {
      if (loaded === ANY_TABLE && planned.worst > 0) {
        rows.worst = Infinity;
        rows.expected += planned.expected;
      } else if (loaded === table) {
        rows.worst += planned.worst;
        rows.expected += planned.expected;
      } else if (table.startsWith(`${loaded}__`) && planned.worst > 0) {
        rows.worst = Infinity;
        rows.expected += planned.expected;
      }
    }
  }
  return rows;
}

/** `rows` times what each costs or loads: nothing when each is nothing, even for rows without a bound. */
export function timesRows(rows: number, each: number): number {
  return each === 0 ? 0 : rows * each;
}

/** Partitions that one planned row of a parent table makes, with how many such rows may come. */
export interface PartitionsToCome {
  parentRows: PlannedRows;
  /** The partitions of one planned parent row (one per expanded value). */
  partitions: Partition[];
}

/**
 * For each parent table a stream reads whose rows the streams before it may load in this run:
 * those rows and the partitions each makes. A value derived from a parent column (a path, a
 * size) is priced as the stream prices this stand-in.
 */
export function partitionsToCome(
  parents: readonly ParentSource[],
  ctx: StreamContext,
  upstream: readonly StreamPlan[],
): PartitionsToCome[] {
  return parents.flatMap((parent) => {
    const parentRows = plannedRows(upstream, parent.table);
    if (parentRows.worst === 0 || !parent.holds(ctx.seeds)) return [];
    const standIn = Object.fromEntries(parent.columns.map((column) => [column, `planned-${column}`]));
    return [{ parentRows, partitions: parent.partitionsOf([standIn]) }];
  });
}

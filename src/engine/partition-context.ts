import { quoteIdentifier } from '../destinations/destination.js';
import type { PartitionContext } from './partitions.js';
import type { StreamContext } from './stream-context.js';

/** The partition context of a stream: its options, the seeds, and reads of parent tables. */
export function partitionContext(ctx: StreamContext): PartitionContext {
  return {
    options: ctx.options,
    seeds: ctx.seeds,
    now: ctx.now(),
    readTable: async (table, columns) => {
      const from = `${quoteIdentifier(ctx.destination.schema, 'schema')}.${quoteIdentifier(table, 'table')}`;
      const select = columns.map((c) => quoteIdentifier(c, 'column')).join(', ');
      if (!(await ctx.destination.hasTable(table))) return [];
      return ctx.destination.query(`select ${select} from ${from} order by 1`);
    },
  };
}

import { SEED_CHUNK } from '../../config/seed-list.js';
import { quoteIdentifier } from '../../destinations/identifiers.js';
import type { PartitionContext, TableChunks } from '../../manifest/components/partitions.js';
import type { StreamContext } from '../stream-context.js';

/** What reading a stream's partitions needs of its context: the seeds, the clock and the warehouse. */
export type PartitionSources = Pick<StreamContext, 'seeds' | 'now' | 'destination'>;

/** The partition context of a stream: the seeds, and reads of parent tables. */
export function partitionContext(ctx: PartitionSources): PartitionContext {
  return {
    seeds: ctx.seeds,
    now: ctx.now(),
    readTable: async (table, columns) => {
      if (!(await ctx.destination.hasTable(table))) return [];
      // A read of the warehouse's data, as `tableChunks` reads it (DuckDB gives such reads its full memory).
      return ctx.destination.readQuery(parentSelect(ctx, table, columns));
    },
  };
}

/** Reads of a stream's parent tables a chunk at a time (for `PartitionScan`), in the order `readTable` gives. */
export function tableChunks(ctx: PartitionSources): TableChunks {
  return async function* (table, columns) {
    if (!(await ctx.destination.hasTable(table))) return;
    for await (const rows of ctx.destination.readQueryChunks(parentSelect(ctx, table, columns), SEED_CHUNK)) {
      yield rows.map((values) => Object.fromEntries(columns.map((column, i) => [column, values[i]])));
    }
  };
}

function parentSelect(ctx: PartitionSources, table: string, columns: readonly string[]): string {
  const from = `${quoteIdentifier(ctx.destination.schema, 'schema')}.${quoteIdentifier(table, 'table')}`;
  return `select ${columns.map((c) => quoteIdentifier(c, 'column')).join(', ')} from ${from} order by 1`;
}

import type { CompiledRequestStream } from '../../manifest/compile-stream.js';
import { passCost, type PassCost } from './pass-estimate.js';
import { RequestPartitions } from './request-plan.js';
import { addRows, type PlannedRows, type StreamContext, type StreamPlan } from '../stream-context.js';

/**
 * What a request stream would do now, without calling the service: partitions due, their calls
 * and credits. `upstream` are the plans of the streams before it in the run: partitions of the
 * parent rows they may load first are counted too, as many as those rows can be at most.
 */
export async function planRequestStream(
  stream: CompiledRequestStream,
  ctx: StreamContext,
  upstream: readonly StreamPlan[] = [],
): Promise<StreamPlan> {
  const partitions = await RequestPartitions.open(stream, ctx);
  const plan = await partitions.plan().finally(() => partitions.close());
  const toCome = await partitionsToCome(stream, ctx, upstream);
  for (const [table, rows] of Object.entries(toCome.rows)) addRows(plan.rows, table, rows);
  return {
    stream: stream.name,
    units: plan.todo + toCome.units,
    resumed: 0,
    skipped: plan.partitions - plan.todo,
    // Partitions to come are as many as their parents' rows turn out to be: the expected ones are counted as calls.
    calls: plan.todo + Math.ceil(toCome.expectedUnits),
    worstCaseCredits: plan.cost.worst + toCome.worst,
    estimatedCredits: plan.cost.expected + Math.ceil(toCome.expected),
    next: plan.next,
    maxCallCredits: Math.max(plan.cost.perCall, toCome.perCall),
    rows: plan.rows,
  };
}

/**
 * Partitions of a parent-table stream that do not exist yet: one for each row the planned
 * streams before it may load into a parent table (every page of theirs full), expanded (e.g. one
 * partition per activity kind) and paged up to `max_pages`. The worst case is an upper bound at
 * any depth: a child's rows to come bound its own children in turn. The expected case takes the
 * rows the parents' passes are expected to load (see `PassEstimate`).
 */
async function partitionsToCome(
  stream: CompiledRequestStream,
  ctx: StreamContext,
  upstream: readonly StreamPlan[],
): Promise<{ units: number; expectedUnits: number; rows: Record<string, PlannedRows> } & PassCost> {
  const toCome = {
    units: 0,
    expectedUnits: 0,
    worst: 0,
    expected: 0,
    perCall: 0,
    rows: {} as Record<string, PlannedRows>,
  };
  for (const parent of stream.partitions.parents) {
    const parentRows = plannedRows(upstream, parent.table);
    if (parentRows.worst === 0 || !parent.holds(ctx.seeds)) continue;
    // The partitions of one planned parent row (one per expanded value); a value derived from a
    // parent column (a path, a size) is priced as the stream prices this stand-in.
    const standIn = Object.fromEntries(parent.columns.map((column) => [column, `planned-${column}`]));
    for (const partition of parent.partitionsOf([standIn])) {
      const pass = passCost(stream, ctx, partition, {});
      toCome.units += parentRows.worst;
      toCome.expectedUnits += parentRows.expected;
      toCome.worst += timesRows(parentRows.worst, pass.worst);
      toCome.expected += parentRows.expected * pass.expected;
      toCome.perCall = Math.max(toCome.perCall, pass.perCall);
      addRows(toCome.rows, stream.table.nameOf(partition.values), {
        worst: timesRows(parentRows.worst, pass.records.worst),
        expected: parentRows.expected * pass.records.expected,
      });
    }
  }
  return toCome;
}

/** `rows` times what each costs or loads: nothing when each is nothing, even for rows without a bound. */
function timesRows(rows: number, each: number): number {
  return each === 0 ? 0 : rows * each;
}

/**
 * Rows the planned streams may load into `table`. A child table (`profiles__positions`) holds
 * the items of a list in each parent record, as many as the service sent: no bound.
 */
function plannedRows(upstream: readonly StreamPlan[], table: string): PlannedRows {
  const rows = { worst: 0, expected: 0 };
  for (const plan of upstream) {
    for (const [loaded, planned] of Object.entries(plan.rows ?? {})) {
      if (loaded === table) {
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

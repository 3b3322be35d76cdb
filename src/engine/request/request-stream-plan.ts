import type { CompiledRequestStream } from '../../manifest/compile-stream.js';
import { passCost, type PassCost } from './pass-estimate.js';
import { RequestPartitions } from './request-plan.js';
import { partitionsToCome, timesRows } from '../partitions/rows-to-come.js';
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
  const toCome = toComeOf(stream, ctx, upstream);
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
function toComeOf(
  stream: CompiledRequestStream,
  ctx: StreamContext,
  upstream: readonly StreamPlan[],
): { units: number; expectedUnits: number; rows: Record<string, PlannedRows> } & PassCost {
  const toCome = {
    units: 0,
    expectedUnits: 0,
    worst: 0,
    expected: 0,
    perCall: 0,
    rows: {} as Record<string, PlannedRows>,
  };
  for (const { parentRows, partitions } of partitionsToCome(stream.partitions.parents, ctx, upstream)) {
    for (const partition of partitions) {
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

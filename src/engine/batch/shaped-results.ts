import type { WriteShaping } from '../../normalize/record-shaper.js';
import { recordsOfPage, writeWithPartitions, type ShapedResultsPage, type ValuesOf } from './results-page-shaping.js';
import type { ServiceResponse } from '../service-calls.js';
import type { StreamContext } from '../stream-context.js';
import type { ShapedRecords, TableShaper } from '../../normalize/table-shaper.js';

/** A results page shaped in a worker thread, with its text (for the records, should a write need them) and the shapings used. */
export type ShapedPage = ShapedResultsPage & { text: string; shapings: WriteShaping[] };

/**
 * Reads a batch job's results pages in the run's worker threads (`StreamContext.shapingPool`),
 * shaped all the way to the writes of the tables its items name: undefined without them. A page
 * answers null (the client parses it on this thread) until those tables are made in this process
 * (by the unit of an earlier page), and when no worker can shape it.
 */
export function workerDecoder(
  ctx: Pick<StreamContext, 'shapingPool' | 'destination' | 'runId'>,
  stream: string,
  shaper: TableShaper,
  items: [string, Record<string, unknown>][],
): ((text: string) => Promise<ServiceResponse<ShapedPage> | null>) | undefined {
  const pool = ctx.shapingPool;
  if (!pool) return undefined;
  let tables: string[] | undefined;
  return async (text) => {
    // A table's name may depend on the partition (`activity_{{ partition.kind }}`): every one the job's items name.
    tables ??= [...new Set(items.map(([, values]) => shaper.definitionFor(values).name))];
    const shapings = tables.map((table) => ctx.destination.writeShaping(table));
    if (!shapings.every((s) => s !== undefined)) return null;
    const answer = await pool.shape({ stream, spec: shaper.spec, text, items, shapings, runId: ctx.runId });
    return answer && { data: { ...answer.data, text, shapings }, meta: answer.meta };
  };
}

/** The groups of a page shaped in a worker thread, for `LoadWriter.inUnit`: their rows go to the write as they are. */
export function shapedGroups(page: ShapedPage, valuesOf: ValuesOf, shaper: TableShaper): ShapedRecords[] {
  return page.tables.map((shaped): ShapedRecords => {
    const table = shaper.definitionFor(valuesOf(shaped.ref));
    const shaping = page.shapings.find((s) => s.table === shaped.table)!;
    const write = writeWithPartitions(shaped);
    if (!write) return { table, rows: [], rejected: shaped.rejected };
    const records = () => recordsOfPage(page.text, shaped.table, valuesOf, shaper);
    return { table, rows: [], rejected: shaped.rejected, shaped: { shaping, write, size: shaped.size, records } };
  });
}

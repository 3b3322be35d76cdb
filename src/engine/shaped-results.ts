import type { WriteShaping } from '../destinations/destination.js';
import type { ShapingSpec } from './page-shaping-pool.js';
import { recordsOfPage, writeWithPartitions, type ShapedResultsPage, type ValuesOf } from './results-page-shaping.js';
import type { ServiceResponse } from './service-calls.js';
import type { StreamContext } from './stream-context.js';
import type { ShapedRecords, TableShaper } from './table-shaper.js';

/** A results page shaped in a worker thread, with its text (for the records, should a write need them) and the shapings used. */
export type ShapedPage = ShapedResultsPage & { text: string; shapings: WriteShaping[] };

/**
 * Reads a batch job's results pages in the run's worker threads (`StreamContext.shaping`), shaped
 * all the way to the write of `table`: undefined without them. A page answers null (the client
 * parses it on this thread) until the table is made, by the unit of a first page, and when no
 * worker can shape it.
 */
export function workerDecoder(
  ctx: Pick<StreamContext, 'shaping' | 'destination' | 'runId'>,
  stream: string,
  spec: ShapingSpec,
  table: string,
  items: [string, Record<string, unknown>][],
): ((text: string) => Promise<ServiceResponse<ShapedPage> | null>) | undefined {
  const pool = ctx.shaping;
  if (!pool) return undefined;
  return async (text) => {
    const shaping = ctx.destination.writeShaping(table);
    if (!shaping) return null;
    const answer = await pool.shape({ stream, spec, text, items, shapings: [shaping], runId: ctx.runId });
    return answer && { data: { ...answer.data, text, shapings: [shaping] }, meta: answer.meta };
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

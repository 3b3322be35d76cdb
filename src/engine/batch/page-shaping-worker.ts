/**
 * A worker thread of `PageShapingPool`: reads, validates and shapes results pages
 * (`decodeResultsPage`) and hands the shaped rows back, so the main thread only writes them.
 */
import { parentPort } from 'node:worker_threads';
import type { WriteShaping } from '../../normalize/record-shaper.js';
import { decodeResultsPage, valuesLookup } from './results-page-shaping.js';
import { TableShaper } from '../../normalize/table-shaper.js';
import type { ShapingAnswer, ShapingRequest } from './page-shaping-pool.js';

const shapers = new Map<string, TableShaper>();
/** Layouts by the id the pool gave them: sent once, so the shaper's compiled plan (cached per layout) is kept. */
const layouts = new Map<number, WriteShaping['layout']>();

function answer(request: ShapingRequest): ShapingAnswer {
  if (request.spec) shapers.set(request.stream, TableShaper.fromSpec(request.spec));
  const shaper = shapers.get(request.stream);
  if (!shaper) throw new Error(`no shaping spec for stream ${request.stream}`);
  const shapings = new Map<string, WriteShaping>();
  for (const { table, layoutId, layout, rejectNul } of request.shapings) {
    if (layout) layouts.set(layoutId, layout);
    shapings.set(table, { table, layout: layouts.get(layoutId)!, rejectNul });
  }
  const decoded = decodeResultsPage(request.text, valuesLookup(request.items), shaper, shapings, request.runId);
  return { id: request.id, decoded };
}

parentPort!.on('message', (request: ShapingRequest) => {
  let reply: ShapingAnswer;
  try {
    reply = answer(request);
  } catch (error) {
    reply = { id: request.id, error: error instanceof Error ? error.message : String(error) };
  }
  parentPort!.postMessage(reply);
});

// A request that cannot be read has no id to answer: ending the thread makes the pool answer every page under way.
parentPort!.on('messageerror', (error) => {
  throw error;
});

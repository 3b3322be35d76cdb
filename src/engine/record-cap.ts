import type { CapNode } from '../manifest/manifest-schema.js';
import { lookup, renderTemplate } from '../manifest/template.js';
import { stableJson } from '../util/stable-json.js';
import { StreamDefinitionError } from './engine-errors.js';
import type { Partition } from './partitions.js';

const DAY_MS = 86_400_000;

/** What a partition's answer holds once a cut answer has been dealt with. */
export interface CapRead {
  /** The records to load (the answer's own, or those of its pieces merged). */
  records: unknown[];
  /** Records may be missing: the pass must not count as having read its whole window. */
  cut: boolean;
  /** How the pass ends when cut: `hold` remembers the window it could not finish; `open` leaves a closed window not final. */
  onCut: 'hold' | 'open';
  /** The cap the answer was cut at (`hold`). */
  at?: number;
}

/**
 * A window whose answer was cut at the cap: the last pass that was not cut (`since`, absent when
 * none was: all time) and the cap of the cut. Asking that window again with the same cap would
 * return the same newest records and pay for them again: it is asked again only with a larger cap.
 */
export interface HeldWindow {
  since?: string;
  at: number;
}

/** Where a cut answer's notice goes, and how a piece of a split window is read. */
export interface CapIo {
  stream: string;
  notice(stream: string, message: string): void;
  /** Calls the stream's call with `args` and returns the records of the answer. */
  read(args: Record<string, unknown>): Promise<unknown[]>;
}

/**
 * Applies a stream's `cap` to one answer: `records` came for `args`; when they are as many as the
 * service returns at most, the rest was cut off and no page leads to it.
 */
export async function readPastCap(
  node: CapNode,
  partition: Partition,
  options: Record<string, unknown>,
  args: Record<string, unknown>,
  records: unknown[],
  io: CapIo,
): Promise<CapRead> {
  if (node.type === 'none') return { records, cut: false, onCut: 'hold' };
  const at = Number(renderTemplate(node.at, { args, options }));
  if (!Number.isInteger(at) || at < 1)
    throw new StreamDefinitionError(
      `stream "${io.stream}": cap.at must render to a positive whole number of records (got ${String(at)})`,
    );
  const say = (pieceArgs: Record<string, unknown>, count: number) =>
    io.notice(io.stream, String(renderTemplate(node.notice, { partition: partition.values, args: pieceArgs, count })));
  if (records.length < at) return { records, cut: false, onCut: node.type === 'hold_window' ? 'hold' : 'open' };
  if (node.type === 'hold_window') {
    say(args, records.length);
    return { records, cut: true, onCut: 'hold', at };
  }
  const from = Date.parse(String(args[node.from]));
  const to = Date.parse(String(args[node.to]));
  if (Number.isNaN(from) || Number.isNaN(to))
    throw new StreamDefinitionError(
      `stream "${io.stream}": cap split_window needs ISO instants in args.${node.from} and args.${node.to}`,
    );
  let cut = false;
  // Halves, each split again only when it is cut too: at most about two calls per day of the window.
  const read = async (start: number, end: number, known?: unknown[]): Promise<unknown[][]> => {
    const pieceArgs = { ...args, [node.from]: new Date(start).toISOString(), [node.to]: new Date(end).toISOString() };
    const got = known ?? (await io.read(pieceArgs));
    if (got.length < at) return [got];
    const days = Math.ceil((end - start) / DAY_MS);
    if (days <= node.min_days) {
      cut = true;
      say(pieceArgs, got.length);
      return [got];
    }
    const middle = start + Math.floor(days / 2) * DAY_MS;
    return [...(await read(start, middle)), ...(await read(middle, end))];
  };
  const pieces = await read(from, to, records);
  return {
    records: pieces.length === 1 ? pieces[0]! : mergeByKey(pieces.flat(), node.key, node.sum),
    cut,
    onCut: 'open',
  };
}

/** Whether a held window is asked again with `args`: only when their cap is larger than the one that cut it. */
export function reopensHeldWindow(
  node: CapNode,
  held: HeldWindow | undefined,
  options: Record<string, unknown>,
  args: Record<string, unknown>,
): held is HeldWindow {
  if (held === undefined || node.type !== 'hold_window') return false;
  return Number(renderTemplate(node.at, { args, options })) > held.at;
}

/** Records of several windows as those of their union: one per `key`, the `sum` fields added up. */
function mergeByKey(records: unknown[], key: readonly string[], sum: readonly string[]): unknown[] {
  const merged = new Map<string, Record<string, unknown>>();
  for (const record of records) {
    const id = stableJson(key.map((field) => lookup(record, field) ?? null));
    const seen = merged.get(id);
    if (!seen) {
      merged.set(id, { ...(record as Record<string, unknown>) });
      continue;
    }
    for (const field of sum) {
      const a = seen[field];
      const b = (record as Record<string, unknown>)[field];
      if (typeof a === 'number' && typeof b === 'number') seen[field] = a + b;
    }
  }
  return [...merged.values()];
}

import { lookup } from '../../util/dotted-path.js';
import { stableJson } from '../../util/stable-json.js';
import { compileTemplate, type CompiledTemplate } from '../compiled-template.js';
import { StreamDefinitionError } from '../manifest-error.js';
import type { CapNode } from '../manifest-schema.js';
import type { Partition } from './partitions.js';

type Body = Record<string, unknown>;
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
  notice(message: string): void;
  /** Calls the stream's call with `args` and returns the records of the answer. */
  read(args: Body): Promise<unknown[]>;
}

/**
 * What an answer holding as many records as the service returns at most means (a compiled `cap`
 * node): the rest was cut off and no page leads to it.
 */
export interface Cap {
  /** Applies the cap to `records`, which came for `args`. */
  read(partition: Partition, args: Body, records: unknown[], io: CapIo): Promise<CapRead>;
  /** Whether a held window is asked again with `args`: only when their cap is larger than the one that cut it. */
  reopens(held: HeldWindow | undefined, args: Body): held is HeldWindow;
}

type Factory<T extends CapNode['type']> = (node: Extract<CapNode, { type: T }>, options: Body, stream: string) => Cap;

const factories = {
  none: () => ({
    read: async (_partition, _args, records) => ({ records, cut: false, onCut: 'hold' }),
    reopens: (_held): _held is HeldWindow => false,
  }),
  hold_window: (node, options, stream) => {
    const capOf = capAt(node.at, options, stream);
    const notice = compileTemplate(node.notice);
    return {
      read: async (partition, args, records, io) => {
        const at = capOf(args);
        if (records.length < at) return { records, cut: false, onCut: 'hold' };
        io.notice(String(notice({ partition: partition.values, args, count: records.length })));
        return { records, cut: true, onCut: 'hold', at };
      },
      reopens: (held, args): held is HeldWindow => held !== undefined && capOf(args, false) > held.at,
    };
  },
  split_window: (node, options, stream) => {
    const capOf = capAt(node.at, options, stream);
    const notice = compileTemplate(node.notice);
    return {
      read: async (partition, args, records, io) => {
        const at = capOf(args);
        if (records.length < at) return { records, cut: false, onCut: 'open' };
        return splitWindow(node, stream, { at, args, records, io, notice, partition });
      },
      reopens: (_held): _held is HeldWindow => false,
    };
  },
} satisfies { [T in CapNode['type']]: Factory<T> };

/** Compiles a `cap` node with the stream's options. */
export function compileCap(node: CapNode, options: Body, stream: string): Cap {
  return (factories[node.type] as Factory<typeof node.type>)(node as never, options, stream);
}

/** The cap of a call with `args`; `strict` refuses what is not a positive whole number. */
function capAt(template: unknown, options: Body, stream: string): (args: Body, strict?: boolean) => number {
  const render = compileTemplate(template, { options });
  return (args, strict = true) => {
    const at = Number(render({ args }));
    if (strict && (!Number.isInteger(at) || at < 1))
      throw new StreamDefinitionError(
        `stream "${stream}": cap.at must render to a positive whole number of records (got ${String(at)})`,
      );
    return at;
  };
}

interface CutAnswer {
  at: number;
  args: Body;
  records: unknown[];
  io: CapIo;
  notice: CompiledTemplate;
  partition: Partition;
}

/**
 * The window (args `from`..`to`) read again in halves, each split again only when it too is cut,
 * down to `min_days`: at most about two calls per day of the window. Pieces merge by `key`.
 */
async function splitWindow(
  node: Extract<CapNode, { type: 'split_window' }>,
  stream: string,
  cut: CutAnswer,
): Promise<CapRead> {
  const from = Date.parse(String(cut.args[node.from]));
  const to = Date.parse(String(cut.args[node.to]));
  if (Number.isNaN(from) || Number.isNaN(to))
    throw new StreamDefinitionError(
      `stream "${stream}": cap split_window needs ISO instants in args.${node.from} and args.${node.to}`,
    );
  let stillCut = false;
  const read = async (start: number, end: number, known?: unknown[]): Promise<unknown[][]> => {
    const args = { ...cut.args, [node.from]: new Date(start).toISOString(), [node.to]: new Date(end).toISOString() };
    const got = known ?? (await cut.io.read(args));
    if (got.length < cut.at) return [got];
    const days = Math.ceil((end - start) / DAY_MS);
    if (days <= node.min_days) {
      stillCut = true;
      cut.io.notice(String(cut.notice({ partition: cut.partition.values, args, count: got.length })));
      return [got];
    }
    const middle = start + Math.floor(days / 2) * DAY_MS;
    return [...(await read(start, middle)), ...(await read(middle, end))];
  };
  const pieces = await read(from, to, cut.records);
  return {
    records: pieces.length === 1 ? pieces[0]! : mergeByKey(pieces.flat(), node.key, node.sum),
    cut: stillCut,
    onCut: 'open',
  };
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

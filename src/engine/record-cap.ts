import type { CapNode } from '../manifest/manifest-schema.js';
import { renderTemplate } from '../manifest/template.js';
import { StreamDefinitionError } from './engine-errors.js';
import type { Partition } from './partitions.js';

/** What a partition's answer holds once a cut answer has been dealt with. */
export interface CapRead {
  /** The records to load. */
  records: unknown[];
  /** Records may be missing: the pass must not count as having read its whole window. */
  cut: boolean;
  /** How the pass ends when cut: `hold` keeps the window where it was. */
  onCut: 'hold';
}

/** Where a cut answer's notice goes. */
export interface CapIo {
  stream: string;
  notice(stream: string, message: string): void;
}

/**
 * Applies a stream's `cap` to one answer: `records` came for `args`; when they are as many as the
 * service returns at most, the rest was cut off and no page leads to it.
 */
export async function readPastCap(node: CapNode, partition: Partition, options: Record<string, unknown>, args: Record<string, unknown>, records: unknown[], io: CapIo): Promise<CapRead> {
  if (node.type === 'none') return { records, cut: false, onCut: 'hold' };
  const at = Number(renderTemplate(node.at, { args, options }));
  if (!Number.isInteger(at) || at < 1) throw new StreamDefinitionError(`stream "${io.stream}": cap.at must render to a positive whole number of records (got ${String(at)})`);
  const say = (pieceArgs: Record<string, unknown>, count: number) =>
    io.notice(io.stream, String(renderTemplate(node.notice, { partition: partition.values, args: pieceArgs, count })));
  if (records.length < at) return { records, cut: false, onCut: 'hold' };
  say(args, records.length);
  return { records, cut: true, onCut: 'hold' };
}

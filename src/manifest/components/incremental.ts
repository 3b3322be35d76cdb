import { lookup } from '../../util/dotted-path.js';
import { compileTemplate } from '../compiled-template.js';
import { StreamDefinitionError } from '../manifest-error.js';
import type { IncrementalNode, StampField } from '../manifest-schema.js';
import type { Partition } from './partitions.js';

/** What a page's records give an incremental pass. */
export interface IncrementalRead {
  /** The records to load. */
  fresh: unknown[];
  /** Whether the page reached items of earlier passes (not newer than the saved `newest`). */
  reachedKnown: boolean;
  /** The page's newest stamp. */
  newest?: string;
}

/** What makes a re-run cheap (a compiled `incremental` node). */
export interface IncrementalRule {
  /** Whether a pass stops at the newest item of earlier passes (it then has a stopping point once one was saved). */
  readonly stopsAtNewest: boolean;
  /**
   * The records of a page to load, whether the page reached what earlier passes loaded, and its
   * newest stamp. `readAll` (a full refresh) loads every record it reads.
   */
  read(records: unknown[], savedNewest: string | undefined, partition: Partition, readAll: boolean): IncrementalRead;
}

type Factory<T extends IncrementalNode['type']> = (
  node: Extract<IncrementalNode, { type: T }>,
  stream: string,
) => IncrementalRule;

const factories = {
  none: () => ({ stopsAtNewest: false, read: (records) => ({ fresh: records, reachedKnown: false }) }),
  /** Pass the newest saved field as the request's `since`: every record of the answer is new. */
  since: (node, stream) => {
    const fieldsOf = stampFields(node.field, stream);
    return {
      stopsAtNewest: false,
      read: (records, _saved, partition) => ({
        fresh: records,
        reachedKnown: false,
        newest: newestOf(stampsOf(records, fieldsOf(partition))),
      }),
    };
  },
  /** Stop paging at records not newer than the newest field saved by the last complete pass. */
  newest: (node, stream) => {
    const fieldsOf = stampFields(node.field, stream);
    return {
      stopsAtNewest: true,
      read: (records, savedNewest, partition, readAll) => {
        const stamps = stampsOf(records, fieldsOf(partition));
        const newest = newestOf(stamps);
        if (savedNewest === undefined) return { fresh: records, reachedKnown: false, newest };
        const known = Date.parse(savedNewest);
        // A record without a stamp never stops paging.
        const isNew = (stamp: string | undefined) => stamp === undefined || Date.parse(stamp) > known;
        const reachedKnown = stamps.some((s) => !isNew(s));
        return { fresh: readAll ? records : records.filter((_, i) => isNew(stamps[i])), reachedKnown, newest };
      },
    };
  },
} satisfies { [T in IncrementalNode['type']]: Factory<T> };

/** Compiles an `incremental` node. */
export function compileIncremental(node: IncrementalNode, stream: string): IncrementalRule {
  return (factories[node.type] as Factory<typeof node.type>)(node as never, stream);
}

/** The fields a partition's records are stamped by (`incremental.field`), in the order tried. */
export function stampFields(field: StampField, stream: string): (partition: Partition) => readonly string[] {
  if (Array.isArray(field)) return () => field;
  const by = compileTemplate(field.by);
  return (partition) => {
    const value = String(by({ partition: partition.values }));
    const fields = field.cases[value];
    if (!fields)
      throw new StreamDefinitionError(
        `stream "${stream}": incremental.field has no case for "${value}" (cases: ${Object.keys(field.cases).join(', ')})`,
      );
    return fields;
  };
}

function stampsOf(records: readonly unknown[], fields: readonly string[]): (string | undefined)[] {
  return records.map((record) => firstStamp(record, fields));
}

/** The first of `fields` a record holds as an ISO instant. */
function firstStamp(record: unknown, fields: readonly string[]): string | undefined {
  for (const field of fields) {
    const value = lookup(record, field);
    if (typeof value === 'string' && !Number.isNaN(Date.parse(value))) return value;
  }
  return undefined;
}

function newestOf(stamps: readonly (string | undefined)[]): string | undefined {
  return stamps.reduce<string | undefined>((max, s) => laterIso(max, s), undefined);
}

/** The later of two ISO instants (either may be absent). */
export function laterIso(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Date.parse(b) > Date.parse(a) ? b : a;
}

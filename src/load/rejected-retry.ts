import { quoteIdentifier } from '../destinations/identifiers.js';
import { type Destination, type RejectedRow } from '../destinations/destination.js';
import type { TableTemplate } from '../manifest/components/table.js';
import { Mutex } from '../util/mutex.js';
import { LoadWriter } from './load-writer.js';
import { TableShaper, type ShapedRecords } from '../normalize/table-shaper.js';

/** Which rows of `_seedline_rejected` to work on. */
export interface RejectedFilter {
  /** Only this stream. Default: every stream. */
  stream?: string;
  /** Only rows whose reason contains this text. Default: any reason. */
  reason?: string;
}

/** What a retry did for one stream. */
export interface RetryOutcome {
  stream: string;
  /** Rows of `_seedline_rejected` taken. */
  retried: number;
  /** Records that loaded into their tables. */
  loaded: number;
  /** Records rejected again (kept in `_seedline_rejected` with today's reason). */
  rejected: number;
}

/** A row of `_seedline_rejected` as read back. */
type StoredRejection = RejectedRow & { partition: string | null };

/**
 * Shapes the records kept in `_seedline_rejected` again with today's code and each stream's
 * current options (its `schema_contract` included) and loads them without calling the service:
 * per stream, one unit writes what now fits, keeps what still does not (with today's reason) and
 * deletes the rows it took, so a crash leaves either all of it or none, and a second retry finds
 * only what still does not fit. Streams without a table manifest (webhooks, signals) are left.
 */
/**
 * Rejections that are not records of a stream's table: targets `signals apply` sent that the
 * service refused (`{ tag, site_url }`), and webhook deliveries that were not events.
 */
const NOT_RECORDS: ReadonlySet<string> = new Set(['signals', 'webhooks']);

export async function retryRejected(
  destination: Destination,
  tableOf: (stream: string) => TableTemplate | undefined,
  run: { id: string; startedAt: Date },
  filter: RejectedFilter = {},
): Promise<RetryOutcome[]> {
  const outcomes: RetryOutcome[] = [];
  for (const stream of await rejectedStreams(destination, filter)) {
    const template = NOT_RECORDS.has(stream) ? undefined : tableOf(stream);
    if (!template) continue;
    const shaper = new TableShaper(template, { id: run.id, started_at: run.startedAt.toISOString() });
    const taken: StoredRejection[] = [];
    const groups: ShapedRecords[] = [];
    for (const [partition, rows] of byPartition(await readRejected(destination, { ...filter, stream }))) {
      // Only rows whose table the partition names: a row kept before partitions were recorded, of a table named per partition, stays.
      const table = tableFor(shaper, partition);
      const fitting = rows.filter((row) => row.table === table);
      if (fitting.length === 0) continue;
      taken.push(...fitting);
      groups.push(
        shaper.shape(
          partition,
          fitting.map((row) => JSON.parse(row.record) as unknown),
        ),
      );
    }
    if (taken.length === 0) continue;
    const writer = new LoadWriter(destination, run.id, stream, new Mutex());
    const counts = await writer.inUnit(groups, (unit) => unit.dropRejected(taken));
    outcomes.push({ stream, retried: taken.length, loaded: counts.records, rejected: counts.rejected });
  }
  await destination.settle();
  return outcomes;
}

/** Streams with rows in `_seedline_rejected` matching the filter. */
export async function rejectedStreams(destination: Destination, filter: RejectedFilter): Promise<string[]> {
  const { where, params } = filterSql(filter);
  const rows = await destination.query<{ stream: string }>(
    `select distinct stream from ${rejectedTable(destination)}${where} order by stream`,
    params,
  );
  return rows.map((row) => row.stream);
}

/** Counts of `_seedline_rejected` by stream, table and reason, with when they were first and last rejected. */
export function listRejected(destination: Destination, filter: RejectedFilter): Promise<Record<string, unknown>[]> {
  const { where, params } = filterSql(filter);
  return destination.query(
    `select stream, "table", reason, count(*) as records, min(rejected_at) as first_rejected_at, max(rejected_at) as last_rejected_at ` +
      `from ${rejectedTable(destination)}${where} group by stream, "table", reason order by stream, "table", records desc, reason`,
    params,
  );
}

async function readRejected(destination: Destination, filter: RejectedFilter): Promise<StoredRejection[]> {
  const { where, params } = filterSql(filter);
  const rows = await destination.query<{
    run_id: string;
    stream: string;
    table: string;
    record: string;
    reason: string;
    partition: string | null;
  }>(
    // Oldest first: a key rejected twice loads its newer record last.
    `select run_id, stream, "table", record, reason, partition from ${rejectedTable(destination)}${where} order by rejected_at`,
    params,
  );
  return rows.map((row) => ({
    runId: row.run_id,
    stream: row.stream,
    table: row.table,
    record: row.record,
    reason: row.reason,
    partition: row.partition,
  }));
}

/** Rows grouped by the partition they were shaped for (`{}` for rows kept before partitions were recorded), in their order. */
function byPartition(rows: readonly StoredRejection[]): [Record<string, unknown>, StoredRejection[]][] {
  const groups = new Map<string, StoredRejection[]>();
  for (const row of rows) {
    const key = row.partition ?? '{}';
    groups.set(key, [...(groups.get(key) ?? []), row]);
  }
  return [...groups].map(([partition, grouped]) => [JSON.parse(partition) as Record<string, unknown>, grouped]);
}

/** The table a partition's records go to; undefined when its name cannot be made from it (a legacy row of `activity_{{ partition.kind }}`). */
function tableFor(shaper: TableShaper, partition: Record<string, unknown>): string | undefined {
  try {
    return shaper.definitionFor(partition).name;
  } catch {
    return undefined;
  }
}

function rejectedTable(destination: Destination): string {
  return `${quoteIdentifier(destination.schema, 'schema')}.${quoteIdentifier('_seedline_rejected', 'table')}`;
}

function filterSql(filter: RejectedFilter): { where: string; params: unknown[] } {
  const conditions: string[] = [];
  const params: unknown[] = [];
  if (filter.stream !== undefined) conditions.push(`stream = $${params.push(filter.stream)}`);
  if (filter.reason !== undefined)
    conditions.push(
      `reason like $${params.push(`%${filter.reason.replace(/[\\%_]/g, (c) => `\\${c}`)}%`)} escape '\\'`,
    );
  return { where: conditions.length > 0 ? ` where ${conditions.join(' and ')}` : '', params };
}

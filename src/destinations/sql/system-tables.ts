import type { AnswerRow, BatchRow, RejectedRow, RepairRow, RunRow, SeedRow, StateRow } from '../destination.js';
import type { LogicalType } from '../../normalize/table-layout.js';

/** A system table: its columns (snake_case of the Row interfaces) and primary key. */
export interface SystemTable {
  name: string;
  columns: readonly (readonly [name: string, type: LogicalType, notNull?: boolean])[];
  primaryKey: readonly string[];
  /**
   * Columns a row's first write sets and later upserts of its key keep, besides `created_at`:
   * what the key itself stands for. An upsert that rewrote them would write the same values again,
   * and a batch's body (up to 1,000 items) is most of its row.
   */
  writeOnce?: readonly string[];
  /**
   * A text column emptied (`''`) once its row is upserted with `status`: what is kept only while it
   * may be sent again. Single-column keys only.
   */
  emptiedAt?: { column: string; status: string };
}

/** The `_seedline_*` tables, in creation order. */
export const systemTables = {
  runs: {
    name: '_seedline_runs',
    columns: [
      ['run_id', 'text', true],
      ['started_at', 'timestamp', true],
      ['finished_at', 'timestamp'],
      ['status', 'text', true],
      ['streams', 'text'],
      ['credits_estimated', 'double'],
      ['credits_used', 'double'],
      ['error', 'text'],
      // Added after the first release: ensureSystemTables adds it to older destinations.
      ['stop_reason', 'text'],
      ['schedule_group', 'text'],
      ['credits_at_risk', 'double'],
      ['credits_settled_earlier', 'double'],
      ['balance_change', 'double'],
    ],
    primaryKey: ['run_id'],
  },
  state: {
    name: '_seedline_state',
    columns: [
      ['stream', 'text', true],
      ['partition', 'text', true],
      ['cursor', 'text', true],
      ['updated_at', 'timestamp', true],
    ],
    primaryKey: ['stream', 'partition'],
  },
  seeds: {
    name: '_seedline_seeds',
    columns: [
      ['stream', 'text', true],
      ['seed_key', 'text', true],
      ['seed', 'text', true],
      ['status', 'text', true],
      ['canonical_url', 'text'],
      ['job_id', 'text'],
      ['credits', 'double'],
      ['fetched_at', 'timestamp'],
      ['error', 'text'],
      ['updated_at', 'timestamp', true],
    ],
    primaryKey: ['stream', 'seed_key'],
  },
  batches: {
    name: '_seedline_batches',
    columns: [
      ['idempotency_key', 'text', true],
      ['stream', 'text', true],
      ['body_hash', 'text', true],
      ['body', 'text', true],
      ['job_id', 'text'],
      ['status', 'text', true],
      ['results_cursor', 'text'],
      ['item_count', 'bigint', true],
      ['created_at', 'timestamp', true],
      ['updated_at', 'timestamp', true],
      ['key_id', 'text'],
    ],
    primaryKey: ['idempotency_key'],
    // The idempotency key is a hash of the stream and the items: a key's body never changes (src/engine/batch/batch-runner.ts).
    writeOnce: ['stream', 'body_hash', 'body', 'item_count'],
    // A completed job is never sent again; a table holding every body of a long seed list made each later row's insert
    // and checkpoint rewrite them all in DuckDB (~160 KB a body; bench/README.md).
    emptiedAt: { column: 'body', status: 'completed' },
  },
  answers: {
    name: '_seedline_answers',
    columns: [
      ['stream', 'text', true],
      ['call_key', 'text', true],
      ['partition', 'text', true],
      ['call', 'text', true],
      ['args', 'text', true],
      ['answer', 'text', true],
      ['credits', 'double', true],
      ['run_id', 'text', true],
      ['received_at', 'timestamp', true],
      ['partition_values', 'text', false],
    ],
    primaryKey: ['stream', 'call_key'],
  },
  rejected: {
    name: '_seedline_rejected',
    columns: [
      ['run_id', 'text', true],
      ['stream', 'text', true],
      ['table', 'text', true],
      ['record', 'text', true],
      ['reason', 'text', true],
      ['rejected_at', 'timestamp', true],
      // Added after the first release: the partition the record was shaped for, so `rejected retry` can shape it again.
      ['partition', 'text'],
    ],
    primaryKey: [],
  },
  repairs: {
    name: '_seedline_repairs',
    columns: [
      ['run_id', 'text', true],
      ['stream', 'text', true],
      ['table', 'text', true],
      ['field', 'text', true],
      ['change', 'text', true],
      ['count', 'bigint', true],
      ['recorded_at', 'timestamp', true],
    ],
    primaryKey: [],
  },
} as const satisfies Record<string, SystemTable>;

type DbRow = Record<string, unknown>;

/** `_seedline_state` row of a StateRow. */
export function stateToDb(row: StateRow, now: Date): DbRow {
  return { stream: row.stream, partition: row.partition, cursor: row.cursor, updated_at: row.updatedAt ?? now };
}

/** StateRow of a `_seedline_state` row. */
export function stateFromDb(row: DbRow): StateRow {
  return {
    stream: String(row.stream),
    partition: String(row.partition),
    cursor: String(row.cursor),
    updatedAt: toDate(row.updated_at) ?? new Date(0),
  };
}

/** `_seedline_seeds` row of a SeedRow. */
export function seedToDb(row: SeedRow, now: Date): DbRow {
  return {
    stream: row.stream,
    seed_key: row.seedKey,
    seed: row.seed,
    status: row.status,
    canonical_url: row.canonicalUrl ?? null,
    job_id: row.jobId ?? null,
    credits: row.credits ?? 0,
    fetched_at: row.fetchedAt ?? null,
    error: row.error ?? null,
    updated_at: row.updatedAt ?? now,
  };
}

/** SeedRow of a `_seedline_seeds` row. */
export function seedFromDb(row: DbRow): SeedRow {
  return {
    stream: String(row.stream),
    seedKey: String(row.seed_key),
    seed: String(row.seed),
    status: row.status as SeedRow['status'],
    canonicalUrl: nullableString(row.canonical_url),
    jobId: nullableString(row.job_id),
    credits: Number(row.credits ?? 0),
    fetchedAt: toDate(row.fetched_at),
    error: nullableString(row.error),
    updatedAt: toDate(row.updated_at) ?? new Date(0),
  };
}

/** `_seedline_batches` row of a BatchRow. */
export function batchToDb(row: BatchRow, now: Date): DbRow {
  return {
    idempotency_key: row.idempotencyKey,
    stream: row.stream,
    body_hash: row.bodyHash,
    body: row.body,
    job_id: row.jobId ?? null,
    status: row.status,
    results_cursor: row.resultsCursor ?? null,
    item_count: row.itemCount,
    created_at: row.createdAt ?? now,
    updated_at: row.updatedAt ?? now,
    key_id: row.keyId ?? null,
  };
}

/** BatchRow of a `_seedline_batches` row. */
export function batchFromDb(row: DbRow): BatchRow {
  return {
    idempotencyKey: String(row.idempotency_key),
    stream: String(row.stream),
    bodyHash: String(row.body_hash),
    body: String(row.body),
    jobId: nullableString(row.job_id),
    status: row.status as BatchRow['status'],
    resultsCursor: nullableString(row.results_cursor),
    itemCount: Number(row.item_count),
    createdAt: toDate(row.created_at) ?? new Date(0),
    updatedAt: toDate(row.updated_at) ?? new Date(0),
    keyId: nullableString(row.key_id),
  };
}

/** `_seedline_runs` row of a RunRow. */
export function runToDb(row: RunRow): DbRow {
  return {
    run_id: row.runId,
    started_at: row.startedAt,
    finished_at: row.finishedAt ?? null,
    status: row.status,
    streams: row.streams ?? null,
    credits_estimated: row.creditsEstimated ?? 0,
    credits_used: row.creditsUsed ?? 0,
    error: row.error ?? null,
    stop_reason: row.stopReason ?? null,
    schedule_group: row.scheduleGroup ?? null,
    credits_at_risk: row.creditsAtRisk ?? 0,
    credits_settled_earlier: row.creditsSettledEarlier ?? 0,
    balance_change: row.balanceChange ?? null,
  };
}

/** RunRow of a `_seedline_runs` row. */
export function runFromDb(row: DbRow): RunRow {
  return {
    runId: String(row.run_id),
    startedAt: toDate(row.started_at) ?? new Date(0),
    finishedAt: toDate(row.finished_at),
    status: String(row.status),
    streams: nullableString(row.streams),
    creditsEstimated: Number(row.credits_estimated ?? 0),
    creditsUsed: Number(row.credits_used ?? 0),
    error: nullableString(row.error),
    stopReason: nullableString(row.stop_reason),
    scheduleGroup: nullableString(row.schedule_group),
    creditsAtRisk: Number(row.credits_at_risk ?? 0),
    creditsSettledEarlier: Number(row.credits_settled_earlier ?? 0),
    balanceChange: row.balance_change === null || row.balance_change === undefined ? null : Number(row.balance_change),
  };
}

/** `_seedline_answers` row of an AnswerRow. */
export function answerToDb(row: AnswerRow): DbRow {
  return {
    stream: row.stream,
    call_key: row.callKey,
    partition: row.partition,
    call: row.call,
    args: row.args,
    answer: row.answer,
    credits: row.credits,
    run_id: row.runId,
    received_at: row.receivedAt,
    partition_values: row.partitionValues ?? null,
  };
}

/** AnswerRow of a `_seedline_answers` row. */
export function answerFromDb(row: DbRow): AnswerRow {
  return {
    stream: String(row.stream),
    callKey: String(row.call_key),
    partition: String(row.partition),
    call: String(row.call),
    args: String(row.args),
    answer: String(row.answer),
    credits: Number(row.credits ?? 0),
    runId: String(row.run_id),
    receivedAt: toDate(row.received_at) ?? new Date(0),
    partitionValues: row.partition_values == null ? null : String(row.partition_values),
  };
}

/** `_seedline_repairs` row of a RepairRow. */
export function repairToDb(row: RepairRow, now: Date): DbRow {
  return {
    run_id: row.runId,
    stream: row.stream,
    table: row.table,
    field: row.field,
    change: row.change,
    count: row.count,
    recorded_at: now,
  };
}

/** `_seedline_rejected` row of a RejectedRow. */
export function rejectedToDb(row: RejectedRow, now: Date): DbRow {
  return {
    run_id: row.runId,
    stream: row.stream,
    table: row.table,
    record: row.record,
    reason: row.reason,
    rejected_at: now,
    partition: row.partition ?? null,
  };
}

function nullableString(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

/** A timestamp as a backend returns it (Date, or text), as a Date; null stays null. */
export function toDate(value: unknown): Date | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value;
  return new Date(String(value));
}

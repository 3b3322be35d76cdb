import type { SeedlineConfig } from '../config/config-schema.js';
import { jsonColumn } from '../util/json-column.js';
import { refreshesOnChange, type RefreshesOnChange } from './report-refreshes.js';
import { quoteIdentifier } from '../destinations/identifiers.js';
import { type Destination } from '../destinations/destination.js';
import { isRecent } from '../engine/books/freshness.js';
import { redactSecrets } from '../util/redact-secrets.js';
import { parseDuration } from '../util/duration.js';

/** Credits one stream's calls were billed in runs started on one day (UTC). */
export interface DailyCredits {
  day: string;
  stream: string;
  credits: number;
}

/** One of the last runs, as the report lists it. */
export interface RunSummary {
  runId: string;
  startedAt: string;
  status: string;
  durationSeconds: number | null;
  credits: number;
  estimatedCredits: number;
  records: number;
  stopReason: string;
}

/** Seeds of one stream by freshness (against its `refresh_after`). */
export interface Freshness {
  stream: string;
  state: 'fresh' | 'due' | 'pending' | 'failed';
  seeds: number;
}

/** Everything the report shows, read from the destination only. */
export interface ReportData {
  /** When it was read, ISO 8601. */
  generatedAt: string;
  days: number;
  credits: DailyCredits[];
  monthToDate: number;
  budget: { perRun?: number | undefined; perMonth?: number | undefined; keepBalance?: number | undefined };
  balance: { at: string; credits: number }[];
  freshness: Freshness[];
  /** Fetched seeds by age (half-day buckets, the bucket's start in days) against the stream's `refresh_after`. */
  ages: { stream: string; ageDays: number; seeds: number; refreshDays: number }[];
  failures: {
    stream: string;
    kind: 'failed seed' | 'rejected record';
    reason: string;
    count: number;
    example: string;
  }[];
  triggers: { day: string; signal: string; field: string; count: number }[];
  /** Per company: postings posted in the window, and postings its latest pass no longer listed. */
  jobs: { company: string; change: 'posted' | 'no longer listed'; postings: number }[];
  /** Credits of this month's runs, summed day by day (against `max_credits_per_month`). */
  monthToDateByDay: { day: string; credits: number }[];
  runs: RunSummary[];
  /** Streams refreshing on change: what their refreshes were in the window, against refresh by age alone. */
  refreshesOnChange: RefreshesOnChange[];
  /** Per API key of `seedline worker` rounds in the window (by fingerprint): what it could and did spend. None without workers. */
  keys: { key: string; rounds: number; limit: number; spent: number; refusedIn: number }[];
}

const DAY_MS = 86_400_000;
const EXAMPLE_CHARS = 160;

/**
 * Reads what the report shows, one select at a time through `readQuery` (read-only by
 * construction); a table a fresh warehouse does not have yet reads as empty.
 * @param changeTargets per stream that can refresh on change, the Signal target type its manifest watches
 */
export async function readReportData(
  destination: Destination,
  config: SeedlineConfig,
  days: number,
  now = new Date(),
  changeTargets: ReadonlyMap<string, string> = new Map(),
): Promise<ReportData> {
  const schema = quoteIdentifier(destination.schema, 'schema');
  const since = new Date(now.getTime() - days * DAY_MS);
  const read = async (sql: string) => destination.readQuery(sql).catch(() => [] as Record<string, unknown>[]);
  const runRows = await read(
    `select run_id, started_at, finished_at, status, streams, credits_used, credits_estimated, stop_reason from ${schema}._seedline_runs order by started_at desc`,
  );
  const runs = runRows.map(runSummary);
  const recent = runRows.filter((row) => toDate(row.started_at).getTime() >= since.getTime());
  const monthStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
  return {
    generatedAt: now.toISOString(),
    days,
    credits: dailyCredits(recent),
    monthToDate: runRows
      .filter((row) => toDate(row.started_at).getTime() >= monthStart)
      .reduce((sum, row) => sum + Math.max(0, Number(row.credits_used ?? 0)), 0),
    budget: {
      perRun: config.budget.max_credits_per_run,
      perMonth: config.budget.max_credits_per_month,
      keepBalance: config.budget.keep_balance,
    },
    balance: (await read(`select snapshot_at, credits_remaining from ${schema}.account order by snapshot_at`))
      .filter((row) => row.credits_remaining !== null && toDate(row.snapshot_at).getTime() >= since.getTime())
      .map((row) => ({ at: toDate(row.snapshot_at).toISOString(), credits: Number(row.credits_remaining) })),
    ...(await seedFreshness(read, schema, config, now)),
    failures: await failures(read, schema),
    triggers: triggersByDay(await read(`select signal_id, checked_at, diff from ${schema}.triggers`), since),
    jobs: jobChanges(
      await read(`select company__name as company, posted_at, _loaded_at, query_key from ${schema}.jobs`),
      since,
    ),
    monthToDateByDay: cumulative(runRows.filter((row) => toDate(row.started_at).getTime() >= monthStart)),
    runs: runs.slice(0, 20),
    refreshesOnChange: await refreshesOnChange(read, schema, config, changeTargets, recent, days),
    keys: (
      await read(
        `select k.key_id, count(*) as rounds, sum(k.credit_limit) as credit_limit, sum(k.spent) as spent, count(k.refusal) as refused
           from ${schema}._seedline_fleet_keys k join ${schema}._seedline_fleet_rounds r on r.round_id = k.round_id
          where r.started_at >= '${since.toISOString()}' group by k.key_id order by k.key_id`,
      )
    ).map((row) => ({
      key: String(row.key_id),
      rounds: Number(row.rounds),
      limit: Number(row.credit_limit),
      spent: Number(row.spent),
      refusedIn: Number(row.refused),
    })),
  };
}

/** Per day and stream, from each run's per-stream outcomes (`_seedline_runs.streams`). */
function dailyCredits(rows: readonly Record<string, unknown>[]): DailyCredits[] {
  const sums = new Map<string, DailyCredits>();
  for (const row of rows) {
    const day = toDate(row.started_at).toISOString().slice(0, 10);
    for (const outcome of jsonColumn<{ stream: string; credits?: number }[]>(row.streams) ?? []) {
      if (!outcome.credits) continue;
      const key = `${day} ${outcome.stream}`;
      const sum = sums.get(key) ?? { day, stream: outcome.stream, credits: 0 };
      sum.credits += outcome.credits;
      sums.set(key, sum);
    }
  }
  return [...sums.values()].sort((a, b) => a.day.localeCompare(b.day) || a.stream.localeCompare(b.stream));
}

function runSummary(row: Record<string, unknown>): RunSummary {
  const started = toDate(row.started_at);
  const finished = row.finished_at ? toDate(row.finished_at) : null;
  const outcomes = jsonColumn<{ records?: number }[]>(row.streams) ?? [];
  return {
    runId: String(row.run_id),
    startedAt: started.toISOString(),
    status: String(row.status),
    durationSeconds: finished ? Math.round((finished.getTime() - started.getTime()) / 100) / 10 : null,
    credits: Number(row.credits_used ?? 0),
    estimatedCredits: Number(row.credits_estimated ?? 0),
    records: outcomes.reduce((sum, o) => sum + (o.records ?? 0), 0),
    stopReason: String(row.stop_reason ?? ''),
  };
}

async function seedFreshness(
  read: (sql: string) => Promise<Record<string, unknown>[]>,
  schema: string,
  config: SeedlineConfig,
  now: Date,
): Promise<Pick<ReportData, 'freshness' | 'ages'>> {
  const rows = await read(`select stream, status, fetched_at from ${schema}._seedline_seeds`);
  const counts = new Map<string, Freshness>();
  const ages = new Map<string, ReportData['ages'][number]>();
  for (const row of rows) {
    const stream = String(row.stream);
    const refresh = (config.streams as Record<string, { refresh_after?: string } | undefined>)[stream]?.refresh_after;
    const refreshMs = refresh ? parseDuration(refresh) : undefined;
    const fetchedAt = row.fetched_at ? toDate(row.fetched_at) : null;
    const state: Freshness['state'] =
      row.status === 'failed'
        ? 'failed'
        : row.status !== 'fetched'
          ? 'pending'
          : isRecent(fetchedAt, refreshMs, now)
            ? 'fresh'
            : 'due';
    const count = counts.get(`${stream} ${state}`) ?? { stream, state, seeds: 0 };
    count.seeds++;
    counts.set(`${stream} ${state}`, count);
    if (!fetchedAt || refreshMs === undefined) continue;
    // Buckets, not one point per seed: a warehouse of a million seeds draws as many marks as a small one.
    const ageDays = Math.floor(((now.getTime() - fetchedAt.getTime()) / DAY_MS) * 2) / 2;
    const bucket = ages.get(`${stream} ${ageDays}`) ?? {
      stream,
      ageDays,
      seeds: 0,
      refreshDays: round(refreshMs / DAY_MS),
    };
    bucket.seeds++;
    ages.set(`${stream} ${ageDays}`, bucket);
  }
  const byAge = [...ages.values()].sort((a, b) => a.stream.localeCompare(b.stream) || a.ageDays - b.ageDays);
  return {
    freshness: [...counts.values()].sort((a, b) => a.stream.localeCompare(b.stream) || a.state.localeCompare(b.state)),
    ages: byAge,
  };
}

/** Failed seeds by error and rejected records by reason, each with its latest example (values cut, secrets redacted). */
async function failures(
  read: (sql: string) => Promise<Record<string, unknown>[]>,
  schema: string,
): Promise<ReportData['failures']> {
  const failed = await read(
    `select stream, error, seed, updated_at from ${schema}._seedline_seeds where status = 'failed' order by updated_at desc`,
  );
  const rejected = await read(
    `select stream, reason, record, rejected_at from ${schema}._seedline_rejected order by rejected_at desc`,
  );
  const grouped = new Map<string, ReportData['failures'][number]>();
  const add = (stream: string, kind: 'failed seed' | 'rejected record', reason: string, example: string) => {
    const key = `${kind} ${stream} ${reason}`;
    const entry = grouped.get(key) ?? { stream, kind, reason: cut(reason), count: 0, example: cut(example) };
    entry.count++;
    grouped.set(key, entry);
  };
  for (const row of failed) add(String(row.stream), 'failed seed', String(row.error ?? 'failed'), String(row.seed));
  for (const row of rejected) add(String(row.stream), 'rejected record', String(row.reason), String(row.record));
  return [...grouped.values()].sort((a, b) => b.count - a.count);
}

/** Triggers per day, Signal and watched field (a Trigger changing two fields counts for each). */
function triggersByDay(rows: readonly Record<string, unknown>[], since: Date): ReportData['triggers'] {
  const counts = new Map<string, ReportData['triggers'][number]>();
  for (const row of rows) {
    const at = toDate(row.checked_at);
    if (at.getTime() < since.getTime()) continue;
    const day = at.toISOString().slice(0, 10);
    for (const field of Object.keys(jsonColumn<Record<string, unknown>>(row.diff) ?? { changed: null })) {
      const key = `${day} ${String(row.signal_id)} ${field}`;
      const count = counts.get(key) ?? { day, signal: String(row.signal_id), field, count: 0 };
      count.count++;
      counts.set(key, count);
    }
  }
  return [...counts.values()].sort((a, b) => a.day.localeCompare(b.day));
}

/**
 * Postings per company: posted within the window, and no longer listed (loaded before the latest
 * pass of their query, which did not return them again).
 */
function jobChanges(rows: readonly Record<string, unknown>[], since: Date): ReportData['jobs'] {
  const latest = new Map<string, number>();
  for (const row of rows)
    latest.set(
      String(row.query_key),
      Math.max(latest.get(String(row.query_key)) ?? 0, toDate(row._loaded_at).getTime()),
    );
  const counts = new Map<string, ReportData['jobs'][number]>();
  const add = (company: string, change: 'posted' | 'no longer listed') => {
    const entry = counts.get(`${company} ${change}`) ?? { company, change, postings: 0 };
    entry.postings++;
    counts.set(`${company} ${change}`, entry);
  };
  for (const row of rows) {
    const company = String(row.company ?? '(unknown company)');
    if (row.posted_at && toDate(row.posted_at).getTime() >= since.getTime()) add(company, 'posted');
    if (toDate(row._loaded_at).getTime() < (latest.get(String(row.query_key)) ?? 0)) add(company, 'no longer listed');
  }
  return [...counts.values()].sort((a, b) => b.postings - a.postings).slice(0, 40);
}

/** Credits of runs summed day by day, in day order. */
function cumulative(rows: readonly Record<string, unknown>[]): ReportData['monthToDateByDay'] {
  const byDay = new Map<string, number>();
  for (const row of rows) {
    const day = toDate(row.started_at).toISOString().slice(0, 10);
    byDay.set(day, (byDay.get(day) ?? 0) + Math.max(0, Number(row.credits_used ?? 0)));
  }
  let total = 0;
  return [...byDay]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([day, credits]) => ({ day, credits: (total += credits) }));
}

function toDate(value: unknown): Date {
  return value instanceof Date ? value : new Date(String(value));
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

/** One line of at most EXAMPLE_CHARS characters, with anything shaped like a secret redacted. */
function cut(text: string): string {
  const line = redactSecrets(text).replace(/\s+/g, ' ');
  return line.length > EXAMPLE_CHARS ? `${line.slice(0, EXAMPLE_CHARS - 1)}…` : line;
}

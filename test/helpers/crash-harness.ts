import type { ChildProcess } from 'node:child_process';
import { createDestination } from '../../src/destinations/create-destination.js';
import type { DestinationConfig } from '../../src/destinations/destination.js';
import type { LedgerEntry, Sandbox, SandboxOptions } from '../../src/sandbox/index.js';
import { mulberry32 } from '../../src/sandbox/fixtures/random.js';

/** Seed of the crash harness when `SEEDLINE_CRASH_SEED` is not set. */
export const DEFAULT_CRASH_SEED = 152026;

/** The harness's seed: `SEEDLINE_CRASH_SEED` (an integer) or {@link DEFAULT_CRASH_SEED}. */
export function crashSeedFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.SEEDLINE_CRASH_SEED;
  if (raw === undefined || raw === '') return DEFAULT_CRASH_SEED;
  const seed = Number(raw);
  if (!Number.isSafeInteger(seed))
    throw new Error(`SEEDLINE_CRASH_SEED must be an integer, got ${JSON.stringify(raw)}`);
  return seed;
}

/** A small seeded PRNG (the sandbox's mulberry32): draws in [0, 1). */
export const seededRandom = mulberry32;

/** Sandbox options of every harness run: fixed fixtures (seed, virtual clock left at its default start), no latency, no faults. */
export function harnessSandboxOptions(seed: number): SandboxOptions {
  return { seed, rpm: 100_000, latencyMs: [0, 0], concurrentBatchJobs: 5 };
}

const NETWORK = 'https://www.network.example';
const COMPANIES = ['acme-analytics', 'globex', 'initech'].map((slug) => `${NETWORK}/company/${slug}`);

/** The billed key of every harness run (a `svc_live_*` key, so the sandbox ledger bills). */
export const HARNESS_KEY = 'svc_live_crash_harness';

/** One config with every billed stream, small seeds, and two pages a feed. */
/**
 * How the harness config asks its pages: `batch` (every paged and search stream `via: batch`, no
 * single retries of failed batch items: no billed single call at all) or `calls` (single calls,
 * one billed call on the wire at a time).
 */
export type HarnessMode = 'batch' | 'calls';

export function harnessConfig(sandboxUrl: string, destination: DestinationConfig, mode: HarnessMode = 'batch') {
  const via = { via: mode };
  return {
    // In calls mode one billed single call is on the wire at a time: what a kill can make the rerun buy again is that one answer.
    api: { base_url: sandboxUrl, api_key: HARNESS_KEY, max_billed_in_flight: 1 },
    destination,
    seeds: {
      profiles: Array.from({ length: 6 }, (_, i) => `${NETWORK}/in/crash-person-${i}`),
      companies: COMPANIES,
      posts: [`${NETWORK}/posts/alpha-1`, `${NETWORK}/posts/beta-2`],
      headcount: [
        { company_url: COMPANIES[0], filters: { titles: ['engineer'] } },
        { company_url: COMPANIES[1], filters: { seniorities: ['senior'] } },
      ],
    },
    streams: {
      profiles: {},
      companies: {},
      posts: {},
      headcount: {},
      jobs: { keywords: ['data engineer'], per_company: true, max_results: 5, ...via },
      activity: { kinds: ['posts', 'comments'], max_pages: 2, ...via },
      company_posts: { max_pages: 2, ...via },
      people_search: { searches: [{ id: 'ctos', filters: { titles: ['CTO'] }, max_results: 30 }], ...via },
      company_search: { searches: [{ id: 'fintech', filters: { keywords: 'fintech' }, max_results: 10 }], ...via },
    },
    batch: { chunk_size: 3, poll_interval_ms: 20, retry_billed_failures: mode === 'batch' ? 0 : 1 },
  };
}

/** Entries that charged the balance (billed, positive credits), in the order the sandbox made them. */
export function billedEntries(sandbox: Sandbox): LedgerEntry[] {
  return sandbox.ledger.entries.filter((entry) => entry.billed && entry.credits > 0);
}

/** Sum of {@link billedEntries}' credits. */
export function billedCredits(entries: readonly LedgerEntry[]): number {
  return entries.reduce((sum, entry) => sum + entry.credits, 0);
}

/** Credits per operation. */
export function creditsByOperation(entries: readonly LedgerEntry[]): Map<string, number> {
  const sums = new Map<string, number>();
  for (const entry of entries) sums.set(entry.operation, (sums.get(entry.operation) ?? 0) + entry.credits);
  return sums;
}

/** What a trial billed beyond the reference: total credits, per operation, and the targets charged more often. */
export interface ExtraBilling {
  credits: number;
  byOperation: Record<string, number>;
  /** `operation target ×n (reference ×m)` for each target charged more often than in the reference. */
  targets: string[];
}

/** Compares a trial's billed entries (crash run + rerun) with the reference's. */
export function extraBilling(reference: readonly LedgerEntry[], trial: readonly LedgerEntry[]): ExtraBilling {
  const refOps = creditsByOperation(reference);
  const trialOps = creditsByOperation(trial);
  const byOperation: Record<string, number> = {};
  for (const op of new Set([...refOps.keys(), ...trialOps.keys()])) {
    const extra = (trialOps.get(op) ?? 0) - (refOps.get(op) ?? 0);
    if (extra !== 0) byOperation[op] = extra;
  }
  const countOf = (entries: readonly LedgerEntry[]) => {
    const counts = new Map<string, number>();
    for (const e of entries)
      counts.set(`${e.operation} ${e.target}`, (counts.get(`${e.operation} ${e.target}`) ?? 0) + 1);
    return counts;
  };
  const refCounts = countOf(reference);
  const targets = [...countOf(trial)]
    .filter(([key, n]) => n > (refCounts.get(key) ?? 0))
    .map(([key, n]) => `${key} ×${n} (reference ×${refCounts.get(key) ?? 0})`);
  return { credits: billedCredits(trial) - billedCredits(reference), byOperation, targets };
}

/** The billed entry at which a trial's run was killed. */
export interface KillEvent {
  /** 1-based index among billed entries. */
  index: number;
  entry: LedgerEntry;
}

/** Kills a child with SIGKILL synchronously when the sandbox records its k-th billed entry. */
export interface KillSwitch {
  /** The process to kill (attach it right after spawning: entries only come once it calls the sandbox). */
  attach(child: ChildProcess): void;
  /** The entry that fired the kill, once it did. */
  readonly fired: KillEvent | undefined;
  /** Stops watching the ledger. */
  disarm(): void;
}

/**
 * Arms a kill at the sandbox's k-th billed ledger entry. The ledger's `record` is wrapped on this
 * sandbox instance only (a test-only hook, nothing in src/ changes): the entry is recorded, then
 * the child is killed before the sandbox writes the answer of that call, so that answer never
 * arrives while earlier ones may be in flight, arrived but uncommitted, or committed.
 */
export function killAtBilledEntry(sandbox: Sandbox, k: number): KillSwitch {
  const ledger = sandbox.ledger;
  const original = ledger.record;
  let seen = 0;
  let victim: ChildProcess | undefined;
  let fired: KillEvent | undefined;
  ledger.record = function record(entry: LedgerEntry): void {
    original.call(ledger, entry);
    if (!entry.billed || entry.credits <= 0) return;
    seen++;
    if (seen === k && victim && victim.exitCode === null && victim.signalCode === null) {
      victim.kill('SIGKILL');
      fired = { index: seen, entry };
    }
  };
  return {
    attach: (child) => void (victim = child),
    get fired() {
      return fired;
    },
    disarm: () => void (ledger.record = original),
  };
}

/** Columns left out of a table comparison: per-run bookkeeping and the run's own clock. */
export const RUN_COLUMNS = new Set(['_run_id', '_loaded_at', 'searched_at']);

/** Rows of every data table (not `_seedline_*`), each row as stable JSON without {@link RUN_COLUMNS}, sorted. */
export type TableSnapshot = Record<string, string[]>;

/** JSON with object keys sorted, dates as ISO strings, bigints as strings. */
export function stableJson(value: unknown): string {
  const normalize = (v: unknown): unknown => {
    if (v instanceof Date) return v.toISOString();
    if (typeof v === 'bigint') return v.toString();
    if (Buffer.isBuffer(v)) return v.toString('base64');
    if (Array.isArray(v)) return v.map(normalize);
    if (v !== null && typeof v === 'object') {
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((k) => [k, normalize((v as Record<string, unknown>)[k])]),
      );
    }
    return v;
  };
  return JSON.stringify(normalize(value)) ?? 'undefined';
}

/** Names of the data tables of a destination's schema. */
async function dataTables(
  query: (sql: string) => Promise<Record<string, unknown>[]>,
  schema: string,
): Promise<string[]> {
  const rows = await query(
    `select table_name from information_schema.tables where table_schema = '${schema}' order by table_name`,
  );
  return rows.map((r) => String(r.table_name)).filter((name) => !name.startsWith('_seedline'));
}

/** Declared keys of the merge tables (from streams/*.stream.yaml); child tables are keyed by `_parent_*` and `_index`. */
const MERGE_KEYS: Record<string, string[]> = {
  profiles: ['url'],
  companies: ['url'],
  posts: ['urn'],
  jobs: ['url'],
  activity_posts: ['record_key'],
  activity_comments: ['record_key'],
  activity_reactions: ['record_key'],
  activity_reposts: ['record_key'],
  company_posts: ['urn'],
  post_comments: ['urn'],
  post_reactions: ['record_key'],
  profile_recommendations: ['record_key'],
  profile_interests: ['record_key'],
};

/** Reads every data table, and lists keys that occur more than once (`table (key) = value ×n`). */
export async function readTables(
  dest: DestinationConfig,
): Promise<{ snapshot: TableSnapshot; duplicateKeys: string[] }> {
  const destination = await createDestination(dest);
  try {
    const schema = dest.schema ?? 'seedline';
    const query = (sql: string) => destination.query(sql);
    const snapshot: TableSnapshot = {};
    const duplicateKeys: string[] = [];
    for (const table of await dataTables(query, schema)) {
      const rows = await query(`select * from "${schema}"."${table}"`);
      snapshot[table] = rows
        .map((row) =>
          stableJson(Object.fromEntries(Object.entries(row).filter(([column]) => !RUN_COLUMNS.has(column)))),
        )
        .sort();
      const columns = rows[0] ? Object.keys(rows[0]) : [];
      const parentKeys = columns.filter((c) => c.startsWith('_parent_'));
      const key = parentKeys.length > 0 ? [...parentKeys, '_index'] : MERGE_KEYS[table];
      if (!key || rows.length === 0) continue;
      const counts = new Map<string, number>();
      for (const row of rows) {
        const value = stableJson(key.map((c) => row[c]));
        counts.set(value, (counts.get(value) ?? 0) + 1);
      }
      for (const [value, n] of counts) if (n > 1) duplicateKeys.push(`${table} (${key.join(', ')}) = ${value} ×${n}`);
    }
    return { snapshot, duplicateKeys };
  } finally {
    await destination.close();
  }
}

const clip = (text: string, max = 240) => (text.length > max ? `${text.slice(0, max)}…` : text);

/**
 * How a snapshot differs from the reference, one line per table that differs: rows of the reference
 * missing, rows not in the reference (and how many of those are second copies of reference rows,
 * the mark of a stream bought and appended again), with one example of each.
 */
export function diffSnapshots(reference: TableSnapshot, actual: TableSnapshot): string[] {
  const lines: string[] = [];
  for (const table of [...new Set([...Object.keys(reference), ...Object.keys(actual)])].sort()) {
    const want = reference[table];
    const got = actual[table];
    if (!want) {
      lines.push(`${table}: a table the reference does not have (${got?.length ?? 0} rows)`);
      continue;
    }
    if (!got) {
      lines.push(`${table}: missing (the reference has ${want.length} rows)`);
      continue;
    }
    const remaining = new Map<string, number>();
    for (const row of want) remaining.set(row, (remaining.get(row) ?? 0) + 1);
    const extra: string[] = [];
    for (const row of got) {
      const n = remaining.get(row) ?? 0;
      if (n > 0) remaining.set(row, n - 1);
      else extra.push(row);
    }
    const missing = [...remaining].flatMap(([row, n]) => Array.from({ length: n }, () => row));
    if (missing.length === 0 && extra.length === 0) continue;
    const inReference = new Set(want);
    const copies = extra.filter((row) => inReference.has(row)).length;
    const parts = [`${table}: ${got.length} rows, reference ${want.length}`];
    if (missing.length > 0) parts.push(`${missing.length} reference row(s) missing, e.g. ${clip(missing[0]!)}`);
    if (extra.length > 0) {
      const example = extra.find((row) => !inReference.has(row)) ?? extra[0]!;
      parts.push(
        `${extra.length} row(s) not in the reference (${copies} of them second copies of reference rows), e.g. ${clip(example)}`,
      );
    }
    lines.push(parts.join('; '));
  }
  return lines;
}

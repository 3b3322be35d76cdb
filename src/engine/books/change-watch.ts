import type { Destination, TriggerChange } from '../../destinations/destination.js';
import { jsonColumn } from '../../util/json-column.js';
import { quoteIdentifier } from '../../destinations/identifiers.js';
import type { ChangeRefresh } from '../../manifest/compile-stream.js';
import { seedKey } from '../../util/seed-keys.js';

/** The tables Signals and Triggers are loaded into (by their streams, and by `serve`). */
const SIGNALS_TABLE = 'signals';
const TRIGGERS_TABLE = 'triggers';

/**
 * Which seeds of a batch stream active Signals watch, and when a Trigger last reported a change
 * to one of the fields the stream declares (see {@link ChangeRefresh}). Read once a run from the
 * warehouse: a Signal or Trigger the warehouse does not hold yet counts from the next run.
 */
export class ChangeWatch {
  private constructor(
    /** Seed key → the latest `checked_at` (ms) of a Trigger naming a declared field; 0 when none did. */
    private readonly changes: ReadonlyMap<string, number>,
    /** Seed key → what its Triggers said of the fields the stream applies (`apply`), oldest first. */
    private readonly applicable: ReadonlyMap<string, readonly TriggerChange[]> = new Map(),
  ) {}

  /** Seeds watched. */
  get watched(): number {
    return this.changes.size;
  }

  /** Reads the watched seeds and their latest changes; none when the tables are not there. */
  static async load(destination: Destination, rule: ChangeRefresh): Promise<ChangeWatch> {
    const seedOf = await watchingSignals(destination, rule);
    const changes = new Map<string, number>([...seedOf.values()].map((key) => [key, 0]));
    const applicable = new Map<string, TriggerChange[]>();
    if (seedOf.size > 0 && (await destination.hasTable(TRIGGERS_TABLE))) {
      const rows = await destination.query<{
        trigger_id: unknown;
        signal_id: unknown;
        checked_at: unknown;
        diff: unknown;
      }>(`select trigger_id, signal_id, checked_at, diff from ${table(destination, TRIGGERS_TABLE)}`);
      for (const row of rows) {
        const key = seedOf.get(String(row.signal_id));
        const diff = jsonColumn(row.diff);
        const at = new Date(String(row.checked_at instanceof Date ? row.checked_at.toISOString() : row.checked_at));
        if (key === undefined || Number.isNaN(at.getTime())) continue;
        if (namesAny(diff, rule.fields)) changes.set(key, Math.max(changes.get(key) ?? 0, at.getTime()));
        const values = appliedValues(diff, rule.apply);
        if (values) pushTo(applicable, key, { triggerId: String(row.trigger_id), checkedAt: at, values });
      }
    }
    for (const list of applicable.values())
      list.sort((a, b) => a.checkedAt.getTime() - b.checkedAt.getTime() || a.triggerId.localeCompare(b.triggerId));
    return new ChangeWatch(changes, applicable);
  }

  /** Watched seeds with Triggers whose diff covers a column the stream applies. */
  get keysToApply(): string[] {
    return [...this.applicable.keys()];
  }

  /** What the seed's Triggers checked after `fetchedAt` said of the applied columns, oldest first. */
  changesAfter(key: string, fetchedAt: Date | null | undefined): readonly TriggerChange[] {
    const after = fetchedAt?.getTime() ?? -Infinity;
    return (this.applicable.get(key) ?? []).filter((change) => change.checkedAt.getTime() > after);
  }

  /** Whether an active Signal watches the seed. */
  isWatched(key: string): boolean {
    return this.changes.has(key);
  }

  /** Whether a Trigger reported a change to the seed after `fetchedAt`. */
  changedSince(key: string, fetchedAt: Date | null | undefined): boolean {
    const changed = this.changes.get(key) ?? 0;
    return changed > 0 && (fetchedAt?.getTime() ?? -Infinity) < changed;
  }
}

/** Active Signals on the rule's target type: Signal id → seed key of its target. */
async function watchingSignals(destination: Destination, rule: ChangeRefresh): Promise<Map<string, string>> {
  const seedOf = new Map<string, string>();
  if (!(await destination.hasTable(SIGNALS_TABLE))) return seedOf;
  const rows = await destination.query<{ id: unknown; status: unknown; target: unknown }>(
    `select id, status, target from ${table(destination, SIGNALS_TABLE)}`,
  );
  for (const row of rows) {
    const target = jsonColumn(row.target) as Record<string, unknown> | undefined;
    const value = target?.[rule.targetField];
    if (row.status !== 'active' || target?.type !== rule.signalTarget || typeof value !== 'string') continue;
    seedOf.set(String(row.id), seedKey(rule.seedKind, value));
  }
  return seedOf;
}

/** Column → the `after` of each diff field `apply` maps; undefined when the diff names none of them. */
function appliedValues(diff: unknown, apply: Readonly<Record<string, string>>): Record<string, unknown> | undefined {
  if (typeof diff !== 'object' || diff === null) return undefined;
  const values: Record<string, unknown> = {};
  for (const [field, column] of Object.entries(apply)) {
    const change = (diff as Record<string, unknown>)[field];
    if (typeof change === 'object' && change !== null && 'after' in change)
      values[column] = (change as { after: unknown }).after;
  }
  return Object.keys(values).length > 0 ? values : undefined;
}

function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** Whether a Trigger's diff names one of `fields`. */
function namesAny(diff: unknown, fields: readonly string[]): boolean {
  return typeof diff === 'object' && diff !== null && fields.some((field) => field in diff);
}

function table(destination: Destination, name: string): string {
  return `${quoteIdentifier(destination.schema, 'schema')}.${quoteIdentifier(name, 'table')}`;
}

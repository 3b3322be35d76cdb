import {
  asReceived,
  contractReason,
  isFrozenRejection,
  PARTITION,
  type ContractMode,
  type RepairCount,
  type TableDefinition,
} from '../normalize/table-definition.js';
import { type Destination, type LoadUnit, type PreparedWrite, type RunRow } from '../destinations/destination.js';
import type { Mutex } from '../util/mutex.js';
import { withRows, type ShapedRecords } from '../normalize/table-shaper.js';

/** The run's row, when it changed, for a unit to save with its rows (see `RunRecorder`). */
export interface RunRowCarrier {
  /** The row if it changed since it was last saved; taken, it counts as saved. */
  takeChanged(): RunRow | undefined;
  /** The unit that took the row did not commit: save it again. */
  carryFailed(): void;
}

/** Called after a load unit commits, under the write lock; `paid`: the unit journaled a paid answer. */
export type UnitCommitted = (paid: boolean) => Promise<void>;

/** What a writer does beside its units' rows. */
export interface WriterHooks {
  /** The run's row, saved with a unit when it changed (see {@link RunRowCarrier}). */
  runRow?: RunRowCarrier | undefined;
  /**
   * Awaited after each transaction commits, under the write lock (no other unit commits
   * meanwhile), before its callers go on; `paid`: it journaled a paid answer (a journal unit).
   * `airbyte read` emits a checkpoint there (see docs/airbyte.md#checkpoints).
   */
  committed?: UnitCommitted | undefined;
}

/** Counts of one load. */
export interface LoadCounts {
  records: number;
  rows: number;
  rejected: number;
  /** Values kept in `_extra` or discarded so that their records load (`_seedline_repairs`). */
  repaired: number;
  /** Records rejected under `schema_contract: freeze`, which fail the stream's status. */
  frozen: number;
}

/**
 * Units waiting for the destination are combined into one transaction (group commit) up to these
 * bounds: a COMMIT and each system-table upsert cost about the same for one page as for several
 * (DuckDB: a 500-record page's COMMIT ~25 ms and its two ledger upserts ~8 ms each), and the
 * rows of the units combined are held at once.
 */
const GROUP_UNITS = 32;
const GROUP_RECORDS = 5_000;
/**
 * Journal units waiting together commit together, up to this many: each holds one paid answer
 * and no rows, so a group fails for nothing another journal unit would not. One COMMIT a paid
 * answer serialized every single-call stream at the destination's COMMIT time (DuckDB ~25-40 ms):
 * 600 activity partitions took 3.5x their rate bound (bench/README.md).
 */
const GROUP_JOURNAL_UNITS = 64;

/**
 * Writes shaped records through load units, creating each table once per run before its first
 * write, and always inside the caller's unit so rows commit with the state that describes them.
 * Units asked for while the destination is busy are committed together once it is free, each
 * caller's rows and `fill` in its own order; if that shared unit fails before its COMMIT, each
 * caller's unit is run again alone, so a failure reaches only the caller it belongs to.
 */
export class LoadWriter {
  private readonly ensured = new Set<string>();
  /** Tables `schema_contract.tables` keeps out of the destination (they did not exist yet), with their mode. */
  private readonly refused = new Map<string, ContractMode>();
  /**
   * Units of this writer shaped ahead here and waiting for the lock (at most one: each holds its
   * shaped rows). Groups shaped in a worker thread arrive shaped, and are held by their readers.
   */
  private shapedWaiting = 0;
  /** Units asked for and not yet taken by a turn of the lock, in call order. */
  private readonly waiting: UnitRequest[] = [];
  /** A turn of the lock is queued that will take the waiting units. */
  private turnQueued = false;

  constructor(
    private readonly destination: Destination,
    private readonly runId: string,
    private readonly stream: string,
    private readonly writeLock: Mutex,
    private readonly hooks: WriterHooks = {},
  ) {}

  /**
   * Runs `fill` inside one load unit, after creating the groups' tables: writes the groups, lets
   * `fill` add ledger and state rows, commits; any failure rolls everything back and rethrows.
   * Units run one at a time per destination; units of this writer waiting together share one
   * transaction (see the class comment); a `journal` unit (a paid answer, no rows) shares one
   * only with other journal units, so it fails for nothing a page would. `fill` must only
   * write through the unit it is given: it may run twice, the first time in a shared unit that
   * is rolled back.
   */
  async inUnit(
    groups: readonly ShapedRecords[],
    fill: (unit: LoadUnit) => Promise<void>,
    options: { journal?: boolean } = {},
  ): Promise<LoadCounts> {
    const byTable = mergeByTable(groups);
    // Shaping rows needs no connection: once the tables exist it is done before waiting for the lock, while another unit
    // commits. One unit at a time, so concurrent pages do not all hold shaped copies of their rows while they wait.
    const early =
      this.shapedWaiting === 0 && byTable.every((g) => this.ensured.has(g.table.name)) ? this.prepare(byTable) : null;
    if (early) this.shapedWaiting++;
    return new Promise<LoadCounts>((resolve, reject) => {
      this.waiting.push({
        byTable,
        early,
        fill,
        records: recordsOf(byTable),
        journal: options.journal === true,
        resolve,
        reject,
      });
      this.queueTurn();
    });
  }

  /** Queues a turn of the lock that takes the units waiting then (one turn at a time is queued). */
  private queueTurn(): void {
    if (this.turnQueued) return;
    this.turnQueued = true;
    void this.writeLock.run(async () => {
      this.turnQueued = false;
      const taken = this.takeGroup();
      if (this.waiting.length > 0) this.queueTurn();
      await this.runGroup(taken);
    });
  }

  /**
   * The journal units waiting, or when there is none the first waiting unit and the pages waiting
   * after it, in call order and within the group's bounds (never pages with journal units).
   * Journal units go first because a call's place in flight is held until its answer is
   * journaled, while a page's load runs behind the next calls (see `LoadsBehind`): taken in call
   * order, an answer waited for the loads ahead of it, 56-60 ms of a 200 ms call at 3,000
   * calls a minute, against 37-46 ms journal first (bench/README.md). Waiting units belong to
   * callers that each wait for theirs, so none depends on another's commit: taking them past a
   * unit of the other kind changes no order a caller sees.
   */
  private takeGroup(): UnitRequest[] {
    const first = this.waiting.find((request) => request.journal) ?? this.waiting[0]!;
    const most = first.journal ? GROUP_JOURNAL_UNITS : GROUP_UNITS;
    const taken = [first];
    let records = first.records;
    for (const next of this.waiting) {
      if (next === first) continue;
      if (taken.length >= most) break;
      if (next.journal !== first.journal) continue;
      if (records + next.records > GROUP_RECORDS) break;
      taken.push(next);
      records += next.records;
    }
    const kept = new Set(taken);
    this.waiting.splice(0, this.waiting.length, ...this.waiting.filter((request) => !kept.has(request)));
    this.shapedWaiting -= taken.filter((request) => request.early).length;
    return taken;
  }

  /** Runs units in one transaction and settles each caller; on a failure before COMMIT, runs each alone. */
  private async runGroup(taken: UnitRequest[]): Promise<void> {
    const progress = { committing: false };
    try {
      const counts = await this.runUnit(taken, progress);
      taken.forEach((request, i) => request.resolve(counts[i]!));
      return;
    } catch (error) {
      // A COMMIT that failed may have happened: running the units again could write them twice.
      if (taken.length === 1 || progress.committing) {
        for (const request of taken) request.reject(error);
        return;
      }
    }
    for (const request of taken) {
      try {
        const [counts] = await this.runUnit([{ ...request, early: null }], { committing: false });
        request.resolve(counts!);
      } catch (error) {
        request.reject(error);
      }
    }
  }

  /**
   * One transaction: each unit's rows then its `fill`, in order; resolves to each unit's counts.
   * The rows of units not shaped ahead go in one write a table (an appender and a pending-key
   * list a table, not one a unit), its counts shared out by each unit's records (see `shareOut`).
   */
  private async runUnit(requests: readonly UnitRequest[], progress: { committing: boolean }): Promise<LoadCounts[]> {
    await this.ensure(requests.flatMap((request) => request.byTable.map((g) => g.table)));
    const together = requests.filter((request) => request.early === null);
    const shared = together.length > 1 ? this.prepare(mergeByTable(together.flatMap((r) => r.byTable))) : null;
    const writes = requests.map((request) => request.early ?? (shared ? null : this.prepare(request.byTable)));
    const unit = await this.destination.beginUnit(this.runId);
    const counts: LoadCounts[] = [];
    let run: RunRow | undefined;
    try {
      for (const [i, request] of requests.entries()) {
        if (shared && request === together[0]) {
          const total = await this.write(unit, shared);
          const shares = shareOut(
            total,
            together.map((r) => recordsOf(r.byTable)),
          );
          for (const [k, r] of together.entries()) counts[requests.indexOf(r)] = shares[k]!;
        } else if (!shared || request.early) counts[i] = await this.write(unit, writes[i]!);
        await request.fill(unit);
      }
      run = this.hooks.runRow?.takeChanged();
      if (run) await unit.updateRun(run);
      // What the unit holds goes out first: a failure up to here commits nothing, and the units can run again alone.
      await unit.flush();
      progress.committing = true;
      await unit.commit();
    } catch (error) {
      if (run) this.hooks.runRow!.carryFailed();
      await unit.rollback().catch(() => undefined);
      throw error;
    }
    // Still under the write lock: what the hook reads is exactly what has committed.
    await this.hooks.committed?.(requests.some((request) => request.journal));
    return counts;
  }

  private async ensure(tables: readonly TableDefinition[]): Promise<void> {
    for (const table of tables) {
      if (this.ensured.has(table.name) || this.refused.has(table.name)) continue;
      const mode = table.contract?.tables ?? 'evolve';
      if (mode !== 'evolve' && !(await this.destination.hasTable(table.name))) {
        this.refused.set(table.name, mode);
        continue;
      }
      await this.destination.ensureTable(table);
      this.ensured.add(table.name);
    }
  }

  /**
   * Each group with the write its rows are shaped into (none when it has no rows). The rows of a
   * table the contract keeps out become rejections (`discard_row`, `freeze`) or are dropped (`discard_value`).
   */
  private prepare(groups: readonly ShapedRecords[]): PreparedGroup[] {
    return groups.map((group) => {
      const mode = this.refused.get(group.table.name);
      if (mode !== undefined) return { group: keptOut(withRows(group), mode), write: null };
      const { shaped } = group;
      if (shaped)
        return {
          group,
          write: this.destination.adoptWrite(shaped.shaping, shaped.write, shaped.size, shaped.records, this.runId),
        };
      return {
        group,
        write: group.rows.length > 0 ? this.destination.prepareWrite(group.table.name, group.rows, this.runId) : null,
      };
    });
  }

  private async write(unit: LoadUnit, writes: readonly PreparedGroup[]): Promise<LoadCounts> {
    const totals = { records: 0, rows: 0, rejected: 0, repaired: 0, frozen: 0 };
    const repairs: RepairCount[] = [];
    for (const { group, write } of writes) {
      repairs.push(...(group.repairs ?? []));
      if (write) {
        const outcome = await unit.write(group.table.name, write, { stream: this.stream });
        totals.records += outcome.records;
        totals.rows += outcome.rows;
        totals.rejected += outcome.rejected;
        totals.frozen += outcome.frozen ?? 0;
        repairs.push(...(outcome.repairs ?? []));
      }
      if (group.rejected.length > 0) {
        await unit.reject(
          group.rejected.map((r) => ({
            runId: this.runId,
            stream: this.stream,
            table: r.table,
            record: JSON.stringify(r.record) ?? 'null',
            reason: r.reason,
            partition: r.partition ? JSON.stringify(r.partition) : null,
          })),
        );
        totals.rejected += group.rejected.length;
        totals.frozen += group.rejected.filter((r) => isFrozenRejection(r.reason)).length;
      }
    }
    if (repairs.length > 0)
      await unit.saveRepairs(repairs.map((r) => ({ ...r, runId: this.runId, stream: this.stream })));
    totals.repaired = repairs.reduce((sum, r) => sum + r.count, 0);
    return totals;
  }
}

/** A group whose table `schema_contract.tables` keeps out of the destination: its rows rejected with the reason, or counted as discarded. */
function keptOut(group: ShapedRecords, mode: ContractMode): ShapedRecords {
  const { table, rows } = group;
  if (rows.length === 0) return group;
  if (mode === 'discard_value')
    return {
      ...group,
      rows: [],
      repairs: [...(group.repairs ?? []), { table: table.name, field: '*', change: 'discarded', count: rows.length }],
    };
  const reason = contractReason(`table ${table.name} is not in the destination yet`, 'tables', mode);
  const partitionOf = (record: Record<string, unknown>) =>
    (record as { [PARTITION]?: Record<string, unknown> })[PARTITION];
  return {
    ...group,
    rows: [],
    rejected: [
      ...group.rejected,
      ...rows.map((record) => ({
        table: table.name,
        record: asReceived(record),
        reason,
        partition: partitionOf(record),
      })),
    ],
  };
}

/**
 * The counts of one write shared out among the units it wrote, in proportion to their records
 * (the remainders to the first units): exact sums, and each unit's own records when nothing
 * was rejected or replaced within the write.
 */
function shareOut(total: LoadCounts, sizes: readonly number[]): LoadCounts[] {
  const whole = sizes.reduce((a, b) => a + b, 0);
  const shares = sizes.map(() => ({ records: 0, rows: 0, rejected: 0, repaired: 0, frozen: 0 }));
  for (const key of ['records', 'rows', 'rejected', 'repaired', 'frozen'] as const) {
    let left = total[key];
    sizes.forEach((size, i) => {
      const part = whole === 0 ? 0 : Math.floor((total[key] * size) / whole);
      shares[i]![key] = part;
      left -= part;
    });
    for (let i = 0; left > 0; i = (i + 1) % shares.length, left--) shares[i]![key]++;
  }
  return shares;
}

/** A unit asked for through `inUnit`, waiting for its turn. */
interface UnitRequest {
  byTable: ShapedRecords[];
  /** Its writes, shaped before its turn (see `inUnit`); null to shape them in its turn. */
  early: PreparedGroup[] | null;
  fill: (unit: LoadUnit) => Promise<void>;
  /** Records its groups hold. */
  records: number;
  /** A journal unit: shares a transaction only with other journal units. */
  journal: boolean;
  resolve: (counts: LoadCounts) => void;
  reject: (error: unknown) => void;
}

/** Records of groups: rows to write, shaped elsewhere, or rejected. */
function recordsOf(groups: readonly ShapedRecords[]): number {
  return groups.reduce((n, g) => n + (g.shaped?.size ?? g.rows.length) + g.rejected.length, 0);
}

/** A table's records and the write they are shaped into. */
interface PreparedGroup {
  group: ShapedRecords;
  write: PreparedWrite | null;
}

/**
 * One group per table: a bulk write costs about the same for one row as for thousands. A table's
 * only group keeps rows shaped elsewhere; groups merged are taken as records.
 */
function mergeByTable(groups: readonly ShapedRecords[]): ShapedRecords[] {
  const byTable = new Map<string, ShapedRecords>();
  const alone = (name: string) => groups.filter((g) => g.table.name === name).length === 1;
  for (const group of groups) {
    const merged = byTable.get(group.table.name);
    if (!merged && group.shaped && alone(group.table.name)) byTable.set(group.table.name, group);
    else if (!merged) {
      const { rows, rejected, repairs } = withRows(group);
      byTable.set(group.table.name, {
        table: group.table,
        rows: [...rows],
        rejected: [...rejected],
        repairs: [...(repairs ?? [])],
      });
    } else {
      merged.rows.push(...withRows(group).rows);
      merged.rejected.push(...group.rejected);
      merged.repairs!.push(...(group.repairs ?? []));
    }
  }
  return [...byTable.values()];
}

import {
  asReceived,
  contractReason,
  isFrozenRejection,
  PARTITION,
  type ContractMode,
  type RepairCount,
  type TableDefinition,
} from '../normalize/table-definition.js';
import { type Destination, type LoadUnit, type PreparedWrite } from '../destinations/destination.js';
import type { Mutex } from '../util/mutex.js';
import { withRows, type ShapedRecords } from '../normalize/table-shaper.js';

/** Called after a load unit commits, under the write lock; `paid`: the unit journaled a paid answer. */
export type UnitCommitted = (paid: boolean) => Promise<void>;

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
const GROUP_UNITS = 8;
const GROUP_RECORDS = 5_000;

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

  /**
   * @param committed awaited after each transaction commits, under the write lock (no other unit
   * commits meanwhile), before its callers go on; `paid`: it journaled a paid answer (a unit
   * `alone`). `airbyte read` emits a checkpoint there (see docs/airbyte.md#checkpoints).
   */
  constructor(
    private readonly destination: Destination,
    private readonly runId: string,
    private readonly stream: string,
    private readonly writeLock: Mutex,
    private readonly committed?: UnitCommitted,
  ) {}

  /**
   * Runs `fill` inside one load unit, after creating the groups' tables: writes the groups, lets
   * `fill` add ledger and state rows, commits; any failure rolls everything back and rethrows.
   * Units run one at a time per destination; units of this writer waiting together share one
   * transaction (see the class comment), but for a unit `alone` asks to commit by itself (the
   * journal of a paid answer: the smallest COMMIT, failing for nothing else). `fill` must only
   * write through the unit it is given: it may run twice, the first time in a shared unit that
   * is rolled back.
   */
  async inUnit(
    groups: readonly ShapedRecords[],
    fill: (unit: LoadUnit) => Promise<void>,
    options: { alone?: boolean } = {},
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
        alone: options.alone === true,
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

  /** The first waiting units, within the group's bounds (always at least one; a unit `alone` by itself). */
  private takeGroup(): UnitRequest[] {
    const joins = (next: UnitRequest, records: number) => !next.alone && records + next.records <= GROUP_RECORDS;
    let records = this.waiting[0]!.records;
    let count = 1;
    if (!this.waiting[0]!.alone)
      while (count < Math.min(GROUP_UNITS, this.waiting.length) && joins(this.waiting[count]!, records))
        records += this.waiting[count++]!.records;
    const taken = this.waiting.splice(0, count);
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

  /** One transaction: each unit's rows then its `fill`, in order; resolves to each unit's counts. */
  private async runUnit(requests: readonly UnitRequest[], progress: { committing: boolean }): Promise<LoadCounts[]> {
    await this.ensure(requests.flatMap((request) => request.byTable.map((g) => g.table)));
    const writes = requests.map((request) => request.early ?? this.prepare(request.byTable));
    const unit = await this.destination.beginUnit(this.runId);
    const counts: LoadCounts[] = [];
    try {
      for (const [i, request] of requests.entries()) {
        counts.push(await this.write(unit, writes[i]!));
        await request.fill(unit);
      }
      // What the unit holds goes out first: a failure up to here commits nothing, and the units can run again alone.
      await unit.flush();
      progress.committing = true;
      await unit.commit();
    } catch (error) {
      await unit.rollback().catch(() => undefined);
      throw error;
    }
    // Still under the write lock: what the hook reads is exactly what has committed.
    await this.committed?.(requests.some((request) => request.alone));
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

/** A unit asked for through `inUnit`, waiting for its turn. */
interface UnitRequest {
  byTable: ShapedRecords[];
  /** Its writes, shaped before its turn (see `inUnit`); null to shape them in its turn. */
  early: PreparedGroup[] | null;
  fill: (unit: LoadUnit) => Promise<void>;
  /** Records its groups hold. */
  records: number;
  /** Commits in a unit of its own. */
  alone: boolean;
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

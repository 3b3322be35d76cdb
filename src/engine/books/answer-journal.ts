import type { AnswerRow, LoadUnit } from '../../destinations/destination.js';
import type { Partition } from '../../manifest/components/partitions.js';
import { sha256, stableJson } from '../../util/stable-json.js';
import { crashPoint } from '../../util/crash-point.js';
import type { LoadWriter } from '../../load/load-writer.js';
import { chargeOf, recoverPaidResponse, type Charge, type ServiceResponse } from '../service-calls.js';
import type { StreamContext } from '../stream-context.js';

/** An answer of a billed single call, as the stream gets it from {@link AnswerJournal.call}. */
export interface PaidAnswer {
  response: ServiceResponse;
  /** Its journal entry, to drop in the unit that loads it ({@link AnswerJournal.drop}); none for a free answer. */
  key?: string;
  /** When the answer arrived: an earlier run's time for an answer that run paid for. */
  receivedAt: Date;
}

/** What one call asks: its name, the partition it is for, its exact arguments, and its worst-case credits. */
export interface JournaledCall {
  name: string;
  partition: string;
  args: Record<string, unknown>;
  worst: number;
  /** What names its answer in the journal when not its exact `args` (a page's arguments without the clock). Default: `args`. */
  asks?: Record<string, unknown>;
  /** The partition's values, journaled with the answer (see `unaskedPartitions`). Default: none. */
  values?: Record<string, unknown>;
}

/**
 * The journal of billed single calls (`_seedline_answers`). A billed answer is written the moment
 * it arrives, before it is shaped, in a unit of its own (shared only with other answers waiting
 * to be journaled); the unit that loads it drops it. A later
 * run asking the same call (same name, partition and arguments) takes the journaled answer and
 * pays nothing again, so a crash between an answer and its load costs nothing. What is left
 * exposed is an answer still on the wire when the process dies.
 *
 * @example
 * ```ts
 * const journal = await AnswerJournal.open('jobs', ctx, writer, (charge) => addCharge(outcome, charge));
 * const answer = await journal.call({ name: 'searchJobs', partition, args, worst }, () => client.searchJobs(args));
 * await writer.inUnit([rows], (unit) => journal.drop(unit, [answer.key]));
 * ```
 */
export class AnswerJournal {
  private constructor(
    private readonly stream: string,
    private readonly ctx: StreamContext,
    private readonly writer: LoadWriter,
    private readonly kept: Map<string, AnswerRow>,
    private readonly count: (charge: Charge) => void,
  ) {}

  /** Opens a stream's journal with the answers earlier runs paid for and did not load; `count` adds what each call of this run cost. */
  static async open(
    stream: string,
    ctx: StreamContext,
    writer: LoadWriter,
    count: (charge: Charge) => void,
  ): Promise<AnswerJournal> {
    // A worker's item answers only for its own partitions: another item loads the rest.
    const all = await ctx.destination.readAnswers(stream);
    const answers = ctx.owns ? new Map([...all].filter(([, row]) => ctx.owns!(row.partition))) : all;
    return new AnswerJournal(stream, ctx, writer, answers, count);
  }

  /**
   * Answers `call`: from the journal when an earlier run paid for it, otherwise by `send` under a
   * reservation of its worst case (a call whose reservation does not fit is not sent). A billed
   * answer is journaled before it is returned. Credits follow `creditsOf`: a failure that may
   * have billed counts at its worst case.
   */
  async call(call: JournaledCall, send: () => Promise<ServiceResponse>): Promise<PaidAnswer> {
    const key = callKey(call);
    const kept = this.kept.get(key);
    if (kept) {
      this.kept.delete(key);
      return { response: JSON.parse(kept.answer) as ServiceResponse, key, receivedAt: kept.receivedAt };
    }
    const reservation = this.ctx.budget.reserve(call.worst);
    let charge: Charge = { billed: 0, atRisk: call.worst };
    let answered = false;
    try {
      // The place in flight is held until the answer is durable: the next billed call goes out only then.
      const inFlight = async () => {
        const response = await send().catch(recoverPaidResponse);
        answered = true;
        charge = chargeOf(call.worst, { response });
        const receivedAt = this.ctx.now();
        if (charge.billed + charge.atRisk <= 0) return { response, receivedAt };
        await this.keep({ ...call, key, response, credits: charge.billed + charge.atRisk, receivedAt });
        crashPoint('after-answer');
        return { response, key, receivedAt };
      };
      return await (this.ctx.billedCalls ? this.ctx.billedCalls(inFlight) : inFlight());
    } catch (error) {
      // An answer that came but could not be journaled keeps its charge; a failed call is judged by its error.
      if (!answered) charge = chargeOf(call.worst, { error });
      throw error;
    } finally {
      reservation.settle(charge.billed, charge.atRisk);
      this.count(charge);
    }
  }

  /** Takes the answers earlier runs paid for that no call of this run has asked for (yet), to load them as they are. */
  takeUnasked(): AnswerRow[] {
    const rows = [...this.kept.values()];
    this.kept.clear();
    return rows;
  }

  /**
   * The partitions of answers earlier runs paid for that no call of this run has asked for (yet),
   * each once, made from the values journaled with them: a run that could not make them itself (a
   * fresh store, its parent table empty) runs them to load those answers. The answers stay kept.
   */
  unaskedPartitions(): Partition[] {
    const partitions = new Map<string, Partition>();
    for (const row of this.kept.values())
      if (row.partitionValues && !partitions.has(row.partition))
        partitions.set(row.partition, {
          key: row.partition,
          values: JSON.parse(row.partitionValues) as Record<string, unknown>,
        });
    return [...partitions.values()];
  }

  /** Drops loaded answers inside the unit that loads them. */
  async drop(unit: LoadUnit, keys: readonly (string | undefined)[]): Promise<void> {
    const present = keys.filter((k): k is string => k !== undefined);
    if (present.length > 0) await unit.dropAnswers(this.stream, present);
  }

  private async keep(
    answer: JournaledCall & { key: string; response: ServiceResponse; credits: number; receivedAt: Date },
  ): Promise<void> {
    const row: AnswerRow = {
      stream: this.stream,
      callKey: answer.key,
      partition: answer.partition,
      call: answer.name,
      args: JSON.stringify(answer.args),
      answer: JSON.stringify({ data: answer.response.data, meta: answer.response.meta }),
      credits: answer.credits,
      runId: this.ctx.runId,
      receivedAt: answer.receivedAt,
      partitionValues: answer.values ? JSON.stringify(answer.values) : null,
    };
    await this.writer.inUnit([], (unit) => unit.saveAnswers([row]), { journal: true });
  }
}

/** The journal key of a call: the same request asked again, in any run, has the same key. */
export function callKey(call: Pick<JournaledCall, 'name' | 'partition' | 'args' | 'asks'>): string {
  return sha256(stableJson({ call: call.name, partition: call.partition, args: call.asks ?? call.args }));
}

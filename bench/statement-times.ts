/**
 * Time spent in each kind of statement a destination's sessions run, for the benchmarks'
 * `--statements` option: wraps `openSession` of a destination class so every session's `run`,
 * `all`, `scan` and `bulkInsert` add their wall time to a tally keyed by the statement's first
 * words (numbered staging tables folded into one), and prints the tally.
 */

type Tally = Map<string, { calls: number; ms: number }>;

/** What a session method was given: a statement (`{ sql }`) or a bulk target (`{ table }`). */
type Argument = { sql?: unknown; table?: unknown } | undefined;

/** Called as each statement ends: its kind, its wall time, and what it threw. */
export type OnStatement = (key: string, ms: number, error: unknown) => void;

/**
 * Wraps the sessions of every destination of `kind` (its prototype's `openSession`); returns the
 * tally to print. `onStatement` also sees each statement as it ends (a trace of slow or failed ones).
 */
export function timeStatements(kind: { prototype: object }, onStatement?: OnStatement): Tally {
  const tally: Tally = new Map();
  const proto = kind.prototype as { openSession: () => Promise<Record<string, unknown>> };
  const open = proto.openSession;
  proto.openSession = async function (this: unknown) {
    const session = await open.call(this);
    for (const method of ['run', 'all', 'scan', 'bulkInsert']) {
      const original = session[method] as ((...args: unknown[]) => Promise<unknown>) | undefined;
      if (!original) continue;
      session[method] = async (...args: unknown[]) => {
        const started = performance.now();
        let error: unknown;
        try {
          return await original.apply(session, args);
        } catch (thrown) {
          error = thrown;
          throw thrown;
        } finally {
          const key = statementKey(method, args[0] as Argument);
          const ms = performance.now() - started;
          const entry = tally.get(key) ?? { calls: 0, ms: 0 };
          entry.calls++;
          entry.ms += ms;
          tally.set(key, entry);
          onStatement?.(key, ms, error);
        }
      };
    }
    return session;
  };
  return tally;
}

function statementKey(method: string, argument: Argument): string {
  const text =
    method === 'bulkInsert' ? `bulk load into ${String(argument?.table)}` : `${method} ${String(argument?.sql)}`;
  return text
    .replace(/\s+/g, ' ')
    .replace(/_\d+\b/g, '_N')
    .slice(0, 90);
}

/** The tally's `top` kinds by time, one line each: total ms, calls, ms a call. */
export function formatStatementTimes(tally: Tally, top = 15): string {
  return [...tally]
    .sort((a, b) => b[1].ms - a[1].ms)
    .slice(0, top)
    .map(
      ([key, { calls, ms }]) =>
        `${ms.toFixed(0).padStart(8)} ms ${String(calls).padStart(6)}x ${(ms / calls).toFixed(2).padStart(8)} ms  ${key}`,
    )
    .join('\n');
}

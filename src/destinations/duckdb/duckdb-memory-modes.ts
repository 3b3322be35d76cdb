/**
 * DuckDB's memory settings for a file, in two steps: a lean buffer pool while a process only
 * appends rows of new keys (a first load), and the full one from the first time it works on rows
 * already stored (a merge of a key the table may hold, a settle, a replace or history write,
 * Triggers' changes, a lookup of the ledger by key or a read of a stream's whole ledger, a select
 * of the warehouse's data: seeds by SQL, `query`, parent rows, the report) until the file is closed.
 *
 * Why two: appends stream through DuckDB in little memory, and a smaller pool keeps a long first
 * load's peak flat; but deletes and updates of stored rows, and a lookup's hash join beside a
 * unit's writes, need room the lean pool does not have (a million refreshed seeds ran out of 64 MB
 * in a lookup or in a commit's checkpoint: docs/operations.md#memory-and-allocator-variables).
 */
export interface DuckDbMemoryModes {
  /** Settings the file is opened with (the caller's over the defaults, lean where the caller set no memory setting). */
  readonly opening: Readonly<Record<string, string>>;
  /** Settings set once the process works on stored rows; null when there is one mode (the caller set a memory setting). */
  readonly widened: Readonly<Record<string, string>> | null;
}

/** The memory settings of the lean step: a 64 MB pool, checkpointed every 16 MB of WAL so a checkpoint fits in it. */
export const LEAN_MEMORY: Readonly<Record<string, string>> = { memory_limit: '64MB', checkpoint_threshold: '16MB' };

/**
 * The two steps for a file opened with `given` settings over `defaults`: the caller who sets
 * `memory_limit` or `checkpoint_threshold` gets exactly what they set, throughout.
 */
export function duckDbMemoryModes(
  defaults: Readonly<Record<string, string>>,
  given: Readonly<Record<string, string>> = {},
): DuckDbMemoryModes {
  const full = { ...defaults, ...given };
  // Setting names are lower case (the config refuses others).
  const fixed = Object.keys(LEAN_MEMORY).some((name) => name in given);
  if (fixed) return { opening: full, widened: null };
  const widened = Object.fromEntries(Object.keys(LEAN_MEMORY).map((name) => [name, full[name]!]));
  return { opening: { ...full, ...LEAN_MEMORY }, widened };
}

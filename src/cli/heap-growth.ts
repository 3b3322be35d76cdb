import { setFlagsFromString } from 'node:v8';

/**
 * How far V8 lets the old space grow past what a full GC left alive, in percent. V8's own factor
 * reaches 300% (4x) on a machine whose heap limit is 2 GB or more: a sync holds ~30-40 MB live
 * (a unit's records and its shaped rows), but promoted garbage of finished units piled up to
 * 150-230 MB before each full GC. At 100%, bench/load.ts at N=100k measured peak RSS 486 → 421 MB
 * (DuckDB) and 260 → 199 MB (Postgres) for a few percent more CPU in GC and no change in records/s
 * beyond run-to-run noise. At 50% (2026-11-28, with the start settings of src/cli/process-start.ts):
 * a DuckDB sync of 20k seeds peaked at 310-324 against 328-356 MB and 100k at 351 against 380 MB,
 * CPU within the runs' noise; a heap snapshot at the peak holds ~40 MB live of 110-130 MB used.
 * At 20% (2026-11-29, DuckDB's lean pool): a long sync's peak is where a checkpoint meets the
 * highest swing of the heap, and the swing shrank (`heapTotal` 66-82 against 74-91 MB at the
 * largest reading of each 30 s of a 300k-seed sync, whose peak fell from 277 to 261 MB); a million
 * seeds peaked at 276 against 283 MB and 20k at 243.5 against 258 (medians of six), for 10-14%
 * more CPU on the batch path and 3% on the paged one (bench/README.md).
 */
export const HEAP_GROWING_PERCENT = 20;

/**
 * Caps V8's old-space growth factor for this process (see `HEAP_GROWING_PERCENT`) unless the
 * command line already sets `--heap-growing-percent`. V8 reads the flag at every full GC, so
 * setting it at startup is enough; it is not a heap limit and cannot cause an out-of-memory error.
 * Called by the CLI entry point and by the load benchmark, so the benchmark measures what a
 * `seedline` process gets.
 */
export function limitHeapGrowth(): void {
  if (process.execArgv.some((arg) => arg.startsWith('--heap-growing-percent'))) return;
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}

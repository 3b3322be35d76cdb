/**
 * Environment variable libduckdb's bundled jemalloc reads its options from (jemalloc's
 * `MALLOC_CONF` under DuckDB's `duckdb_je_` symbol prefix). jemalloc reads it once, when
 * libduckdb is loaded: setting it later changes nothing.
 */
export const DUCKDB_ALLOCATOR_ENV = 'DUCKDB_JE_MALLOC_CONF';

/**
 * Freed pages go back to the system at once instead of after DuckDB's one-second decay. With no
 * background purge thread, jemalloc only purges while the arena is busy, and a sync's checkpoints
 * free faster than that: at 300k seeds the resident set held 40-100 MB of freed pages, and the
 * peak RSS of the sync was 585 MB with DuckDB's decay against 480 MB with none (bench/README.md).
 * DuckDB's own `allocator_background_threads` and flush thresholds moved it by nothing, nor did a
 * 50 ms decay. The price is page faults on reuse: a pure DuckDB load of 200k records (bench/load.ts)
 * takes ~15-18% longer; a sync, which waits on the service, was no slower. A user who prefers the
 * speed sets `DUCKDB_JE_MALLOC_CONF=dirty_decay_ms:1000,muzzy_decay_ms:1000`.
 */
export const DUCKDB_ALLOCATOR_OPTIONS = 'dirty_decay_ms:0,muzzy_decay_ms:0';

/**
 * Sets `DUCKDB_ALLOCATOR_ENV` to `DUCKDB_ALLOCATOR_OPTIONS` in `env` unless the user set it.
 * Call it before anything imports `@duckdb/node-api` (the `seedline` entry point does), or pass
 * the result to a child process's environment.
 */
export function returnFreedDuckDbMemory(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  env[DUCKDB_ALLOCATOR_ENV] ??= DUCKDB_ALLOCATOR_OPTIONS;
  return env;
}

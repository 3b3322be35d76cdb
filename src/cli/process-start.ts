/**
 * What the `seedline` command starts its node process with: settings that node and glibc read only
 * when the process starts, so the entry point cannot set them itself. Its shebang line carries
 * them (`#!/usr/bin/env -S …`): `env` sets the variables and replaces itself with node, so the
 * command stays one process (a kill -9 of its pid still stops what holds the warehouse). Running
 * `node dist/src/cli/main.js` directly skips them; `seedlineShebang()` is what main.ts must start with.
 *
 * Measured with bench/seeds-memory.ts and bench/airbyte-read-memory.ts (see
 * docs/operations.md#memory-and-allocator-variables): together with `HEAP_GROWING_PERCENT` they take
 * 55-65 MB off a DuckDB sync's peak at 20k and 100k seeds for no CPU measurable beyond the noise.
 */

/**
 * `--max-semi-space-size=4` (MB): V8's young generation stops growing at 2 × 4 MB instead of
 * 2 × 16. A sync allocates each results page and drops it a few awaits later, so a large young
 * generation holds up to ~30 MB of garbage at any time; scavenges of a small one cost no more.
 */
export const SEEDLINE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4'];

/**
 * `MALLOC_ARENA_MAX=2`: glibc gives each thread that allocates under contention an arena of its
 * own (up to 8 per core), and DuckDB's worker threads each keep theirs; two arenas took 14-33 MB
 * off a DuckDB sync's peak.
 *
 * `MALLOC_MMAP_THRESHOLD_=131072`: blocks of 128 KB and more are mapped on their own and unmapped
 * when freed. glibc otherwise raises that threshold each time such a block is freed (up to 32 MB),
 * so results pages and DuckDB's larger vectors end up in the arenas, and what they free stays
 * there as free chunks: 15 MB more of them at a million seeds than at 20k. A fixed threshold took
 * 6-13 MB off a DuckDB sync's peak at 300k seeds and 12 MB at a million (bench/README.md).
 *
 * They replace values the user set; to choose others, start `node dist/src/cli/main.js` with them.
 */
export const SEEDLINE_START_ENV: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '131072',
};

/** The shebang line of the `seedline` entry point: `env -S` with the variables, then node with its flags. */
export function seedlineShebang(): string {
  const assignments = Object.entries(SEEDLINE_START_ENV).map(([name, value]) => `${name}=${value}`);
  return `#!/usr/bin/env -S ${[...assignments, 'node', ...SEEDLINE_NODE_FLAGS].join(' ')}`;
}

/**
 * The suite's time limits: a safety net that ends a hung test, never a margin a test relies on.
 * Every wait in a test is for an event (a line printed, a row loaded, a ledger count); these only
 * bound how long such a wait may take before the test is called hung.
 *
 * `SEEDLINE_TEST_TIME_FACTOR` (default 1) multiplies every one of them, for a machine slower or
 * busier than a loaded 2-core one: `SEEDLINE_TEST_TIME_FACTOR=3 npm test`.
 */
export const TIME_FACTOR = timeFactorFromEnv(process.env.SEEDLINE_TEST_TIME_FACTOR);

/** `ms` scaled by {@link TIME_FACTOR}. */
export function timeLimit(ms: number): number {
  return Math.round(ms * TIME_FACTOR);
}

/** Per-test limits of each project, before scaling: a test that takes longer is hung. */
export const TEST_TIME_LIMITS = {
  /** Pure logic: no network, no database. */
  unit: 60_000,
  /** Real HTTP to a sandbox, real DuckDB files, a real Postgres. */
  integration: 180_000,
  /** CLI processes, often a dozen in a row, each several times slower under load. */
  e2e: 300_000,
} as const;

function timeFactorFromEnv(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 1;
  const factor = Number(raw);
  if (!Number.isFinite(factor) || factor <= 0) {
    throw new Error(`SEEDLINE_TEST_TIME_FACTOR must be a positive number (e.g. 2), not "${raw}"`);
  }
  return factor;
}

import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DestinationConfig } from '../../src/destinations/destination.js';
import { startSandbox, type LedgerEntry, type Sandbox } from '../../src/sandbox/index.js';
import { runCli, spawnCli, tempWorkspace, writeConfig } from './cli.js';
import {
  billedCredits,
  billedEntries,
  crashSeedFromEnv,
  diffSnapshots,
  extraBilling,
  harnessConfig,
  harnessSandboxOptions,
  killAtBilledEntry,
  type HarnessMode,
  readTables,
  seededRandom,
  type TableSnapshot,
} from './crash-harness.js';
import { dropPostgresSchema } from './postgres.js';
import { e2eBackends } from './destinations.js';
import type { DestinationKind } from '../../src/destinations/destination.js';

/**
 * What one trial (crash run + rerun) may bill beyond an uninterrupted run is the crash exposure
 * `seedline plan` prints: answers of at most `api.max_billed_in_flight` billed single calls still
 * on the wire (every answer that arrived is journaled; batch items carry Idempotency-Keys).
 */
async function crashExposure(configPath: string): Promise<number> {
  const plan = await runCli(['plan', '--config', configPath, '--json']);
  expect(plan.code, plan.stderr).toBe(0);
  return (JSON.parse(plan.stdout) as { crash_exposure: { credits: number } }).crash_exposure.credits;
}

/**
 * Trials per backend and mode (`SEEDLINE_CRASH_TRIALS` scales them): batch mode, where nothing may
 * be billed twice, 6 per backend; calls mode, bounded by one answer on the wire, 3 per backend.
 * 18 in all by default: the DuckDB trials alone were 65 of the suite's ~450 CPU seconds at 24, so
 * more run on demand (`SEEDLINE_CRASH_TRIALS=20`, or another `SEEDLINE_CRASH_SEED` for other kill points).
 */
const TRIALS: Record<HarnessMode, number> = {
  batch: Number(process.env.SEEDLINE_CRASH_TRIALS ?? 6),
  calls: Math.ceil(Number(process.env.SEEDLINE_CRASH_TRIALS ?? 6) / 2),
};

/** Everything here follows from this seed: fixtures, and the billed entry each trial is killed at. */
const SEED = crashSeedFromEnv();

type Backend = (typeof e2eBackends)[number];
const backends = e2eBackends;

interface Reference {
  entries: LedgerEntry[];
  credits: number;
  snapshot: TableSnapshot;
  /** Credits a trial may bill beyond the reference: the crash exposure `seedline plan` printed for the config. */
  allowed: number;
}

interface TrialResult {
  trial: number;
  k: number;
  extra: number;
  allowed: number;
}

/** One fresh sandbox, workspace and destination; cleans them up after `body`. */
async function withRun<T>(
  backend: Backend,
  mode: HarnessMode,
  id: string,
  body: (ctx: { sandbox: Sandbox; dest: DestinationConfig; configPath: string }) => Promise<T>,
): Promise<T | null> {
  const dir = await tempWorkspace();
  const sandbox = await startSandbox(harnessSandboxOptions(SEED));
  let dest: DestinationConfig | null = null;
  try {
    dest = (await backend.make(dir, `crash_${id}`)) ?? null;
    if (!dest) return null;
    const configPath = await writeConfig(dir, harnessConfig(sandbox.url, dest, mode));
    return await body({ sandbox, dest, configPath });
  } finally {
    await sandbox.close();
    if (dest?.type === 'postgres') await dropPostgresSchema(dest.schema!);
    await rm(dir, { recursive: true, force: true });
  }
}

/** What a trial kills and reruns: `seedline sync`, or a `seedline worker` (its item taken over once its lease runs out). */
export interface CrashRunner {
  /** In test names: `sync`, `worker`. */
  name: string;
  args(configPath: string): string[];
  /** Share of the default trials it runs. */
  trials: number;
}

export const SYNC: CrashRunner = { name: 'sync', args: (config) => ['sync', '--config', config], trials: 1 };

/**
 * A worker on its own: the rerun worker finds the dead one's item leased, waits out its lease and
 * takes it over. A third of the default trials (2 batch, 1 calls): each waits out a lease, and the
 * suite keeps to its time (`SEEDLINE_CRASH_TRIALS=18` runs 6 and 3). Its reference is the same
 * uninterrupted sync as the sync trials' (the same config), so both share one reference run.
 */
export const WORKER: CrashRunner = {
  name: 'worker',
  args: (config) => ['worker', '--config', config, '--until-idle', '--lease', '2s', '--shards', '3'],
  trials: 1 / 3,
};

const output = (r: { stdout: string; stderr: string }) => `--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;

const runs = (['batch', 'calls'] as const).flatMap((mode) =>
  backends.map((backend, index) => ({ mode, backend, index: index + (mode === 'calls' ? backends.length : 0) })),
);

/**
 * The crash harness on one backend (one test file each, so two workers share the trials):
 * batch and calls modes, each trial killed at a seeded billed entry, then rerun. Each mode's one
 * uninterrupted reference run serves the trials of every runner (`sync`, and on Postgres `worker`):
 * their configs are the same. A trial's kill point depends on the seed, its backend and mode only
 * (a runner's trial n is killed where the sync's trial n is), whichever file runs it.
 */
export function describeCrashHarness(backendName: DestinationKind, runners: readonly CrashRunner[] = [SYNC]): void {
  describe.sequential(
    `crash harness on ${backendName}: kill -9 at seeded billed entries, then rerun (SEEDLINE_CRASH_SEED=${SEED})`,
    () => {
      runs
        .filter((run) => run.backend.name === backendName)
        .forEach(({ mode, backend, index: backendIndex }) => {
          describe.sequential(`${backend.name}, pages via ${mode}`, () => {
            let reference: Reference | null = null;
            const results = new Map<CrashRunner, TrialResult[]>(runners.map((runner) => [runner, []]));

            beforeAll(async () => {
              reference = await withRun(
                backend,
                mode,
                `${backend.name}_${mode}_ref`,
                async ({ sandbox, dest, configPath }) => {
                  // Every trial's config is this one but for the destination's file or schema, each empty when planned: one plan serves them all.
                  const allowed = await crashExposure(configPath);
                  const run = await runCli(['sync', '--config', configPath]);
                  expect(run.code, `seed ${SEED}, ${backend.name} reference run failed\n${output(run)}`).toBe(0);
                  await sandbox.idle();
                  const entries = billedEntries(sandbox);
                  const { snapshot, duplicateKeys } = await readTables(dest);
                  expect(duplicateKeys, `seed ${SEED}, ${backend.name} reference`).toEqual([]);
                  expect(entries.length, `seed ${SEED}, ${backend.name} reference billed nothing`).toBeGreaterThan(0);
                  return { entries, credits: billedCredits(entries), snapshot, allowed };
                },
              );
            });

            afterAll(() => {
              if (!reference) return;
              for (const [runner, done] of results) {
                const total = done.reduce((sum, r) => sum + r.extra, 0);
                const max = done.reduce((m, r) => Math.max(m, r.extra), 0);
                const perTrial = done.map((r) => `#${r.trial}@${r.k}:${r.extra}`).join(' ');
                console.log(
                  `[crash-harness] seed ${SEED} ${backend.name} via ${mode}, ${runner.name}: ${done.length} trials, credits billed twice: total ${total}, max ${max} per trial ` +
                    `(reference ${reference.credits} credits in ${reference.entries.length} billed entries; allowed per trial: plan's crash exposure, ${done[0]?.allowed ?? '?'} credits) [trial@kill-entry:extra ${perTrial}]`,
                );
              }
            });

            for (const runner of runners) {
              // Drawn when the file is collected, so a trial filtered with -t gets the same kill point.
              const random = seededRandom(SEED ^ Math.imul(backendIndex + 1, 0x9e3779b1));
              const draws = Array.from({ length: Math.ceil(TRIALS[mode] * runner.trials) }, () => random());
              draws.forEach((draw, index) => {
                const trial = index + 1;
                it(`trial ${trial}: given a ${runner.name} killed at a seeded billed entry, when rerun, then the tables equal an uninterrupted sync, no key repeats, and nothing is billed twice`, async ({
                  skip,
                }) => {
                  if (!reference) return skip(`${backend.name} unavailable`);
                  const ref = reference;
                  const k = 1 + Math.floor(draw * ref.entries.length);
                  const ran = await withRun(
                    backend,
                    mode,
                    `${backend.name}_${mode}_${runner.name}_${trial}`,
                    async ({ sandbox, dest, configPath }) => {
                      const allowed = ref.allowed;
                      const kill = killAtBilledEntry(sandbox, k);
                      const crashed = spawnCli(runner.args(configPath));
                      kill.attach(crashed.child);
                      await crashed.exited;
                      kill.disarm();
                      const fired = kill.fired;
                      const where =
                        `seed ${SEED}, ${backend.name} ${runner.name} trial ${trial}: kill -9 at billed entry ${k} of ${ref.entries.length}` +
                        (fired
                          ? ` (${fired.entry.operation}${fired.entry.jobId ? ' batch item' : ''} ${fired.entry.target})`
                          : ' (not reached: the run ended first)');
                      // The crash run bills what the reference billed, so it always reaches entry k: a run that ends on its own tested nothing.
                      expect
                        .soft(
                          crashed.child.signalCode,
                          `${where}: the crash run was not killed (exit ${crashed.child.exitCode})\n${crashed.stderr}`,
                        )
                        .toBe('SIGKILL');

                      const rerun = await runCli(runner.args(configPath));
                      expect(rerun.code, `${where}: the rerun did not finish\n${output(rerun)}`).toBe(0);
                      await sandbox.idle();

                      const extra = extraBilling(ref.entries, billedEntries(sandbox));
                      results.get(runner)!.push({ trial, k, extra: extra.credits, allowed });
                      const { snapshot, duplicateKeys } = await readTables(dest);
                      expect.soft(duplicateKeys, `${where}: keys loaded more than once`).toEqual([]);
                      expect
                        .soft(
                          diffSnapshots(ref.snapshot, snapshot),
                          `${where}: tables differ from the uninterrupted run`,
                        )
                        .toEqual([]);
                      expect
                        .soft(
                          extra.credits,
                          `${where}: ${extra.credits} credits billed beyond the uninterrupted run's ${ref.credits} ` +
                            `(by operation ${JSON.stringify(extra.byOperation)}; charged again: ${extra.targets.join('; ') || 'none'})`,
                        )
                        .toBeLessThanOrEqual(allowed);
                      return true;
                    },
                  );
                  if (ran === null) return skip(`${backend.name} unavailable`);
                });
              });
            }
          });
        });
    },
  );
}
